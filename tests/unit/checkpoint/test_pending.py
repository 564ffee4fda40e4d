"""PendingCheckpoint: acknowledgements answered with AckResult, and its state machine."""

from __future__ import annotations

import pickle

import pytest

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.pending import (
    AckResult,
    IllegalCheckpointStateError,
    PendingCheckpoint,
    PendingCheckpointState,
)
from fluvial.checkpoint.storage import SubtaskState, create_checkpoint_storage
from fluvial.checkpoint.store import CompletedCheckpoint
from fluvial.datastream.checkpoint_storage import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)

SOURCE, MAP = 1, 2
TASKS = {(SOURCE, 0), (MAP, 0), (MAP, 1)}


@pytest.fixture
def storage():
    return create_checkpoint_storage(JobManagerCheckpointStorage(), "job-p")


def pending(**kwargs) -> PendingCheckpoint:
    return PendingCheckpoint(7, 1234, set(TASKS), job_id="job-p", **kwargs)


def ack_all(checkpoint: PendingCheckpoint) -> None:
    for vertex, subtask in sorted(TASKS):
        checkpoint.acknowledge((vertex, subtask), {f"op-{vertex}": SubtaskState(raw={"subtask": subtask})})


def test_first_ack_of_a_task_succeeds():
    checkpoint = pending()
    assert checkpoint.acknowledge((MAP, 1), {"op-2": SubtaskState()}) is AckResult.SUCCESS
    assert checkpoint.not_yet_acknowledged == {(SOURCE, 0), (MAP, 0)}


def test_a_second_ack_of_the_same_task_is_a_duplicate():
    checkpoint = pending()
    checkpoint.acknowledge((MAP, 1), {"op-2": SubtaskState(raw={"first": True})})
    assert checkpoint.acknowledge((MAP, 1), {"op-2": SubtaskState(raw={"first": False})}) is AckResult.DUPLICATE
    assert checkpoint.operator_states["op-2"].subtask_states[1].raw == {"first": True}


def test_an_ack_from_a_task_outside_the_checkpoint_is_unknown():
    checkpoint = pending()
    assert checkpoint.acknowledge((MAP, 2), {}) is AckResult.UNKNOWN
    assert checkpoint.acknowledge((99, 0), {}) is AckResult.UNKNOWN
    assert len(checkpoint.not_yet_acknowledged) == 3


def test_an_ack_after_abort_is_discarded():
    checkpoint = pending()
    checkpoint.abort(CheckpointFailureReason.TIMEOUT)
    assert checkpoint.acknowledge((SOURCE, 0), {"op-1": SubtaskState()}) is AckResult.DISCARDED
    assert checkpoint.operator_states == {}


def test_fully_acknowledged_only_after_every_task():
    checkpoint = pending()
    for task in sorted(TASKS)[:-1]:
        checkpoint.acknowledge(task)
        assert not checkpoint.is_fully_acknowledged
    checkpoint.acknowledge(sorted(TASKS)[-1])
    assert checkpoint.is_fully_acknowledged


def test_finalize_writes_metadata_with_operator_parallelism(storage):
    checkpoint = pending(max_parallelism={MAP: 64}, is_savepoint=False)
    ack_all(checkpoint)
    completed = checkpoint.finalize(storage)
    assert isinstance(completed, CompletedCheckpoint)
    assert checkpoint.state is PendingCheckpointState.COMPLETED
    assert (completed.checkpoint_id, completed.timestamp, completed.is_savepoint) == (7, 1234, False)
    metadata = storage.read_metadata(completed.metadata_location)
    assert metadata == completed.metadata and metadata.job_id == "job-p"
    source, mapper = metadata.operator_states["op-1"], metadata.operator_states["op-2"]
    assert (source.parallelism, source.max_parallelism) == (1, 128)
    assert (mapper.parallelism, mapper.max_parallelism) == (2, 64)
    assert {i: s.raw for i, s in mapper.subtask_states.items()} == {0: {"subtask": 0}, 1: {"subtask": 1}}


