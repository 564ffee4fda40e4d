"""The event-time interval join (Flink's RowTimeIntervalJoin) on keyed state.

Both inputs are keyed by the join key. A left row at time l matches the right rows at times r with
`lower <= l - r <= upper` that satisfy the rest of the condition, whichever arrives second emitting the joined
row (+I). Each side keeps its rows in a MapState from time to rows, and a row stays only while a row of the
other side that could match it may still arrive: a left row until the watermark reaches `l - lower`, a right
row until it reaches `r + upper` (an event-time timer per time); rows whose time is already past that when
they arrive are not kept. An outer side's row that expires without a match emits itself padded with NULLs
then (+I), so the output is insert-only. The output's watermark is held back by the larger bound (rows it
emits can be that much older than the input watermark), as Flink's, so a window downstream counts them.
State and timers are checkpointed like every keyed operator's.
"""

from __future__ import annotations

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
    ) -> None:
        super().__init__(names, widths, join_type, condition)
        self.times = times  # the rowtime column of each side, in its own row
        self.lower, self.upper = bounds  # lower <= left time - right time <= upper
        # rows it emits are up to this much older than the watermark (Flink's watermark delay of the join)
        self.output_watermark_delay = max(-self.lower, self.upper, 0)

    def open(self, runtime_context: Any) -> None:
        self._states = tuple(
            runtime_context.get_map_state(MapStateDescriptor(f"interval-join-{side}")) for side in ("left", "right")
        )
        self._compile_condition()

    def _expiry(self, time: int, side: int) -> int:
        """The watermark after which no row of the other side can match a row of `side` at `time`."""
        return time - self.lower if side == 0 else time + self.upper

    def process_element1(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 0, ctx)

    def process_element2(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 1, ctx)

    def _process(self, row: Row, side: int, ctx: Any) -> list[Row]:
        values = tuple(row._values)
        stamp = values[self.times[side]]
        if stamp is None:  # a NULL time matches nothing; an outer side keeps its row, padded
            return [self._padded_row(values, side)] if self._outer(side) else []
        time = epoch_millis(stamp)
        # the other side's times that match: left - right in [lower, upper]
        low, high = (time - self.upper, time - self.lower) if side == 0 else (time + self.lower, time + self.upper)
        other_state = self._states[1 - side]
        out: list[Row] = []
        matched = False
        for other_time in list(other_state.keys()):
            if not low <= other_time <= high:
                continue
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
        expiry = self._expiry(time, side)
        if expiry > ctx.timer_service().current_watermark():
            state = self._states[side]
            entries = state.get(time) or []
            entries.append([values, matched])
            state.put(time, entries)
            ctx.timer_service().register_event_time_timer(expiry)
        elif not matched and self._outer(side):
            out.append(self._padded_row(values, side))
        return out

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        out: list[Row] = []
        for side in (0, 1):
            state = self._states[side]
            for time in list(state.keys()):
                if self._expiry(time, side) > timestamp:
                    continue
                if self._outer(side):
                    for values, matched in state.get(time):
                        if not matched:
                            out.append(self._padded_row(values, side))
                state.remove(time)
        return out
