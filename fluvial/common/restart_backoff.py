"""Restart strategies at run time (Flink's RestartBackoffTimeStrategy): after each failure the JobMaster asks
whether the job may restart and after how long. Built from the picklable configurations of
`restart_strategy` by `create_backoff_strategy`; clocks and random sources are injectable for tests."""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Protocol

from fluvial.common.errors import InvalidJobError
from fluvial.common.restart_strategy import (
    ExponentialDelayRestartStrategyConfiguration,
    FailureRateRestartStrategyConfiguration,
    FallbackRestartStrategyConfiguration,
    FixedDelayRestartStrategyConfiguration,
    NoRestartStrategyConfiguration,
    RestartStrategyConfiguration,
)
from fluvial.common.time import current_millis

Clock = Callable[[], int]


class FailureOutcome(Enum):
    """What `notify_failure` made of a failure."""

    NEW_ATTEMPT = "counted as a new restart attempt"
    MERGED = "merged into the restart already pending"  # only the exponential strategy merges


class RestartBackoffTimeStrategy(Protocol):
    """Decides whether a failed job restarts and after how long (Flink's `RestartBackoffTimeStrategy`).

    One instance per job, used only by the JobMaster's thread; it is stateful, so build a fresh one for each
    job with `create_backoff_strategy`. Call order per failure: `notify_failure`, then `can_restart`, then (if
    True) `get_backoff_time`.
    """

    def notify_failure(self, cause: BaseException | None, timestamp_ms: int | None = None) -> FailureOutcome:
        """Record a failure that happened at `timestamp_ms` (default: the strategy's clock now)."""
        ...

    def can_restart(self) -> bool:
        """Whether the job may restart after the failures notified so far."""
        ...

    def get_backoff_time(self) -> int:
        """Milliseconds to wait from now before restarting."""
        ...


