"""Restart strategies: what a job asks for (PyFlink's `RestartStrategies`) and what the JobMaster consults
after each failure (Flink's `RestartBackoffTimeStrategy`).

Two halves, as in Flink:

- Description. `RestartStrategies.fixed_delay_restart(3, 10_000)` and friends return a
  RestartStrategyConfiguration: frozen, picklable data, checked when it is built, so a bad value fails when
  the job is described rather than at its first failure. `restart_strategy_from_configuration` builds the
  same objects from Flink's `restart-strategy.*` keys.
- Runtime (`fluvial.common.restart_backoff`, which imports this module, never the reverse).
  `create_backoff_strategy(configuration, clock=..., rng=...)` builds a fresh, stateful strategy for one job.
  On every failure the JobMaster, on its own thread:
  1. calls `notify_failure(cause, timestamp_ms)`;
  2. asks `can_restart()`: if False, the job fails with `cause`;
  3. waits `get_backoff_time()` ms, then restarts every task from the latest completed checkpoint.

Which configuration applies is `resolve_restart_strategy`: the job's own (`env.set_restart_strategy`) unless it
is absent or `fall_back_restart()`; else the configuration's `restart-strategy.type`; else the default, which
is fixed delay with 2**31 - 1 attempts and 1 s between them when checkpointing is enabled, no restart
otherwise (Flink 1.x's default; Flink 1.19+ defaults to exponential delay instead).

All times are integer milliseconds. Clocks are injected (`clock() -> ms`) so every strategy is testable
without sleeping; the exponential strategy's jitter draws from an injectable `random.Random`.
"""

from __future__ import annotations

import math
import numbers
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any, NamedTuple, Protocol, TypeAlias

from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.time import Duration

__all__ = [
    "MAX_RESTART_ATTEMPTS",
    "RESTART_STRATEGY_KEYS",
    "ExponentialDelayRestartStrategyConfiguration",
    "FailureRateRestartStrategyConfiguration",
    "FallbackRestartStrategyConfiguration",
    "FixedDelayRestartStrategyConfiguration",
    "NoRestartStrategyConfiguration",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "RestartStrategyType",
    "default_restart_strategy",
    "resolve_restart_strategy",
    "restart_strategy_from_configuration",
]

MAX_RESTART_ATTEMPTS = 2**31 - 1
"""Java's Integer.MAX_VALUE, which Flink uses to mean "restart forever"."""

Clock = Callable[[], int]
"""Returns milliseconds. Strategies only subtract two readings, so any origin will do."""

Interval = int | float | timedelta | Duration
"""A delay as PyFlink takes it (milliseconds or a datetime.timedelta), or a fluvial Duration."""


# --- Checking user values ---


class _InvalidParameter(InvalidJobError):
    """An InvalidJobError that remembers which parameter was wrong, so that configuration parsing can name the
    key the value came from. `parameter` defaults to "" so the exception survives pickling."""

    def __init__(self, message: str, parameter: str = "") -> None:
        InvalidJobError.__init__(self, message)
        self.parameter = parameter


def _interval_ms(parameter: str, value: Any) -> int:
    if isinstance(value, Duration):
        return value.millis
    if isinstance(value, timedelta):
        return value // timedelta(milliseconds=1)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{parameter} must be milliseconds (an int), a datetime.timedelta or a Duration, got {value!r}; "
            "pass e.g. 10_000 or Duration.of_seconds(10)"
        )
    if not math.isfinite(value):
        raise _InvalidParameter(f"{parameter} is {value!r}; pass a finite number of milliseconds", parameter)
    return int(math.trunc(value))  # int(value) itself, typed: a numbers.Real promises __trunc__, not __int__