def test_a_savepoint_stays_a_savepoint(tmp_path):
    storage = create_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path)), "job-p")
    checkpoint = PendingCheckpoint(3, 1, {(1, 0)}, is_savepoint=True, job_id="job-p")
    checkpoint.acknowledge((1, 0))
    completed = checkpoint.finalize(storage)
    assert completed.is_savepoint and storage.read_metadata(completed.metadata_location).is_savepoint


def test_finalize_before_every_ack_is_refused(storage):
    checkpoint = pending()
    checkpoint.acknowledge((SOURCE, 0))
    with pytest.raises(IllegalCheckpointStateError, match="2 of 3 tasks have not acknowledged"):
        checkpoint.finalize(storage)
    assert checkpoint.state is PendingCheckpointState.PENDING


def test_finalize_twice_names_the_completed_state(storage):
    checkpoint = pending()
    ack_all(checkpoint)
    checkpoint.finalize(storage)
    with pytest.raises(IllegalCheckpointStateError, match="checkpoint 7 is completed"):
        checkpoint.finalize(storage)


def test_abort_after_completion_names_the_state(storage):
    checkpoint = pending()
    ack_all(checkpoint)
    checkpoint.finalize(storage)
    with pytest.raises(IllegalCheckpointStateError, match="cannot abort it .TIMEOUT.: checkpoint 7 is completed"):
        checkpoint.abort(CheckpointFailureReason.TIMEOUT)


def test_finalize_after_abort_names_the_state_and_reason(storage):
    checkpoint = pending()
    ack_all(checkpoint)
    checkpoint.abort(CheckpointFailureReason.DECLINED)
    with pytest.raises(IllegalCheckpointStateError, match="checkpoint 7 is aborted .DECLINED."):
        checkpoint.finalize(storage)


def test_a_second_abort_keeps_the_first_reason():
    checkpoint = pending()
    cause = RuntimeError("task 3 declined")
    checkpoint.abort(CheckpointFailureReason.DECLINED, cause)
    checkpoint.abort(CheckpointFailureReason.TIMEOUT)
    assert checkpoint.state is PendingCheckpointState.ABORTED
    assert checkpoint.failure_reason is CheckpointFailureReason.DECLINED
    assert checkpoint.failure_cause is cause


def test_a_failed_metadata_write_aborts_with_finalize_failure():
    class FailingStorage:
        def write_metadata(self, checkpoint_id, metadata):
            raise OSError("disk full")

    checkpoint = pending()
    ack_all(checkpoint)
    with pytest.raises(OSError, match="disk full"):
        checkpoint.finalize(FailingStorage())  # type: ignore[arg-type]
    assert checkpoint.state is PendingCheckpointState.ABORTED
    assert checkpoint.failure_reason is CheckpointFailureReason.FINALIZE_FAILURE
    assert isinstance(checkpoint.failure_cause, OSError)


def test_a_checkpoint_needs_tasks():
    with pytest.raises(ValueError, match="at least one task"):
        PendingCheckpoint(1, 0, set())


def test_failure_reasons_say_whether_they_count():
    assert CheckpointFailureReason.TIMEOUT.counts and CheckpointFailureReason.DECLINED.counts
    assert CheckpointFailureReason.IO_ERROR.counts
    assert not CheckpointFailureReason.TASK_FAILURE.counts and not CheckpointFailureReason.JOB_FAILOVER.counts
    assert CheckpointFailureReason.TOO_MANY_CONCURRENT.pre_flight
    assert not CheckpointFailureReason.TIMEOUT.pre_flight
    assert len({reason.message for reason in CheckpointFailureReason}) == len(CheckpointFailureReason)


def test_a_failure_reason_reads_as_words_and_pickles():
    reason = CheckpointFailureReason.TIMEOUT
    assert reason.value == reason.message == "the checkpoint expired before every task acknowledged it"
    assert pickle.loads(pickle.dumps(reason)) is reason
