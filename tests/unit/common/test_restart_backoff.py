"""Restart strategies at run time (`restart_backoff`): each backoff strategy driven by a ManualClock, and the
configuration that builds it."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.restart_backoff import (
    ExponentialDelayRestartBackoffTimeStrategy,
    FailureOutcome,
    FailureRateRestartBackoffTimeStrategy,
    FixedDelayRestartBackoffTimeStrategy,
    NoRestartBackoffTimeStrategy,
    create_backoff_strategy,
)
from fluvial.common.restart_strategy import MAX_RESTART_ATTEMPTS, RestartStrategies
from fluvial.common.time import ManualClock


def exponential(
    initial: int = 100,
    maximum: int = 1_000,
    multiplier: float = 2.0,
    threshold: int = 10_000,
    jitter: float = 0.0,
    attempts: int = MAX_RESTART_ATTEMPTS,
):
    return RestartStrategies.exponential_delay_restart(initial, maximum, multiplier, threshold, jitter, attempts)


@pytest.mark.parametrize(
    "configuration, expected",
    [
        (RestartStrategies.no_restart(), NoRestartBackoffTimeStrategy),
        (RestartStrategies.fixed_delay_restart(1, 0), FixedDelayRestartBackoffTimeStrategy),
        (RestartStrategies.failure_rate_restart(1, 1, 0), FailureRateRestartBackoffTimeStrategy),
        (exponential(), ExponentialDelayRestartBackoffTimeStrategy),
    ],
)
def test_create_backoff_strategy_builds_the_matching_strategy(configuration: Any, expected: type) -> None:
    assert type(create_backoff_strategy(configuration, clock=ManualClock())) is expected


def test_fallback_must_be_resolved_before_building() -> None:
    with pytest.raises(InvalidJobError, match="resolve_restart_strategy"):
        create_backoff_strategy(RestartStrategies.fall_back_restart())
    with pytest.raises(TypeError, match="RestartStrategies"):
        create_backoff_strategy("fixed-delay")  # type: ignore[arg-type]


def test_no_restart_never_restarts() -> None:
    strategy = create_backoff_strategy(RestartStrategies.no_restart())
    assert strategy.notify_failure(RuntimeError("boom"), 0) is FailureOutcome.NEW_ATTEMPT
    assert strategy.can_restart() is False


def test_fixed_delay_allows_exactly_its_attempts_then_fails() -> None:
    strategy = create_backoff_strategy(RestartStrategies.fixed_delay_restart(3, 1_500))
    verdicts = []
    for _ in range(4):
        assert strategy.notify_failure(RuntimeError(), 0) is FailureOutcome.NEW_ATTEMPT
        verdicts.append((strategy.can_restart(), strategy.get_backoff_time()))
    assert verdicts == [(True, 1_500), (True, 1_500), (True, 1_500), (False, 1_500)]


def test_each_created_strategy_has_its_own_state() -> None:
    configuration = RestartStrategies.fixed_delay_restart(1, 0)
    first = create_backoff_strategy(configuration)
    first.notify_failure(None)
    first.notify_failure(None)
    assert first.can_restart() is False
    assert create_backoff_strategy(configuration).can_restart() is True


@given(attempts=st.integers(0, 30), failures=st.integers(1, 40))
def test_fixed_delay_restarts_while_failures_do_not_exceed_attempts(attempts: int, failures: int) -> None:
    strategy = create_backoff_strategy(RestartStrategies.fixed_delay_restart(attempts, 10))
    for _ in range(failures):
        strategy.notify_failure(None)
    assert strategy.can_restart() is (failures <= attempts)


def test_failure_rate_fails_on_the_failure_that_exceeds_the_rate() -> None:
    clock = ManualClock()
    strategy = create_backoff_strategy(RestartStrategies.failure_rate_restart(2, 1_000, 300), clock=clock)
    verdicts = []
    for at in (0, 100, 200):
        clock.set(at)
        strategy.notify_failure(RuntimeError(), at)
        verdicts.append(strategy.can_restart())
    assert verdicts == [True, True, False]
    assert strategy.get_backoff_time() == 300


def test_failure_rate_window_slides() -> None:
    clock = ManualClock()
    strategy = create_backoff_strategy(RestartStrategies.failure_rate_restart(2, 1_000, 0), clock=clock)
    for at in (0, 100):
        clock.set(at)
        strategy.notify_failure(None)  # the timestamp defaults to the clock
    clock.set(1_000)
    strategy.notify_failure(None)
    assert strategy.can_restart() is False  # 0 is exactly one interval old: still inside
    clock.set(1_001)
    assert strategy.can_restart() is True  # ... and now it has left the window
    clock.set(1_050)
    strategy.notify_failure(None)
    assert strategy.can_restart() is False  # 100, 1000, 1050 are within 1000 ms of 1050


@given(
    max_failures=st.integers(1, 5),
    interval=st.integers(1, 500),
    gaps=st.lists(st.integers(0, 300), min_size=1, max_size=30),
    wait=st.integers(0, 600),
)
def test_failure_rate_matches_counting_failures_in_the_window(
    max_failures: int, interval: int, gaps: list[int], wait: int
) -> None:
    clock = ManualClock()
    strategy = create_backoff_strategy(RestartStrategies.failure_rate_restart(max_failures, interval, 0), clock=clock)
    history: list[int] = []
    for gap in gaps:
        clock.advance(gap)
        history.append(clock())
        strategy.notify_failure(None, clock())
        clock.advance(wait if gap % 2 else 0)  # sometimes ask later than the failure
        in_window = sum(1 for at in history if clock() - at <= interval)
        assert strategy.can_restart() is (in_window <= max_failures)


def drive_to_restart(strategy: Any, clock: ManualClock) -> int:
    """Fail now, then move the clock to just after the restart; returns the backoff the strategy chose."""
    assert strategy.notify_failure(RuntimeError(), clock()) is FailureOutcome.NEW_ATTEMPT
    backoff = strategy.get_backoff_time()
    clock.advance(backoff + 1)
    return backoff


def test_exponential_backoff_grows_by_the_multiplier_up_to_the_cap() -> None:
    clock = ManualClock(5_000)
    strategy = create_backoff_strategy(exponential(100, 1_000, 2.0, 10_000), clock=clock)
    assert [drive_to_restart(strategy, clock) for _ in range(7)] == [100, 200, 400, 800, 1_000, 1_000, 1_000]
    assert strategy.can_restart() is True


def test_exponential_backoff_time_counts_down_to_the_restart() -> None:
    clock = ManualClock(1_000)
    strategy = create_backoff_strategy(exponential(100), clock=clock)
    strategy.notify_failure(RuntimeError(), 1_000)
    assert strategy.get_backoff_time() == 100
    clock.set(1_030)
    assert strategy.get_backoff_time() == 70
    clock.set(5_000)
    assert strategy.get_backoff_time() == 0


def test_exponential_backoff_before_any_failure_is_an_error_naming_the_state() -> None:
    strategy = create_backoff_strategy(exponential(), clock=ManualClock())
    with pytest.raises(RuntimeError, match="NO_FAILURE_YET"):
        strategy.get_backoff_time()


def test_exponential_merges_failures_while_a_restart_is_pending() -> None:
    clock = ManualClock()
    strategy = create_backoff_strategy(exponential(100, 1_000, 2.0, 10_000), clock=clock)
    assert strategy.notify_failure(RuntimeError("task 1"), 0) is FailureOutcome.NEW_ATTEMPT
    assert strategy.notify_failure(RuntimeError("task 2"), 50) is FailureOutcome.MERGED
    assert strategy.notify_failure(RuntimeError("task 3"), 100) is FailureOutcome.MERGED  # at the restart time
    assert strategy.attempt == 1
    clock.set(50)
    assert strategy.get_backoff_time() == 50  # the restart time did not move
    assert strategy.notify_failure(RuntimeError(), 101) is FailureOutcome.NEW_ATTEMPT
    clock.set(101)
    assert strategy.get_backoff_time() == 200


def test_exponential_resets_after_running_the_threshold_without_failure() -> None:
    clock = ManualClock()
    strategy = create_backoff_strategy(exponential(100, 10_000, 2.0, 1_000), clock=clock)
    for _ in range(3):
        drive_to_restart(strategy, clock)  # 100, 200, 400: the restart was at clock() - 1
    restart_at = clock() - 1
    clock.set(restart_at + 999)  # one ms short of the threshold: keeps growing
    assert drive_to_restart(strategy, clock) == 800
    restart_at = clock() - 1
    clock.set(restart_at + 1_000)  # ran exactly the threshold: back to the start
    assert drive_to_restart(strategy, clock) == 100
    assert strategy.attempt == 1


def test_exponential_attempts_before_reset_limit_restarts_until_a_reset() -> None:
    clock = ManualClock()
    strategy = create_backoff_strategy(exponential(100, 10_000, 2.0, 1_000, attempts=2), clock=clock)
    drive_to_restart(strategy, clock)
    assert strategy.can_restart() is True
    drive_to_restart(strategy, clock)
    assert strategy.can_restart() is True
    strategy.notify_failure(RuntimeError(), clock())
    assert strategy.can_restart() is False
    clock.advance(10_000)  # had the job been restarted anyway and run long enough, the count starts over
    strategy.notify_failure(RuntimeError(), clock())
    assert strategy.can_restart() is True


def test_exponential_with_multiplier_one_keeps_the_delay() -> None:
    clock = ManualClock()
    strategy = create_backoff_strategy(exponential(250, 1_000, 1.0), clock=clock)
    assert [drive_to_restart(strategy, clock) for _ in range(4)] == [250, 250, 250, 250]


def test_exponential_survives_thousands_of_growths_without_overflow() -> None:
    clock = ManualClock()
    strategy = create_backoff_strategy(
        exponential(1, 60_000, 10.0, 10**12, jitter=0.5), clock=clock, rng=random.Random(3)
    )
    delays = [drive_to_restart(strategy, clock) for _ in range(2_000)]
    assert max(delays) == 60_000 and delays[-1] == 60_000


def test_exponential_jitter_is_reproducible_with_a_seeded_rng_and_varies() -> None:
    def delays(seed: int) -> list[int]:
        clock = ManualClock()
        strategy = create_backoff_strategy(
            exponential(1_000, 1_000_000, 1.0, 10**9, jitter=0.5), clock=clock, rng=random.Random(seed)
        )
        return [drive_to_restart(strategy, clock) for _ in range(30)]

    assert delays(7) == delays(7)
    assert len(set(delays(7))) > 5  # jitter really spreads the delays
    assert all(1_000 <= d <= 1_500 for d in delays(7))  # 1000 +/- 500, but never below the initial backoff


@given(
    initial=st.integers(1, 2_000),
    extra=st.integers(0, 100_000),
    multiplier=st.floats(1.0, 4.0),
    jitter=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32),
    failures=st.integers(1, 25),
)
def test_exponential_delays_stay_within_the_jitter_band_and_the_bounds(
    initial: int, extra: int, multiplier: float, jitter: float, seed: int, failures: int
) -> None:
    maximum = initial + extra
    clock = ManualClock()
    strategy = create_backoff_strategy(
        exponential(initial, maximum, multiplier, 10**12, jitter), clock=clock, rng=random.Random(seed)
    )
    for attempt in range(failures):
        delay = drive_to_restart(strategy, clock)
        base = int(initial * multiplier**attempt)
        offset = int(base * jitter)
        low = max(initial, min(base - offset, maximum))
        high = max(initial, min(base + offset, maximum))
        assert low <= delay <= high
        if jitter == 0:
            assert delay == max(initial, min(base, maximum))
