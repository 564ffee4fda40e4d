"""The interval join (Flink's RowTimeIntervalJoin and ProcTimeIntervalJoin) on keyed state.

Both inputs are keyed by the join key. A left row at time l matches the right rows at times r with
`lower <= l - r <= upper` that satisfy the rest of the condition, whichever arrives second emitting the joined
row (+I). Each side keeps its rows in a MapState from time to rows, and a row stays only while a row of the
other side that could match it may still arrive: a left row until the clock reaches `l - lower`, a right row
until it reaches `r + upper` (a timer per time); rows whose time is already past that when they arrive are not
kept. The clock is the watermark for rowtimes; for processing-time attributes (`proctime`) a row's time is the
operator's processing time when it arrives, and processing-time timers clear the state, as Flink's. An outer
side's row that expires without a match emits itself padded with NULLs then (+I), so the output is
insert-only. The output's watermark is held back by the larger bound (rows it emits can be that much older than
the input watermark), as Flink's, so a window downstream counts them. State and timers are checkpointed like
every keyed operator's.

The other side's matching times are found by bisection in a sorted list of the key's stored times (kept beside
the MapState, rebuilt from its keys after a restore), so a row costs O(log n + matches) however many rows the
key holds, and a timer removes the expired prefix of that list.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.state import MapStateDescriptor
from fluvial.table.planner.rex import Rex
from fluvial.table.runtime.join import TwoSidedJoin
from fluvial.table.values import epoch_millis

__all__ = ["IntervalJoinFunction"]


class IntervalJoinFunction(TwoSidedJoin):
    def __init__(
        self,
        names: Sequence[str],
        widths: tuple[int, int],
        times: tuple[int, int],
        bounds: tuple[int, int],
        join_type: str,
        condition: Rex | None,
        proctime: bool = False,
    ) -> None:
        super().__init__(names, widths, join_type, condition)
        self.times = times  # the time attribute column of each side, in its own row
        self.proctime = proctime  # processing-time attributes: a row's time is its arrival at this operator
        # a processing-time row is kept through the millisecond of its expiry (rows of that millisecond match it)
        self._slack = 1 if proctime else 0
        self._index: tuple[dict[Any, list[int]], dict[Any, list[int]]] = ({}, {})
        self.lower, self.upper = bounds  # lower <= left time - right time <= upper
        # rows it emits are up to this much older than the watermark (Flink's watermark delay of the join)
        self.output_watermark_delay = 0 if proctime else max(-self.lower, self.upper, 0)

    def open(self, runtime_context: Any) -> None:
        self._states = tuple(
            runtime_context.get_map_state(MapStateDescriptor(f"interval-join-{side}")) for side in ("left", "right")
        )
        self._index = ({}, {})
        self._compile_condition()

    def _times(self, side: int, key: Any) -> list[int]:
        """The sorted times `side` stores for `key`: derived from the MapState's keys, so nothing extra is
        checkpointed (after a restore the list is rebuilt on the key's first row)."""
        index = self._index[side]
        times = index.get(key)
        if times is None:
            times = index[key] = sorted(self._states[side].keys())
        return times

    def _expiry(self, time: int, side: int) -> int:
        """The clock after which no row of the other side can match a row of `side` at `time`."""
        return time - self.lower if side == 0 else time + self.upper

    def process_element1(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 0, ctx)

    def process_element2(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 1, ctx)

    def _process(self, row: Row, side: int, ctx: Any) -> list[Row]:
        values = tuple(row._values)
        timers = ctx.timer_service()
        if self.proctime:
            time = now = timers.current_processing_time()
        else:
            stamp = values[self.times[side]]
            if stamp is None:  # a NULL time matches nothing; an outer side keeps its row, padded
                return [self._padded_row(values, side)] if self._outer(side) else []
            time = epoch_millis(stamp)
            now = timers.current_watermark()
        key = ctx.get_current_key()
        # the other side's times that match: left - right in [lower, upper]
        low, high = (time - self.upper, time - self.lower) if side == 0 else (time + self.lower, time + self.upper)
        other_state = self._states[1 - side]
        other_times = self._times(1 - side, key)
        out: list[Row] = []
        matched = False
        for i in range(bisect_left(other_times, low), bisect_right(other_times, high)):
            other_time = other_times[i]
            entries = other_state.get(other_time)
            changed = False
            for entry in entries:
                joined = self._joined(values, entry[0], side)
                if self._fits(joined):
                    out.append(_create_row(self.names, joined, RowKind.INSERT))
                    matched = True
                    if not entry[1]:
                        entry[1] = changed = True
            if changed:
                other_state.put(other_time, entries)
        cleanup = self._expiry(time, side) + self._slack
        if cleanup > now:
            state = self._states[side]
            entries = state.get(time)
            if entries is None:
                entries = []
                insort(self._times(side, key), time)
            entries.append([values, matched])
            state.put(time, entries)
            if self.proctime:
                timers.register_processing_time_timer(cleanup)
            else:
                timers.register_event_time_timer(cleanup)
        elif not matched and self._outer(side):
            out.append(self._padded_row(values, side))
        return out

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        out: list[Row] = []
        key = ctx.get_current_key()
        for side in (0, 1):
            state = self._states[side]
            times = self._times(side, key)
            # expired: expiry(time) + slack <= timestamp; expiry is increasing in time, so a prefix
            cutoff = timestamp - self._slack + (self.lower if side == 0 else -self.upper)
            expired = bisect_right(times, cutoff)
            for time in times[:expired]:
                if self._outer(side):
                    for values, matched in state.get(time):
                        if not matched:
                            out.append(self._padded_row(values, side))
                state.remove(time)
            del times[:expired]
            if not times:
                self._index[side].pop(key, None)
        return out

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_index"] = ({}, {})
        return state
