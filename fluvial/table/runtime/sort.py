"""Streaming ORDER BY a time attribute (Flink's TemporalSort, RowTimeSortOperator) on keyed state and event-time
timers: rows wait in map state under their timestamp until the watermark passes it, then a timestamp's rows are
emitted sorted by the secondary ORDER BY columns. All rows go to one key (the sort is global, as in Flink); a row
whose time is not after the last timestamp emitted is late and dropped."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row
from fluvial.datastream.functions import KeyedProcessFunction
from fluvial.table.runtime.over import register_timer, row_time

__all__ = ["TemporalSortFunction", "sort_key"]


def sort_key(fields: Sequence[tuple[int, bool]]) -> Any:
    """A key function ordering rows by `fields` (column, descending), NULL first ascending and last descending,
    as Flink orders NULLs by default."""

    def compare(a: Row, b: Row) -> int:
        for index, descending in fields:
            x, y = a._values[index], b._values[index]
            if x == y:
                continue
            result = (-1 if x is None else 1) if x is None or y is None else (-1 if x < y else 1)
            return -result if descending else result  # NULL is the smallest: first ascending, last descending
        return 0

    return functools.cmp_to_key(compare)


class TemporalSortFunction(KeyedProcessFunction):
    """`proctime`: sorted by arrival (Flink's ProcTimeSortOperator): the rows of one millisecond of the operator's
    clock are emitted together, by the processing-time timer at its end, ordered by the other columns."""

    def __init__(self, rowtime: int, fields: Sequence[tuple[int, bool]], proctime: bool = False) -> None:
        self.proctime = proctime
        self.rowtime = rowtime
        self.fields = tuple(fields)
        self._rows: Any = None
        self._last: Any = None

    def open(self, runtime_context: Any) -> None:
        from fluvial.datastream.state import MapStateDescriptor, ValueStateDescriptor

        self._rows = runtime_context.get_map_state(MapStateDescriptor("sort-rows"))
        self._last = runtime_context.get_state(ValueStateDescriptor("sort-last"))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        timers = ctx.timer_service()
        millis = row_time(value, self.rowtime, self.proctime, timers)
        if millis is None:
            return ()
        last = self._last.value()
        if last is not None and millis <= last:
            return ()
        pending = self._rows.get(millis)
        if pending is None:
            pending = []
            register_timer(timers, self.proctime, millis)
        pending.append(value)
        self._rows.put(millis, pending)
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        rows = self._rows.get(timestamp)
        if rows is None:
            return ()
        if self.fields:
            rows = sorted(rows, key=sort_key(self.fields))
        self._rows.remove(timestamp)
        self._last.update(timestamp)
        return rows

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_rows"] = state["_last"] = None
        return state