class NoRestartBackoffTimeStrategy:
    """Never restarts."""

    __slots__ = ()

    def notify_failure(self, cause: BaseException | None, timestamp_ms: int | None = None) -> FailureOutcome:
        return FailureOutcome.NEW_ATTEMPT

    def can_restart(self) -> bool:
        return False

    def get_backoff_time(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "NoRestartBackoffTimeStrategy()"


class FixedDelayRestartBackoffTimeStrategy:
    """Allows `restart_attempts` restarts: the failure after the last allowed restart fails the job."""

    __slots__ = ("_backoff_ms", "_failures", "_max_attempts")

    def __init__(self, configuration: FixedDelayRestartStrategyConfiguration) -> None:
        self._max_attempts = configuration.restart_attempts
        self._backoff_ms = configuration.delay_between_attempts_ms
        self._failures = 0

    def notify_failure(self, cause: BaseException | None, timestamp_ms: int | None = None) -> FailureOutcome:
        self._failures += 1
        return FailureOutcome.NEW_ATTEMPT

    def can_restart(self) -> bool:
        # Failure n asks for restart n: allowed while n <= max. With 0 attempts, the first failure is final.
        return self._failures <= self._max_attempts

    def get_backoff_time(self) -> int:
        return self._backoff_ms

    def __repr__(self) -> str:
        return (
            f"FixedDelayRestartBackoffTimeStrategy(failures={self._failures}, "
            f"max_attempts={self._max_attempts}, backoff_ms={self._backoff_ms})"
        )


class FailureRateRestartBackoffTimeStrategy:
    """Fails the job when more than `max_failure_rate` failures fall within `failure_interval` of now.

    Only the newest max+1 failure times are kept: when all of them lie within the interval, the rate is
    exceeded; an interval boundary exactly `failure_interval` old still counts as inside (Flink's `>`).
    "Now" is the clock's reading when `can_restart` is asked, so pass a clock in the same timeline as the
    failure timestamps.
    """

    __slots__ = ("_backoff_ms", "_clock", "_failure_times", "_interval_ms", "_max_failures")

    def __init__(self, configuration: FailureRateRestartStrategyConfiguration, clock: Clock = current_millis) -> None:
        self._max_failures = configuration.max_failure_rate
        self._interval_ms = configuration.failure_interval_ms
        self._backoff_ms = configuration.delay_between_attempts_ms
        self._clock = clock
        self._failure_times: deque[int] = deque(maxlen=self._max_failures + 1)

    def notify_failure(self, cause: BaseException | None, timestamp_ms: int | None = None) -> FailureOutcome:
        self._failure_times.append(self._clock() if timestamp_ms is None else timestamp_ms)
        return FailureOutcome.NEW_ATTEMPT

    def can_restart(self) -> bool:
        if len(self._failure_times) <= self._max_failures:
            return True
        return self._clock() - self._failure_times[0] > self._interval_ms

    def get_backoff_time(self) -> int:
        return self._backoff_ms

    def __repr__(self) -> str:
        return (
            f"FailureRateRestartBackoffTimeStrategy(max_failures={self._max_failures}, "
            f"interval_ms={self._interval_ms}, backoff_ms={self._backoff_ms}, "
            f"recent_failures={list(self._failure_times)})"
        )


class ExponentialDelayRestartBackoffTimeStrategy:
    """Flink 1.19's exponential delay: restart n since the last reset (counting from 0) waits
    `clamp(initial * multiplier**n +/- jitter, initial, max)`.

    1. A failure at or before the pending restart time is the same incident (several tasks failing at once):
       it is MERGED and neither counts as an attempt nor moves the restart time.
    2. A failure at least `reset_backoff_threshold` after the previous restart time (the job ran that long
       without failing) resets the attempt count, so the delay starts again from `initial_backoff`.
    3. Otherwise the attempt count grows; `can_restart` is False once it exceeds
       `attempts_before_reset_backoff`.
    4. The jitter is uniform over the integers in [-d*jitter, +d*jitter] for the unclamped delay d, drawn from
       `rng`; seed it for reproducible tests.

    `get_backoff_time` is the time left until the restart time fixed by the last counted failure, measured on
    `clock`; calling it before any failure is an error.
    """

    __slots__ = ("_attempt", "_clock", "_config", "_next_restart_ms", "_rng")

    def __init__(
        self,
        configuration: ExponentialDelayRestartStrategyConfiguration,
        clock: Clock = current_millis,
        rng: random.Random | None = None,
    ) -> None:
        self._config = configuration
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._attempt = 0
        self._next_restart_ms: int | None = None

    @property
    def attempt(self) -> int:
        """Counted failures since the last reset."""
        return self._attempt

    def notify_failure(self, cause: BaseException | None, timestamp_ms: int | None = None) -> FailureOutcome:
        now = self._clock() if timestamp_ms is None else timestamp_ms
        if self._next_restart_ms is not None:
            if now <= self._next_restart_ms:
                return FailureOutcome.MERGED
            if now - self._next_restart_ms >= self._config.reset_backoff_threshold_ms:
                self._attempt = 0
        self._next_restart_ms = now + self._delay_for(self._attempt)
        self._attempt += 1
        return FailureOutcome.NEW_ATTEMPT

    def can_restart(self) -> bool:
        return self._attempt <= self._config.attempts_before_reset_backoff

    def get_backoff_time(self) -> int:
        if self._next_restart_ms is None:
            raise RuntimeError(
                "get_backoff_time() was called in state NO_FAILURE_YET: no restart is pending; "
                "call notify_failure() first"
            )
        return max(0, self._next_restart_ms - self._clock())

    def _delay_for(self, attempt: int) -> int:
        config = self._config
        try:
            unclamped = config.initial_backoff_ms * config.backoff_multiplier**attempt
        except OverflowError:
            unclamped = math.inf
        if math.isinf(unclamped):
            return config.max_backoff_ms  # grown past any representable delay: jitter cannot bring it back
        base = int(unclamped)
        offset = int(base * config.jitter_factor)
        jittered = base + (self._rng.randint(-offset, offset) if offset else 0)
        return max(config.initial_backoff_ms, min(jittered, config.max_backoff_ms))

    def __repr__(self) -> str:
        return (
            f"ExponentialDelayRestartBackoffTimeStrategy(attempt={self._attempt}, "
            f"next_restart_ms={self._next_restart_ms}, configuration={self._config!r})"
        )


def create_backoff_strategy(
    configuration: RestartStrategyConfiguration, clock: Clock = current_millis, rng: random.Random | None = None
) -> RestartBackoffTimeStrategy:
    """A fresh runtime strategy for one job. `clock` returns milliseconds; `rng` feeds the exponential
    strategy's jitter. A Fallback configuration must first be resolved with `resolve_restart_strategy`."""
    match configuration:
        case NoRestartStrategyConfiguration():
            return NoRestartBackoffTimeStrategy()
        case FixedDelayRestartStrategyConfiguration():
            return FixedDelayRestartBackoffTimeStrategy(configuration)
        case FailureRateRestartStrategyConfiguration():
            return FailureRateRestartBackoffTimeStrategy(configuration, clock)
        case ExponentialDelayRestartStrategyConfiguration():
            return ExponentialDelayRestartBackoffTimeStrategy(configuration, clock, rng)
        case FallbackRestartStrategyConfiguration():
            raise InvalidJobError(
                "fall_back_restart() defers to the cluster and names no strategy to build; resolve it first "
                "with resolve_restart_strategy(job_strategy, configuration, checkpointing_enabled)"
            )
    raise TypeError(
        f"expected a RestartStrategyConfiguration, got {configuration!r}; "
        "build one with RestartStrategies, e.g. RestartStrategies.fixed_delay_restart(3, 10_000)"
    )
