"""CheckpointFailureManager: Flink's counting of consecutive checkpoint failures."""

from __future__ import annotations

import pytest

from fluvial.checkpoint.failure_manager import (
    UNLIMITED_TOLERABLE_FAILURES,
    CheckpointFailureManager,
    CheckpointFailuresExceededError,
    FailureVerdict,
)
from fluvial.checkpoint.failure_reason import CheckpointFailureReason as Reason
from fluvial.common.errors import FluvialError


def test_zero_tolerance_fails_the_job_on_the_first_counted_failure():
    manager = CheckpointFailureManager(0)
    cause = TimeoutError("slow sink")
    assert manager.handle_failure(Reason.TIMEOUT, 1, cause=cause) is FailureVerdict.FAIL_JOB
    error = manager.job_failure
    assert isinstance(error, CheckpointFailuresExceededError) and isinstance(error, FluvialError)
    assert "checkpoint 1" in str(error) and "TIMEOUT" in str(error)
    assert "set_tolerable_checkpoint_failure_number" in str(error)
    assert error.__cause__ is cause


def test_failures_within_tolerance_are_tolerated_then_the_job_fails():
    manager = CheckpointFailureManager(2)
    assert manager.handle_failure(Reason.DECLINED, 1) is FailureVerdict.TOLERATED
    assert manager.handle_failure(Reason.IO_ERROR, 2) is FailureVerdict.TOLERATED
    assert manager.consecutive_failures == 2 and manager.job_failure is None
    assert manager.handle_failure(Reason.TIMEOUT, 3) is FailureVerdict.FAIL_JOB
    assert "3 consecutive checkpoints failed and 2 are tolerated" in str(manager.job_failure)
    assert manager.consecutive_failures == 0  # the count starts over after failing the job


def test_a_success_resets_the_count():
    manager = CheckpointFailureManager(2)
    manager.handle_failure(Reason.TIMEOUT, 1)
    manager.handle_failure(Reason.TIMEOUT, 2)
    manager.handle_success(3)
    assert manager.consecutive_failures == 0
    assert manager.handle_failure(Reason.TIMEOUT, 4) is FailureVerdict.TOLERATED
    assert manager.handle_failure(Reason.TIMEOUT, 5) is FailureVerdict.TOLERATED
    assert manager.handle_failure(Reason.TIMEOUT, 6) is FailureVerdict.FAIL_JOB


def test_a_checkpoint_counts_once_however_many_tasks_report_it():
    manager = CheckpointFailureManager(1)
    assert manager.handle_failure(Reason.DECLINED, 1, from_task=True) is FailureVerdict.TOLERATED
    assert manager.handle_failure(Reason.DECLINED, 1, from_task=True) is FailureVerdict.IGNORED
    assert manager.consecutive_failures == 1


def test_failures_without_an_id_count_every_time():
    manager = CheckpointFailureManager(1)
    assert manager.handle_failure(Reason.IO_ERROR) is FailureVerdict.TOLERATED
    assert manager.handle_failure(Reason.IO_ERROR) is FailureVerdict.FAIL_JOB
    assert "a checkpoint" in str(manager.job_failure)


@pytest.mark.parametrize("reason", [r for r in Reason if not r.counts], ids=lambda r: r.name)
def test_reasons_that_do_not_count_are_ignored(reason):
    manager = CheckpointFailureManager(0)
    assert manager.handle_failure(reason, 1) is FailureVerdict.IGNORED
    assert manager.consecutive_failures == 0 and manager.job_failure is None


def test_a_failure_older_than_the_last_success_is_ignored():
    manager = CheckpointFailureManager(0)
    manager.handle_success(5)
    assert manager.handle_failure(Reason.TIMEOUT, 4) is FailureVerdict.IGNORED
    assert manager.handle_failure(Reason.TIMEOUT, 5) is FailureVerdict.IGNORED
    assert manager.handle_failure(Reason.TIMEOUT, 6) is FailureVerdict.FAIL_JOB


def test_an_older_success_does_not_reset_the_count():
    manager = CheckpointFailureManager(5)
    manager.handle_success(10)
    manager.handle_failure(Reason.TIMEOUT, 11)
    manager.handle_success(9)
    assert manager.consecutive_failures == 1


def test_unlimited_tolerance_never_fails():
    manager = CheckpointFailureManager(UNLIMITED_TOLERABLE_FAILURES)
    verdicts = {manager.handle_failure(Reason.TIMEOUT, i) for i in range(1, 50)}
    assert verdicts == {FailureVerdict.IGNORED}


def test_savepoint_failures_outside_tasks_are_ignored():
    manager = CheckpointFailureManager(0)
    assert manager.handle_failure(Reason.TIMEOUT, 1, is_savepoint=True) is FailureVerdict.IGNORED
    assert manager.handle_failure(Reason.TOO_MANY_CONCURRENT, 2, from_task=True, is_savepoint=True) is (
        FailureVerdict.IGNORED
    )


def test_a_task_failure_of_a_synchronous_savepoint_always_fails_the_job():
    manager = CheckpointFailureManager(10)
    verdict = manager.handle_failure(Reason.DECLINED, 1, from_task=True, is_savepoint=True, synchronous_savepoint=True)
    assert verdict is FailureVerdict.FAIL_JOB
    assert "stop-with-savepoint" in str(manager.job_failure)


def test_a_task_failure_of_a_plain_savepoint_counts():
    manager = CheckpointFailureManager(0)
    assert manager.handle_failure(Reason.DECLINED, 1, from_task=True, is_savepoint=True) is FailureVerdict.FAIL_JOB


@pytest.mark.parametrize("bad", [-1, 1.5, None, True])
def test_tolerance_must_be_a_non_negative_integer(bad):
    with pytest.raises(ValueError, match="set_tolerable_checkpoint_failure_number"):
        CheckpointFailureManager(bad)  # type: ignore[arg-type]
