"""A token bucket that caps how many records per second a receiver may store (`receiver.max-rate`).

It behaves like Guava's bursty RateLimiter, which Spark's receivers use:

1. Permits are issued at `max_rate` per second, one every `1 / max_rate` seconds.
2. A request never waits for its own permits, only for those of the requests before it: the first request
   after a quiet spell goes through at once, however many permits it takes, and moves the time at which the
   next permit is free further into the future. So a caller asking for 10,000 permits is not punished for
   its batch size; the caller after it pays.
3. Permits unused while nobody asked are stored, up to one second's worth, and spent before new ones: after
   an idle second a receiver may burst `max_rate` records, then settles to the rate again. Over any window
   of T seconds at most `max_rate * (T + 1)` permits, plus the one request in flight, are handed out.

`max_rate == 0` means unlimited: every call returns at once without touching the clock or the lock.
The clock (`() -> seconds`, monotonic) and `sleep(seconds)` are injectable, so tests need not sleep.
Thread safe: reservations are made under a lock, the sleeping happens outside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from fluvial.common.errors import InvalidJobError

MAX_BURST_SECONDS = 1.0


class RateLimiter:
    """Paces callers to at most `max_rate` permits (records) per second; 0 = unlimited."""

    def __init__(
        self,
        max_rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if isinstance(max_rate, bool) or not isinstance(max_rate, (int, float)) or not max_rate >= 0:
            raise InvalidJobError(
                f"receiver max rate must be a number of records per second >= 0 (0 = unlimited), got "
                f"{max_rate!r}; set 'receiver.max-rate' to 0 or a positive number"
            )
        self._max_rate = float(max_rate)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._interval = 1.0 / self._max_rate if self._max_rate > 0 else 0.0
        self._max_stored = self._max_rate * MAX_BURST_SECONDS
        self._stored = 0.0
        self._next_free = clock() if self._max_rate > 0 else 0.0

    @property
    def max_rate(self) -> float:
        return self._max_rate

    @property
    def limited(self) -> bool:
        return self._max_rate > 0

    def wait_to_push(self) -> None:
        """Blocks until one more record may be pushed."""
        if self._max_rate > 0:
            wait = self.reserve(1)
            if wait > 0:
                self._sleep(wait)

    def wait_to_push_many(self, n: int) -> None:
        """Blocks until `n` more records may be pushed (step 2: in practice, until the previous caller's are)."""
        if n < 0:
            raise ValueError(f"cannot ask for a negative number of permits ({n})")
        if n and self._max_rate > 0:
            wait = self.reserve(n)
            if wait > 0:
                self._sleep(wait)

    def reserve(self, n: int) -> float:
        """Takes `n` permits now and returns how many seconds the caller must wait before using them."""
        if self._max_rate <= 0 or n <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            if now > self._next_free:
                # step 3: the time nobody used becomes stored permits, at most a burst's worth
                idle = now - self._next_free
                self._stored = min(self._max_stored, self._stored + idle / self._interval)
                self._next_free = now
            wait = self._next_free - now
            from_storage = min(float(n), self._stored)
            self._stored -= from_storage
            self._next_free += (n - from_storage) * self._interval
        return wait
