"""Rates from cumulative values (Flink's MeterView and the per-second time gauges).

Counters only ever count; a rate is derived when a snapshot is taken, from the counter's values at the
snapshots within the view's time span. So the hot path pays for a counter add and nothing else.
"""

from __future__ import annotations

from collections import deque


class RateView:
    """Units per second of a cumulative value over the last `span_ms` (Flink: 60 s for meters, 5 s for the
    time gauges), from the samples `update` is given. The rate is over the time the samples actually cover,
    so it is meaningful from the second sample on; before that it is 0."""

    __slots__ = ("_span_ns", "_samples")

    def __init__(self, span_ms: int) -> None:
        if span_ms <= 0:
            raise ValueError(f"a rate's time span must be > 0 ms, got {span_ms}")
        self._span_ns = span_ms * 1_000_000
        self._samples: deque[tuple[int, float]] = deque()

    def update(self, now_ns: int, total: float) -> float:
        """Record `total` at `now_ns` (a monotonic clock) and return the rate per second."""
        samples = self._samples
        samples.append((now_ns, total))
        horizon = now_ns - self._span_ns
        while len(samples) > 2 and samples[1][0] <= horizon:
            samples.popleft()  # keep one sample at or before the horizon, so the window spans the whole span
        first_ns, first = samples[0]
        elapsed = now_ns - first_ns
        if elapsed <= 0:
            return 0.0
        return (total - first) * 1e9 / elapsed
