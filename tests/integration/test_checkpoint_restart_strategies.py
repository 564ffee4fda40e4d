"""Restart strategies on real jobs: how many failures a job survives, what it fails with when it gives up
(JobExecutionException whose cause is the user's own exception from the last attempt), the delay between
attempts, and the same strategies named by Flink's `restart-strategy.*` configuration keys. The strategy is the
JobMaster's, in this process whatever the mode; restarting with TaskManager processes is checked in both modes."""

from __future__ import annotations

import time

import pytest

from fluvial.common import Configuration
from fluvial.common.errors import JobExecutionException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import MapFunction
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import ExecutionMode, environment


class UserError(Exception):
    """The user's own exception type, so a test can tell it from anything the engine raises."""


class FailTimes(MapFunction):
    """Raises UserError('failure <k>') at record 50 of each of the first `times` attempts. The attempt count
    lives in a file: every attempt gets a fresh copy of this function."""

    def __init__(self, counter: str, times: int) -> None:
        self.counter = counter
        self.times = times

    def map(self, value):
        if value == 50:
            with open(self.counter, "a+") as handle:
                handle.seek(0)
                failures = len(handle.read())
                if failures < self.times:
                    handle.write("x")
                    raise UserError(f"failure {failures + 1}")
        return value


def attempts_failed(counter) -> int:
    return len(counter.read_text()) if counter.exists() else 0


def run(
    tmp_path,
    times: int,
    *,
    strategy=None,
    configuration: Configuration | None = None,
    checkpointing: bool = False,
    mode: ExecutionMode | None = None,
    parallelism: int = 1,
):
    """`mode` None: the default (auto)."""
    counter = tmp_path / "failures"
    env = environment(mode, configuration)
    env.set_parallelism(parallelism)
    if checkpointing:
        env.enable_checkpointing(50)
    if strategy is not None:
        env.set_restart_strategy(strategy)
    env.from_source(NumberSequenceSource(1, 200)).map(FailTimes(str(counter), times)).add_sink(lambda v: None)
    started = time.monotonic()
    try:
        env.execute("restart strategy job")
        error = None
    except JobExecutionException as raised:
        error = raised
    return error, attempts_failed(counter), time.monotonic() - started


def assert_failed_with_user_error(error, failure_number: int) -> None:
    assert isinstance(error, JobExecutionException), "the job should have failed"
    assert isinstance(error.__cause__, UserError), f"cause is {error.__cause__!r}, not the user's error"
    assert str(error.__cause__) == f"failure {failure_number}"
    assert "UserError" in str(error) and "Map" in str(error)


@pytest.mark.timeout(60)
def test_fixed_delay_with_one_attempt_gives_up_on_the_second_failure(tmp_path, mode):
    error, failures, _ = run(
        tmp_path, 2, strategy=RestartStrategies.fixed_delay_restart(1, 10), mode=mode, parallelism=2
    )
    assert failures == 2  # restarted once, then the second failure was final
    assert_failed_with_user_error(error, 2)


@pytest.mark.timeout(60)
def test_fixed_delay_with_enough_attempts_finishes_and_waits_between_attempts(tmp_path, mode):
    error, failures, elapsed = run(
        tmp_path, 2, strategy=RestartStrategies.fixed_delay_restart(2, 250), mode=mode, parallelism=2
    )
    assert error is None
    assert failures == 2
    assert elapsed >= 0.5  # two restarts, each after a 250 ms delay


@pytest.mark.timeout(60)
def test_no_restart_fails_at_the_first_failure(tmp_path):
    error, failures, _ = run(tmp_path, 5, strategy=RestartStrategies.no_restart(), checkpointing=True)
    assert failures == 1
    assert_failed_with_user_error(error, 1)


@pytest.mark.timeout(60)
def test_without_checkpointing_the_default_is_no_restart(tmp_path):
    error, failures, _ = run(tmp_path, 5)
    assert failures == 1
    assert_failed_with_user_error(error, 1)


@pytest.mark.timeout(60)
def test_with_checkpointing_the_default_restarts(tmp_path):
    """Flink 1.x's default with checkpointing on: fixed delay, (practically) unlimited attempts, 1 s apart."""
    error, failures, elapsed = run(tmp_path, 1, checkpointing=True)
    assert error is None
    assert failures == 1
    assert elapsed >= 1.0


@pytest.mark.timeout(60)
def test_failure_rate_gives_up_when_too_many_failures_fall_in_the_interval(tmp_path):
    strategy = RestartStrategies.failure_rate_restart(2, 60_000, 10)
    error, failures, _ = run(tmp_path, 5, strategy=strategy)
    assert failures == 3  # two failures per minute tolerated; the third fails the job
    assert_failed_with_user_error(error, 3)


@pytest.mark.timeout(60)
def test_failure_rate_tolerates_failures_spread_beyond_the_interval(tmp_path):
    """One failure per 100 ms is allowed; the 300 ms restart delay spaces failures further apart than that, so
    a fixed count of 1 would have failed this job but the rate never exceeds its limit."""
    strategy = RestartStrategies.failure_rate_restart(1, 100, 300)
    error, failures, _ = run(tmp_path, 3, strategy=strategy)
    assert error is None
    assert failures == 3


def restart_configuration(**keys: str) -> Configuration:
    configuration = Configuration()
    for key, value in keys.items():
        configuration.set_string(key, value)
    return configuration


@pytest.mark.timeout(60)
@pytest.mark.parametrize("attempts, finishes", [("1", False), ("2", True)])
def test_fixed_delay_from_configuration_keys(tmp_path, attempts, finishes):
    configuration = restart_configuration(
        **{
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": attempts,
            "restart-strategy.fixed-delay.delay": "10 ms",
        }
    )
    error, failures, _ = run(tmp_path, 2, configuration=configuration)
    assert failures == 2
    if finishes:
        assert error is None
    else:
        assert_failed_with_user_error(error, 2)


@pytest.mark.timeout(60)
def test_none_from_configuration_overrides_the_checkpointing_default(tmp_path):
    configuration = restart_configuration(**{"restart-strategy.type": "none"})
    error, failures, _ = run(tmp_path, 3, configuration=configuration, checkpointing=True)
    assert failures == 1
    assert_failed_with_user_error(error, 1)


@pytest.mark.timeout(60)
def test_failure_rate_from_configuration_keys(tmp_path):
    configuration = restart_configuration(
        **{
            "restart-strategy.type": "failure-rate",
            "restart-strategy.failure-rate.max-failures-per-interval": "1",
            "restart-strategy.failure-rate.failure-rate-interval": "1 min",
            "restart-strategy.failure-rate.delay": "10 ms",
        }
    )
    error, failures, _ = run(tmp_path, 5, configuration=configuration)
    assert failures == 2
    assert_failed_with_user_error(error, 2)


@pytest.mark.timeout(60)
def test_the_job_strategy_wins_over_the_configuration(tmp_path):
    configuration = restart_configuration(**{"restart-strategy.type": "none"})
    error, failures, _ = run(
        tmp_path, 1, configuration=configuration, strategy=RestartStrategies.fixed_delay_restart(1, 10)
    )
    assert error is None
    assert failures == 1
