"""OVER aggregation with a bounded frame ordered by event time (Flink's RowTimeRowsBoundedPrecedingFunction and
RowTimeRangeBoundedPrecedingFunction), on fluvial's keyed state and event-time timers.

Rows wait in keyed map state under their timestamp until the watermark passes it (an event-time timer at the
timestamp); then, in time order, each row is added to the running aggregates and the rows that left the frame
are retracted from them:
- `ROWS BETWEEN n PRECEDING AND CURRENT ROW`: the frame is the row and the n rows before it (by time, then
  arrival); each row is emitted with the aggregates of its own frame.
- `RANGE BETWEEN INTERVAL 'd' PRECEDING AND CURRENT ROW`: the frame is every row whose time is within d of the
  current row's time, ties included; the rows of one timestamp are emitted with the same aggregates.

A row whose time is not after the last timer that fired for its key is late and dropped, as Flink drops it.
Rows stay in state only while a later row's frame can still reach them. A RANGE frame's key also gets Flink's
cleanup timer (1.5 frame lengths after its newest row): when it fires before a newer row moved it, the key's
state is cleared; a stale cleanup timer counts as a fired timer for lateness, as in Flink.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import KeyedProcessFunction
from fluvial.table.planner.rex import AggCall
from fluvial.table.runtime.aggregators import AggregateSet
from fluvial.table.values import epoch_millis

__all__ = ["BoundedOverAggFunction", "register_timer", "row_time"]

log = logging.getLogger(__name__)


def row_time(value: Row, rowtime: int, proctime: bool, timers: Any) -> int | None:
    """An OVER row's time in milliseconds: its rowtime column's, or (`proctime`) the operator's clock + 1 ms, so
    the rows of one millisecond are peers emitted by the timer at its end; None for a NULL rowtime."""
    if proctime:
        return int(timers.current_processing_time()) + 1
    stamp = value._values[rowtime]
    return None if stamp is None else epoch_millis(stamp)


def register_timer(timers: Any, proctime: bool, millis: int) -> None:
    if proctime:
        timers.register_processing_time_timer(millis)
    else:
        timers.register_event_time_timer(millis)


class BoundedOverAggFunction(KeyedProcessFunction):
    """`rows_frame`: `preceding` is a row count (n PRECEDING); else a time span in milliseconds.

    State per key: `over-rows` (timestamp → the rows of that timestamp, in arrival order), `over-acc`
    ([accumulators, last fired timer, rows in the ROWS frame, RANGE cleanup time or None]).

    `proctime`: ordered by a processing-time attribute (Flink's ProcTime{Rows,Range}BoundedPrecedingFunction): a
    row's time is the operator's clock + 1 ms when it arrives and its timers are processing-time timers; a RANGE
    frame then holds the rows that arrived within `preceding` ms before it, and nothing is late.
    """

    def __init__(
        self,
        names: Sequence[str],
        rowtime: int,
        rows_frame: bool,
        preceding: int,
        calls: Sequence[AggCall],
        proctime: bool = False,
    ) -> None:
        self.proctime = proctime
        self.names = list(names)
        self.rowtime = rowtime
        self.rows_frame = rows_frame
        self.preceding = preceding
        self.calls = tuple(calls)
        self._aggs: AggregateSet | None = None
        self._state: Any = None
        self._rows: Any = None
        self._late = 0

    def open(self, runtime_context: Any) -> None:
        from fluvial.datastream.state import MapStateDescriptor, ValueStateDescriptor

        self._aggs = AggregateSet(self.calls)
        self._state = runtime_context.get_state(ValueStateDescriptor("over-acc"))
        self._rows = runtime_context.get_map_state(MapStateDescriptor("over-rows"))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        timers = ctx.timer_service()
        millis = row_time(value, self.rowtime, self.proctime, timers)
        if millis is None:
            return ()
        state = self._state.value()
        if state is not None and state[1] is not None and millis <= state[1]:
            self._late += 1
            if self._late == 1 or self._late % 10_000 == 0:
                log.info("OVER aggregation dropped %d late rows so far (the latest at %d ms)", self._late, millis)
            return ()
        pending = self._rows.get(millis)
        if pending is None:
            pending = []
            register_timer(timers, self.proctime, millis)
        pending.append(list(value._values))
        self._rows.put(millis, pending)
        if not self.rows_frame:
            cleanup = state[3] if state is not None else None
            if cleanup is None or cleanup < millis + self.preceding + 1:
                cleanup = millis + self.preceding * 3 // 2 + 1
                register_timer(timers, self.proctime, cleanup)
                assert self._aggs is not None
                self._state.update([*(state or [self._aggs.create(), None, 0])[:3], cleanup])
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        assert self._aggs is not None
        state = self._state.value() or [self._aggs.create(), None, 0, None]
        acc, count, cleanup = state[0], state[2], state[3]
        if cleanup is not None and cleanup <= timestamp:
            self._state.clear()
            self._rows.clear()
            return ()
        rows = self._rows.get(timestamp)
        out: list[Row] = []
        if rows:
            if self.rows_frame:
                out, count = self._rows_frame(timestamp, rows, acc, count)
            else:
                out = self._range_frame(timestamp, rows, acc)
        self._state.update([acc, timestamp, count, cleanup])
        return out

    def _rows_frame(self, timestamp: int, rows: list, acc: Any, count: int) -> tuple[list[Row], int]:
        """Each row joins the frame; while the frame holds more than `preceding` + 1 rows, its oldest leaves (the
        oldest timestamp's first row; a timestamp emptied this way leaves state)."""
        assert self._aggs is not None
        out = []
        oldest_time: int | None = None
        oldest: list = []
        taken = 0
        for values in rows:
            self._aggs.accumulate(acc, values)
            if count > self.preceding:
                if oldest_time is None:
                    oldest_time = min(self._rows.keys())
                    oldest = self._rows.get(oldest_time)
                self._aggs.retract(acc, oldest[taken])
                taken += 1
                if taken == len(oldest):  # never this timestamp's rows: the current row stays in its frame
                    self._rows.remove(oldest_time)
                    oldest_time, taken = None, 0
            else:
                count += 1
            out.append(_create_row(self.names, values + self._aggs.values(acc), RowKind.INSERT))
        if oldest_time is not None and taken:
            self._rows.put(oldest_time, oldest[taken:])
        return out, count

    def _range_frame(self, timestamp: int, rows: list, acc: Any) -> list[Row]:
        """The rows older than `timestamp - preceding` leave the frame (and state); this timestamp's rows join it."""
        assert self._aggs is not None
        limit = timestamp - self.preceding
        for time in [t for t in self._rows.keys() if t < limit]:
            for values in self._rows.get(time):
                self._aggs.retract(acc, values)
            self._rows.remove(time)
        for values in rows:
            self._aggs.accumulate(acc, values)
        results = self._aggs.values(acc)
        return [_create_row(self.names, values + results, RowKind.INSERT) for values in rows]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_aggs"] = state["_state"] = state["_rows"] = None
        state["_late"] = 0
        return state