def _whole_number(parameter: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{parameter} must be an int, got {value!r}; pass e.g. 3")
    return int(value)


def _real_number(parameter: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{parameter} must be a number, got {value!r}; pass e.g. 2.0")
    return float(value)


def _require(ok: bool, parameter: str, value: Any, requirement: str, fix: str) -> None:
    if not ok:
        raise _InvalidParameter(f"{parameter} is {value!r}, but it {requirement}; {fix}", parameter)


# --- The user API: RestartStrategies and the configurations it returns ---


class RestartStrategyConfiguration(ABC):
    """What a job asks for when it fails (PyFlink `RestartStrategyConfiguration`). Inert, picklable data:
    `create_backoff_strategy` builds the live, stateful strategy from it for each job."""

    __slots__ = ()

    @abstractmethod
    def get_description(self) -> str:
        """One line for the web UI and the logs."""


@dataclass(frozen=True, slots=True)
class NoRestartStrategyConfiguration(RestartStrategyConfiguration):
    """The first failure fails the job."""

    def get_description(self) -> str:
        return "No restart: the first failure fails the job."


@dataclass(frozen=True, slots=True)
class FallbackRestartStrategyConfiguration(RestartStrategyConfiguration):
    """Defers to the cluster: the configuration's `restart-strategy.type`, else the default. It names no
    strategy itself, so `resolve_restart_strategy` must replace it before a strategy is built."""

    def get_description(self) -> str:
        return "The cluster's restart strategy (restart-strategy.type), or the default if it names none."


@dataclass(frozen=True, slots=True)
class FixedDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
    """Restart at most `restart_attempts` times, waiting the same delay before each restart.

    The delay may be given as milliseconds, a timedelta or a Duration; it is stored as milliseconds.
    """

    restart_attempts: int
    delay_between_attempts_ms: int

    def __post_init__(self) -> None:
        attempts = _whole_number("restart_attempts", self.restart_attempts)
        delay = _interval_ms("delay_between_attempts", self.delay_between_attempts_ms)
        _require(
            attempts >= 0,
            "restart_attempts",
            attempts,
            "must be at least 0",
            "pass 0 to never restart, or the number of restarts to allow",
        )
        _require(
            delay >= 0,
            "delay_between_attempts",
            delay,
            "must be at least 0 ms",
            "pass 0 to restart at once, or a positive delay",
        )
        object.__setattr__(self, "restart_attempts", attempts)
        object.__setattr__(self, "delay_between_attempts_ms", delay)

    def get_restart_attempts(self) -> int:
        return self.restart_attempts

    def get_delay_between_attempts_interval(self) -> timedelta:
        """As in PyFlink, a timedelta."""
        return timedelta(milliseconds=self.delay_between_attempts_ms)

    def get_description(self) -> str:
        return (
            f"Restart after a fixed delay of {self.delay_between_attempts_ms} ms, "
            f"at most {self.restart_attempts} times."
        )


@dataclass(frozen=True, slots=True)
class FailureRateRestartStrategyConfiguration(RestartStrategyConfiguration):
    """Restart after a fixed delay unless more than `max_failure_rate` failures fall within any
    `failure_interval`; the failure that exceeds the rate fails the job."""

    max_failure_rate: int
    failure_interval_ms: int
    delay_between_attempts_ms: int

    def __post_init__(self) -> None:
        rate = _whole_number("failure_rate", self.max_failure_rate)
        interval = _interval_ms("failure_interval", self.failure_interval_ms)
        delay = _interval_ms("delay_interval", self.delay_between_attempts_ms)
        _require(
            rate >= 1,
            "failure_rate",
            rate,
            "must be at least 1",
            "pass the number of failures to tolerate per interval, or use no_restart()",
        )
        _require(
            interval >= 1,
            "failure_interval",
            interval,
            "must be at least 1 ms",
            "pass the window over which failures are counted, e.g. Duration.of_minutes(5)",
        )
        _require(
            delay >= 0,
            "delay_interval",
            delay,
            "must be at least 0 ms",
            "pass 0 to restart at once, or a positive delay",
        )
        object.__setattr__(self, "max_failure_rate", rate)
        object.__setattr__(self, "failure_interval_ms", interval)
        object.__setattr__(self, "delay_between_attempts_ms", delay)

    def get_max_failure_rate(self) -> int:
        return self.max_failure_rate

    def get_failure_interval(self) -> timedelta:
        return timedelta(milliseconds=self.failure_interval_ms)

    def get_delay_between_attempts_interval(self) -> timedelta:
        return timedelta(milliseconds=self.delay_between_attempts_ms)

    def get_description(self) -> str:
        return (
            f"Restart after {self.delay_between_attempts_ms} ms unless more than "
            f"{self.max_failure_rate} failures happen within {self.failure_interval_ms} ms."
        )


@dataclass(frozen=True, slots=True)
class ExponentialDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
    """Restart after a delay that starts at `initial_backoff`, is multiplied by `backoff_multiplier` on each
    failure up to `max_backoff`, varies by +/- `jitter_factor` of itself, and goes back to `initial_backoff`
    once the job has run `reset_backoff_threshold` without failing. At most `attempts_before_reset_backoff`
    restarts between two resets (Flink's default: unlimited)."""

    initial_backoff_ms: int
    max_backoff_ms: int
    backoff_multiplier: float
    reset_backoff_threshold_ms: int
    jitter_factor: float
    attempts_before_reset_backoff: int = MAX_RESTART_ATTEMPTS

    def __post_init__(self) -> None:
        initial = _interval_ms("initial_backoff", self.initial_backoff_ms)
        maximum = _interval_ms("max_backoff", self.max_backoff_ms)
        multiplier = _real_number("backoff_multiplier", self.backoff_multiplier)
        threshold = _interval_ms("reset_backoff_threshold", self.reset_backoff_threshold_ms)
        jitter = _real_number("jitter_factor", self.jitter_factor)
        attempts = _whole_number("attempts_before_reset_backoff", self.attempts_before_reset_backoff)
        _require(
            initial >= 1,
            "initial_backoff",
            initial,
            "must be at least 1 ms",
            "pass the first delay, e.g. Duration.of_seconds(1)",
        )
        _require(
            maximum >= initial,
            "max_backoff",
            maximum,
            f"must be at least initial_backoff ({initial} ms)",
            "raise max_backoff or lower initial_backoff",
        )
        _require(
            math.isfinite(multiplier) and multiplier >= 1,
            "backoff_multiplier",
            multiplier,
            "must be a finite number >= 1",
            "pass e.g. 2.0 (1.0 keeps the delay constant)",
        )
        _require(
            threshold >= 1,
            "reset_backoff_threshold",
            threshold,
            "must be at least 1 ms",
            "pass how long the job must run without failing to reset, e.g. Duration.of_hours(1)",
        )
        _require(
            math.isfinite(jitter) and 0 <= jitter <= 1,
            "jitter_factor",
            jitter,
            "must be within [0, 1]",
            "pass e.g. 0.1 for +/-10 %, or 0 for no jitter",
        )
        _require(
            attempts >= 1,
            "attempts_before_reset_backoff",
            attempts,
            "must be at least 1",
            f"pass the restarts to allow between resets, or {MAX_RESTART_ATTEMPTS} for no limit",
        )
        for name, value in (
            ("initial_backoff_ms", initial),
            ("max_backoff_ms", maximum),
            ("backoff_multiplier", multiplier),
            ("reset_backoff_threshold_ms", threshold),
            ("jitter_factor", jitter),
            ("attempts_before_reset_backoff", attempts),
        ):
            object.__setattr__(self, name, value)

    def get_initial_backoff(self) -> timedelta:
        return timedelta(milliseconds=self.initial_backoff_ms)

    def get_max_backoff(self) -> timedelta:
        return timedelta(milliseconds=self.max_backoff_ms)

    def get_backoff_multiplier(self) -> float:
        return self.backoff_multiplier

    def get_reset_backoff_threshold(self) -> timedelta:
        return timedelta(milliseconds=self.reset_backoff_threshold_ms)

    def get_jitter_factor(self) -> float:
        return self.jitter_factor

    def get_attempts_before_reset_backoff(self) -> int:
        return self.attempts_before_reset_backoff

    def get_description(self) -> str:
        return (
            f"Restart with a delay from {self.initial_backoff_ms} ms growing x{self.backoff_multiplier} "
            f"to at most {self.max_backoff_ms} ms (jitter {self.jitter_factor}), reset after "
            f"{self.reset_backoff_threshold_ms} ms without failure; at most "
            f"{self.attempts_before_reset_backoff} restarts between resets."
        )


class RestartStrategies:
    """Builds RestartStrategyConfigurations (PyFlink `RestartStrategies`). Intervals accept milliseconds,
    a datetime.timedelta or a Duration."""

    NoRestartStrategyConfiguration: TypeAlias = NoRestartStrategyConfiguration
    FixedDelayRestartStrategyConfiguration: TypeAlias = FixedDelayRestartStrategyConfiguration
    FailureRateRestartStrategyConfiguration: TypeAlias = FailureRateRestartStrategyConfiguration
    ExponentialDelayRestartStrategyConfiguration: TypeAlias = ExponentialDelayRestartStrategyConfiguration
    FallbackRestartStrategyConfiguration: TypeAlias = FallbackRestartStrategyConfiguration

    @staticmethod
    def no_restart() -> NoRestartStrategyConfiguration:
        """Never restart: the first failure fails the job.

        Returns:
            The configuration.
        """
        return NoRestartStrategyConfiguration()

    @staticmethod
    def fall_back_restart() -> FallbackRestartStrategyConfiguration:
        """Use the strategy of the configuration (`restart-strategy.type`), else the default.

        Returns:
            The configuration.
        """
        return FallbackRestartStrategyConfiguration()

    @staticmethod
    def fixed_delay_restart(
        restart_attempts: int, delay_between_attempts: Interval
    ) -> FixedDelayRestartStrategyConfiguration:
        """Restart up to `restart_attempts` times, `delay_between_attempts` apart.

        Args:
            restart_attempts: The most restarts.
            delay_between_attempts: The delay (ms, a timedelta or a Duration).

        Returns:
            The configuration.

        Example:
            ```python
            env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 10_000))
            ```
        """
        delay: Any = delay_between_attempts  # normalized to milliseconds by the configuration
        return FixedDelayRestartStrategyConfiguration(restart_attempts, delay)

    @staticmethod
    def failure_rate_restart(
        failure_rate: int, failure_interval: Interval, delay_interval: Interval
    ) -> FailureRateRestartStrategyConfiguration:
        """Restart while there are at most `failure_rate` failures within `failure_interval`.

        Args:
            failure_rate: Failures allowed per interval.
            failure_interval: The interval.
            delay_interval: The delay before each restart.

        Returns:
            The configuration.
        """
        interval: Any = failure_interval
        delay: Any = delay_interval
        return FailureRateRestartStrategyConfiguration(failure_rate, interval, delay)

    @staticmethod
    def exponential_delay_restart(
        initial_backoff: Interval,
        max_backoff: Interval,
        backoff_multiplier: float,
        reset_backoff_threshold: Interval,
        jitter_factor: float,
        attempts_before_reset_backoff: int = MAX_RESTART_ATTEMPTS,
    ) -> ExponentialDelayRestartStrategyConfiguration:
        """Flink Java's `exponentialDelayRestart`; `attempts_before_reset_backoff` is Flink 1.19's addition."""
        intervals: tuple[Any, Any, Any] = (initial_backoff, max_backoff, reset_backoff_threshold)
        return ExponentialDelayRestartStrategyConfiguration(
            intervals[0], intervals[1], backoff_multiplier, intervals[2], jitter_factor, attempts_before_reset_backoff
        )


# --- From configuration keys ---

TYPE_KEY = "restart-strategy.type"
DEPRECATED_TYPE_KEY = "restart-strategy"  # Flink's older name, read only when the new one is absent
FIXED_DELAY_ATTEMPTS = "restart-strategy.fixed-delay.attempts"
FIXED_DELAY_DELAY = "restart-strategy.fixed-delay.delay"
FAILURE_RATE_MAX_FAILURES = "restart-strategy.failure-rate.max-failures-per-interval"
FAILURE_RATE_INTERVAL = "restart-strategy.failure-rate.failure-rate-interval"
FAILURE_RATE_DELAY = "restart-strategy.failure-rate.delay"
EXPONENTIAL_INITIAL_BACKOFF = "restart-strategy.exponential-delay.initial-backoff"
EXPONENTIAL_MAX_BACKOFF = "restart-strategy.exponential-delay.max-backoff"
EXPONENTIAL_MULTIPLIER = "restart-strategy.exponential-delay.backoff-multiplier"
EXPONENTIAL_RESET_THRESHOLD = "restart-strategy.exponential-delay.reset-backoff-threshold"
EXPONENTIAL_JITTER = "restart-strategy.exponential-delay.jitter-factor"
EXPONENTIAL_ATTEMPTS = "restart-strategy.exponential-delay.attempts-before-reset-backoff"

RESTART_STRATEGY_KEYS: tuple[str, ...] = (
    TYPE_KEY,
    DEPRECATED_TYPE_KEY,
    FIXED_DELAY_ATTEMPTS,
    FIXED_DELAY_DELAY,
    FAILURE_RATE_MAX_FAILURES,
    FAILURE_RATE_INTERVAL,
    FAILURE_RATE_DELAY,
    EXPONENTIAL_INITIAL_BACKOFF,
    EXPONENTIAL_MAX_BACKOFF,
    EXPONENTIAL_MULTIPLIER,
    EXPONENTIAL_RESET_THRESHOLD,
    EXPONENTIAL_JITTER,
    EXPONENTIAL_ATTEMPTS,
)
"""Every key `restart_strategy_from_configuration` reads, for the configuration's table of known keys."""


class RestartStrategyType(Enum):
    """The values of `restart-strategy.type`: a main name and Flink's aliases, matched case-insensitively."""

    NO_RESTART = ("disable", "none", "off")
    FIXED_DELAY = ("fixed-delay", "fixeddelay")
    FAILURE_RATE = ("failure-rate", "failurerate")
    EXPONENTIAL_DELAY = ("exponential-delay", "exponentialdelay")

    @property
    def main_name(self) -> str:
        return self.value[0]

    @classmethod
    def of(cls, raw: str, key: str = TYPE_KEY) -> RestartStrategyType:
        name = raw.strip().lower()
        for strategy_type in cls:
            if name in strategy_type.value:
                return strategy_type
        valid = ", ".join(name for strategy_type in cls for name in strategy_type.value)
        raise ConfigurationError(
            f"configuration '{key}' has the value {raw!r}, which is not a restart strategy; use one of: {valid}"
        )


class _ConfigSource(Protocol):
    def get_string(self, key: str, default_value: str | None = None) -> str | None: ...


_DURATION = re.compile(r"(?P<number>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[a-zµ]*)")
_UNIT_MS: dict[str, Decimal] = {
    label: Decimal(factor)
    for factor, labels in (
        ("86400000", ("d", "day", "days")),
        ("3600000", ("h", "hour", "hours")),
        ("60000", ("m", "min", "minute", "minutes")),
        ("1000", ("s", "sec", "secs", "second", "seconds")),
        ("1", ("", "ms", "milli", "millis", "millisecond", "milliseconds")),
        ("0.001", ("µs", "us", "micro", "micros", "microsecond", "microseconds")),
        ("0.000001", ("ns", "nano", "nanos", "nanosecond", "nanoseconds")),
    )
    for label in labels
}


def _parse_duration_ms(key: str, raw: str) -> int:
    """Flink's duration syntax: a number and a unit ('10 s', '500 ms', '1 min', '2 h'; 'm' is minutes), or
    bare milliseconds. Fractions are accepted and rounded down to whole milliseconds."""
    match = _DURATION.fullmatch(raw.strip().lower())
    if match is None or match["unit"] not in _UNIT_MS:
        raise ConfigurationError(
            f"configuration '{key}' has the value {raw!r}, which is not a duration; "
            "write a number and a unit, e.g. '500 ms', '10 s', '1 min', '2 h', '1 d'"
        )
    return int(Decimal(match["number"]) * _UNIT_MS[match["unit"]])


class _Setting(NamedTuple):
    """One constructor argument read from the configuration: the key it came from, the parameter name the
    constructor's checks report, the parsed value, and the raw string (None when the default was used)."""

    key: str
    parameter: str
    value: Any
    raw: str | None


def _read(config: _ConfigSource, key: str, parameter: str, default: Any, parse: Callable[[str], Any]) -> _Setting:
    raw = config.get_string(key, None)
    if raw is None:
        return _Setting(key, parameter, default, None)
    try:
        return _Setting(key, parameter, parse(str(raw).strip()), raw)
    except ConfigurationError:
        raise  # the parser's own message is more precise
    except (ValueError, InvalidOperation):
        kind = "an integer" if parse is int else "a number"
        raise ConfigurationError(
            f"configuration '{key}' has the value {raw!r}, which is not {kind}; fix the value"
        ) from None


def _read_duration(config: _ConfigSource, key: str, parameter: str, default_ms: int) -> _Setting:
    return _read(config, key, parameter, default_ms, lambda raw: _parse_duration_ms(key, raw))


def _build(cls: Callable[..., RestartStrategyConfiguration], *settings: _Setting) -> RestartStrategyConfiguration:
    """`cls(*values)` in field order; a value the class rejects becomes a ConfigurationError naming its key."""
    try:
        return cls(*(setting.value for setting in settings))
    except _InvalidParameter as exc:
        setting = next((s for s in settings if s.parameter == exc.parameter), settings[0])
        shown = f"its default {setting.value!r}" if setting.raw is None else repr(setting.raw)
        raise ConfigurationError(f"configuration '{setting.key}' ({shown}) is not valid: {exc}") from None


def restart_strategy_from_configuration(config: _ConfigSource) -> RestartStrategyConfiguration:
    """The strategy named by `restart-strategy.type` (or the deprecated `restart-strategy`), built from its
    `restart-strategy.<type>.*` keys with Flink's defaults for keys left unset.

    Returns FallbackRestartStrategyConfiguration when no type is set: the configuration names no strategy and
    the default applies (see `resolve_restart_strategy`). Keys of other strategies are ignored, as in Flink.
    Raises ConfigurationError naming the key for an unknown type or a malformed or out-of-range value.
    """
    key = TYPE_KEY
    raw_type = config.get_string(TYPE_KEY, None)
    if raw_type is None:
        key, raw_type = DEPRECATED_TYPE_KEY, config.get_string(DEPRECATED_TYPE_KEY, None)
    if raw_type is None:
        return FallbackRestartStrategyConfiguration()
    strategy_type = RestartStrategyType.of(str(raw_type), key)
    if strategy_type is RestartStrategyType.NO_RESTART:
        return NoRestartStrategyConfiguration()
    if strategy_type is RestartStrategyType.FIXED_DELAY:
        return _build(
            FixedDelayRestartStrategyConfiguration,
            _read(config, FIXED_DELAY_ATTEMPTS, "restart_attempts", 1, int),
            _read_duration(config, FIXED_DELAY_DELAY, "delay_between_attempts", 1_000),
        )
    if strategy_type is RestartStrategyType.FAILURE_RATE:
        return _build(
            FailureRateRestartStrategyConfiguration,
            _read(config, FAILURE_RATE_MAX_FAILURES, "failure_rate", 1, int),
            _read_duration(config, FAILURE_RATE_INTERVAL, "failure_interval", 60_000),
            _read_duration(config, FAILURE_RATE_DELAY, "delay_interval", 1_000),
        )
    return _build(
        ExponentialDelayRestartStrategyConfiguration,
        _read_duration(config, EXPONENTIAL_INITIAL_BACKOFF, "initial_backoff", 1_000),
        _read_duration(config, EXPONENTIAL_MAX_BACKOFF, "max_backoff", 60_000),
        _read(config, EXPONENTIAL_MULTIPLIER, "backoff_multiplier", 1.5, float),
        _read_duration(config, EXPONENTIAL_RESET_THRESHOLD, "reset_backoff_threshold", 3_600_000),
        _read(config, EXPONENTIAL_JITTER, "jitter_factor", 0.1, float),
        _read(config, EXPONENTIAL_ATTEMPTS, "attempts_before_reset_backoff", MAX_RESTART_ATTEMPTS, int),
    )


def default_restart_strategy(checkpointing_enabled: bool) -> RestartStrategyConfiguration:
    """Flink 1.x's default when nothing names a strategy: restart forever, 1 s apart, if checkpoints exist to
    restore from; otherwise a restart would replay from scratch, so do not restart."""
    if checkpointing_enabled:
        return FixedDelayRestartStrategyConfiguration(MAX_RESTART_ATTEMPTS, 1_000)
    return NoRestartStrategyConfiguration()


def resolve_restart_strategy(
    job_strategy: RestartStrategyConfiguration | None, config: _ConfigSource | None, checkpointing_enabled: bool
) -> RestartStrategyConfiguration:
    """The strategy a job runs with, in Flink's order: the job's own unless absent or fall_back_restart();
    then the configuration; then `default_restart_strategy`. Never returns a Fallback configuration."""
    if job_strategy is not None and not isinstance(job_strategy, FallbackRestartStrategyConfiguration):
        return job_strategy
    configured = restart_strategy_from_configuration(config) if config is not None else None
    if configured is not None and not isinstance(configured, FallbackRestartStrategyConfiguration):
        return configured
    return default_restart_strategy(checkpointing_enabled)
