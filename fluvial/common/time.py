"""Durations and time constants, PyFlink-style (`Duration.of_seconds(5)`, `Time.seconds(5)`).

All internal times are integer milliseconds, as in Flink.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass

MIN_WATERMARK = -(2**63)
MAX_WATERMARK = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Duration:
    """A span of time held in milliseconds (PyFlink `pyflink.common.Duration`)."""

    millis: int

    @staticmethod
    def of_millis(millis: int) -> Duration:
        """A Duration of `millis` milliseconds.

        Args:
            millis: The milliseconds.

        Returns:
            The Duration.
        """
        return Duration(int(millis))

    @staticmethod
    def of_seconds(seconds: float) -> Duration:
        """A Duration of `seconds` seconds (fractions allowed).

        Args:
            seconds: The number of seconds.

        Returns:
            The Duration.
        """
        return Duration(int(seconds * 1000))

    @staticmethod
    def of_minutes(minutes: float) -> Duration:
        """A Duration of `minutes` minutes (fractions allowed).

        Args:
            minutes: The number of minutes.

        Returns:
            The Duration.
        """
        return Duration(int(minutes * 60_000))

    @staticmethod
    def of_hours(hours: float) -> Duration:
        """A Duration of `hours` hours (fractions allowed).

        Args:
            hours: The number of hours.

        Returns:
            The Duration.
        """
        return Duration(int(hours * 3_600_000))

    @staticmethod
    def of_days(days: float) -> Duration:
        """A Duration of `days` days (fractions allowed).

        Args:
            days: The number of days.

        Returns:
            The Duration.
        """
        return Duration(int(days * 86_400_000))

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        """A Duration of `nanos` nanoseconds.

        Args:
            nanos: The nanoseconds.

        Returns:
            The Duration.
        """
        return Duration(int(nanos // 1_000_000))

    @staticmethod
    def zero() -> Duration:
        """The Duration of no time."""
        return Duration(0)

    def to_milliseconds(self) -> int:
        """The Duration in whole milliseconds."""
        return self.millis


@dataclass(frozen=True, slots=True)
class Instant:
    """A point on the time line as seconds and nanoseconds since the epoch (PyFlink `pyflink.common.Instant`,
    Java's `java.time.Instant`): the Python value of `Types.INSTANT()`."""

    seconds: int
    nanos: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.nanos < 1_000_000_000:
            raise ValueError(f"Instant nanos must be in [0, 999999999], got {self.nanos}; carry whole seconds over")

    def to_epoch_milli(self) -> int:
        """Milliseconds since the epoch."""
        return self.seconds * 1000 + self.nanos // 1_000_000

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        """The instant `epoch_milli` milliseconds after 1970-01-01T00:00:00Z.

        Args:
            epoch_milli: Milliseconds since the epoch.

        Returns:
            The Instant.
        """
        seconds, millis = divmod(int(epoch_milli), 1000)
        return Instant(seconds, millis * 1_000_000)

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


class Time:
    """Flink 1.x `Time` helpers; each returns a Duration so both styles are accepted everywhere."""

    @staticmethod
    def milliseconds(n: int) -> Duration:
        """Flink 1.x's `Time.milliseconds(n)`: a Duration of `n` ms.

        Args:
            n: The milliseconds.

        Returns:
            The Duration.
        """
        return Duration.of_millis(n)

    @staticmethod
    def seconds(n: float) -> Duration:
        """Flink 1.x's `Time.seconds(n)`: a Duration of `n` seconds.

        Args:
            n: The number of seconds.

        Returns:
            The Duration.
        """
        return Duration.of_seconds(n)

    @staticmethod
    def minutes(n: float) -> Duration:
        """Flink 1.x's `Time.minutes(n)`: a Duration of `n` minutes.

        Args:
            n: The number of minutes.

        Returns:
            The Duration.
        """
        return Duration.of_minutes(n)

    @staticmethod
    def hours(n: float) -> Duration:
        """Flink 1.x's `Time.hours(n)`: a Duration of `n` hours.

        Args:
            n: The number of hours.

        Returns:
            The Duration.
        """
        return Duration.of_hours(n)

    @staticmethod
    def days(n: float) -> Duration:
        """Flink 1.x's `Time.days(n)`: a Duration of `n` days.

        Args:
            n: The number of days.

        Returns:
            The Duration.
        """
        return Duration.of_days(n)


def to_millis(value: Duration | int | float) -> int:
    """Accept a Duration or a number of milliseconds, as PyFlink's signatures do."""
    if isinstance(value, Duration):
        return value.millis
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a Duration or milliseconds, got {value!r}; pass e.g. Duration.of_seconds(5)")
    return int(value)


def current_millis() -> int:
    """Wall-clock milliseconds since the epoch; the processing-time clock."""
    return _time.time_ns() // 1_000_000


class ManualClock:
    """A millisecond clock that moves only when told: what tests hand to anything taking a `clock` (watermark
    idleness, state TTL, restart back-off, the BlockGenerator) to make time-dependent behaviour deterministic.

    - `advance(millis)`: time passes, never backwards (fractions of a millisecond are kept).
    - `set(now_ms)`: the clock jumps, backwards too, as a corrected wall clock does: for components that read
      `current_millis` and must cope with jumps (block ids, bucket names).
    - `seconds()`: the same time in float seconds, for components whose clock is `time.monotonic`.
    - `sleep(seconds)`: what an injected `sleep` does on a manual clock: time moves by exactly that much, at once.
    - `reads`: how often the clock was read since it last moved, so a test can wait until a component on another
      thread has seen the new time (`wait_until(lambda: clock.reads >= 1)`), where nothing else shows it.
    """

    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return self.now_ms

    def seconds(self) -> float:
        """The clock's time in seconds."""
        self.reads += 1
        return self.now_ms / 1000

    def advance(self, millis: int | float) -> int:
        """Move the clock forward.

        Args:
            millis: How far.

        Returns:
            The new time in ms.
        """
        if millis < 0:
            raise ValueError(f"a clock never goes back; advance by >= 0 ms, got {millis}")
        return self.set(self.now_ms + millis)

    def set(self, now_ms: int | float) -> int:
        """Set the clock.

        Args:
            now_ms: The new time in ms.

        Returns:
            The new time in ms.
        """
        self.now_ms = now_ms
        self.reads = 0
        return now_ms

    def sleep(self, seconds: float) -> None:
        """Advance the clock by `seconds` instead of sleeping, so code under test never waits.

        Args:
            seconds: How long the caller would sleep.
        """
        if seconds < 0:
            raise ValueError(f"sleep length must be non-negative, got {seconds}")
        self.advance(seconds * 1000)
