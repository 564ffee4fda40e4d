"""The DataStream functions a table plan runs: each is picklable config (names, rex trees, aggregate calls)
that builds its compiled logic in `open`, and keeps what it must remember in keyed state, so a table job
checkpoints, restores and rescales as any DataStream job.

Records are `Row`s carrying their RowKind (+I, -U, +U, -D): a changelog flows through Calc unchanged in kind,
and GroupAggFunction turns it into a new changelog, as Flink's GroupAggFunction does.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.common.time import MAX_WATERMARK
from fluvial.datastream.functions import FlatMapFunction, KeyedProcessFunction, KeySelector, MapFunction
from fluvial.datastream.state import StateDescriptor, ValueStateDescriptor
from fluvial.table.planner.rex import AggCall, Rex
from fluvial.table.runtime.aggregators import AggregateSet
from fluvial.table.runtime.codegen import compile_calc, compile_expression

__all__ = [
    "CalcFunction",
    "RowKeySelector",
    "GroupAggFunction",
    "LimitFunction",
    "ToRowFunction",
    "ToValuesFunction",
    "DeduplicateFunction",
]

logger = logging.getLogger(__name__)


class CalcFunction(FlatMapFunction):
    """Projection and filter of one row, its kind kept (Flink's Calc)."""

    def __init__(self, names: Sequence[str], projections: Sequence[Rex] | None, condition: Rex | None) -> None:
        self.names = list(names)
        self.projections = None if projections is None else tuple(projections)
        self.condition = condition
        self._calc: Any = None

    def open(self, runtime_context: Any) -> None:
        self._calc = compile_calc(self.projections, self.condition)

    def flat_map(self, value: Row) -> Iterable[Row]:
        if self._calc is None:
            self.open(None)
        out = self._calc(value._values)
        if out is None:
            return ()
        return (_create_row(self.names, out, value._row_kind),)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_calc"] = None
        return state


class CorrelateFunction(FlatMapFunction):
    """A table function's rows for each input row (join_lateral, flat_map); a left outer correlate keeps an
    input row the function gives nothing for, with NULLs."""

    def __init__(
        self,
        names: Sequence[str],
        function: Any,
        operands: Sequence[Rex] | None,
        keep_input: bool,
        width: int,
        left_outer: bool,
        condition: Rex | None,
        input_names: Sequence[str],
    ) -> None:
        self.names = list(names)
        self.function = function
        self.operands = None if operands is None else tuple(operands)
        self.keep_input = keep_input
        self.width = width
        self.left_outer = left_outer
        self.condition = condition
        self.input_names = list(input_names)
        self._args: Any = None
        self._condition: Any = None

    def open(self, runtime_context: Any) -> None:
        self._args = compile_calc(self.operands, None) if self.operands is not None else None
        self._condition = compile_expression(self.condition) if self.condition is not None else None

    def flat_map(self, value: Row) -> Iterable[Row]:
        if self._condition is None and self.condition is not None or self._args is None and self.operands:
            self.open(None)
        if self._args is None:
            args = [_create_row(self.input_names, list(value._values), RowKind.INSERT)]
        else:
            args = self._args(value._values)
        prefix = list(value._values) if self.keep_input else []
        produced = self.function._invoke(*args)
        out = []
        for result in produced if produced is not None else ():
            if isinstance(result, (Row, tuple, list)):
                values = list(result)
            else:
                values = [result]
            row_values = prefix + values
            if self._condition is not None and self._condition(row_values) is not True:
                continue
            out.append(_create_row(self.names, row_values, value._row_kind))
        if not out and self.left_outer:
            out.append(_create_row(self.names, prefix + [None] * self.width, value._row_kind))
        return out

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_args"] = state["_condition"] = None
        return state


class ToRowFunction(MapFunction):
    """Shapes a DataStream's records (tuples, Rows, scalars) as the table's rows (from_data_stream)."""

    def __init__(self, names: Sequence[str], atomic: bool, converters: Sequence[Any] | None = None) -> None:
        self.names = list(names)
        self.atomic = atomic
        self.converters = converters
        self._names_seen: Any = None

    def map(self, value: Any) -> Row:
        if self.atomic:
            values = [value]
            kind = RowKind.INSERT
        elif isinstance(value, Row):
            fields = getattr(value, "_fields", None)
            if fields is not None and (fields is self._names_seen or fields == self.names):
                self._names_seen = fields  # a typed stream's rows share one list of names: compared once
                if not self.converters:
                    return value  # already the table's row: its names, in its order
                values = list(value._values)
            else:
                named = fields and all(n in fields for n in self.names)
                values = [value[n] for n in self.names] if named else list(value)
            kind = value.get_row_kind()
        elif isinstance(value, dict):
            values = [value.get(n) for n in self.names]
            kind = RowKind.INSERT
        else:
            values = list(value)
            kind = RowKind.INSERT
        if self.converters:
            values = [v if c is None or v is None else c(v) for v, c in zip(values, self.converters)]
        return _create_row(self.names, values, kind)


class ToValuesFunction(MapFunction):
    """A table row as the type a DataStream expects: a named Row (to_data_stream / to_changelog_stream)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)

    def map(self, value: Row) -> Row:
        return _create_row(self.names, list(value._values), value._row_kind)


class ToRetractTuple(MapFunction):
    """`(True, row)` for an insert or update-after, `(False, row)` for a retraction (to_retract_stream)."""

    def map(self, value: Row) -> tuple:
        return (value._row_kind in (RowKind.INSERT, RowKind.UPDATE_AFTER), value)


class RowKeySelector(KeySelector):
    """The group key of a row: a tuple of the key columns' values (a Row key for several columns)."""

    def __init__(self, indexes: Sequence[int]) -> None:
        self.indexes = tuple(indexes)

    def get_key(self, value: Row) -> Any:
        values = value._values
        if not self.indexes:
            return 0
        if len(self.indexes) == 1:
            return values[self.indexes[0]]
        return tuple(values[i] for i in self.indexes)


class GroupAggFunction(KeyedProcessFunction):
    """GROUP BY aggregation over a changelog (Flink's GroupAggFunction).

    Per key, keyed state holds the accumulators and the number of rows accumulated. An insert or update-after
    accumulates, an update-before or delete retracts; then:
    1. the first row of a key emits `+I[keys, results]`;
    2. a later change emits `-U[previous]` and `+U[new]`, nothing when the results did not change;
    3. when the last row of a key is retracted, `-D[previous]` and the key's state is cleared.
    """

    def __init__(
        self,
        names: Sequence[str],
        key_count: int,
        calls: Sequence[AggCall],
        generate_update_before: bool = True,
        state_ttl_millis: int = 0,
        final_only: bool = False,
    ) -> None:
        self.names = list(names)
        self.state_ttl_millis = state_ttl_millis
        self.final_only = final_only
        self.key_count = key_count
        self.calls = tuple(calls)
        self.generate_update_before = generate_update_before
        self._aggs: AggregateSet | None = None
        self._state: Any = None

    def open(self, runtime_context: Any) -> None:
        self._aggs = AggregateSet(self.calls)
        self._state = runtime_context.get_state(_with_ttl(ValueStateDescriptor("group-agg"), self.state_ttl_millis))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        # state: (rows accumulated, accumulators, the results last emitted) — keeping the results saves
        # computing them twice per row
        aggs = self._aggs
        assert aggs is not None
        stored = self._state.value()
        values = value._values
        keys = values[: self.key_count]
        accumulate = value._row_kind in (RowKind.INSERT, RowKind.UPDATE_AFTER)
        if stored is None:
            if not accumulate:
                return ()  # a retraction of a row this key never saw (state expired): nothing to take back
            count, accs, previous = 0, aggs.create(), None
        else:
            count, accs, previous = stored
        if accumulate:
            aggs.accumulate(accs, values)
            count += 1
        else:
            aggs.retract(accs, values)
            count -= 1
        if self.final_only:
            # batch: one +I per key when the input ends (the final watermark fires the timer)
            if stored is None:
                ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
            self._state.update((count, accs, keys))
            return ()
        if count <= 0:
            self._state.clear()
            if previous is None:
                return ()
            return (_create_row(self.names, keys + previous, RowKind.DELETE),)
        current = aggs.values(accs)
        self._state.update((count, accs, current))
        if previous is None:
            return (_create_row(self.names, keys + current, RowKind.INSERT),)
        if current == previous:
            return ()
        if self.generate_update_before:
            return (
                _create_row(self.names, keys + previous, RowKind.UPDATE_BEFORE),
                _create_row(self.names, keys + current, RowKind.UPDATE_AFTER),
            )
        return (_create_row(self.names, keys + current, RowKind.UPDATE_AFTER),)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        stored = self._state.value()
        self._state.clear()
        if stored is None or stored[0] <= 0:
            return ()
        count, accs, keys = stored
        assert self._aggs is not None
        return (_create_row(self.names, keys + self._aggs.values(accs), RowKind.INSERT),)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_aggs"] = state["_state"] = None
        return state


class LimitFunction(KeyedProcessFunction):
    """OFFSET/FETCH without ORDER BY over inserts: the first rows to arrive (keyed on one constant key, so the
    count is checkpointed state)."""

    def __init__(self, offset: int, fetch: int | None) -> None:
        self.offset = offset
        self.fetch = fetch
        self._seen: Any = None

    def open(self, runtime_context: Any) -> None:
        self._seen = runtime_context.get_state(ValueStateDescriptor("limit-seen"))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        seen = self._seen.value() or 0
        self._seen.update(seen + 1)
        if seen < self.offset:
            return ()
        if self.fetch is not None and seen >= self.offset + self.fetch:
            return ()
        return (value,)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_seen"] = None
        return state


class DeduplicateFunction(KeyedProcessFunction):
    """Keeps, per key, the row with the smallest event time (`keep_last`: the largest, ties to the later
    row) — Flink's RowTimeDeduplicateFunction: the first row is +I, a row that replaces the kept one emits
    -U of the old and +U of the new. `proctime`: ordered by arrival (Flink's ProcTimeDeduplicate*Function): the
    first row is kept, or (`keep_last`) each row replaces the kept one."""

    def __init__(self, keep_last: bool, state_ttl_millis: int = 0, rowtime: int = 0, proctime: bool = False) -> None:
        self.proctime = proctime
        self.keep_last = keep_last
        self.state_ttl_millis = state_ttl_millis
        self.rowtime = rowtime
        self._row: Any = None

    def open(self, runtime_context: Any) -> None:
        self._row = runtime_context.get_state(_with_ttl(ValueStateDescriptor("dedup-row"), self.state_ttl_millis))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        if value._row_kind not in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            raise ValueError("deduplication takes an insert-only input; its input emits updates")
        previous = self._row.value()
        values = list(value._values)
        if previous is not None:
            old, new = previous[self.rowtime], values[self.rowtime]
            better = self.keep_last if self.proctime else new >= old if self.keep_last else new < old
            if not better:
                return ()
        self._row.update(values)
        if previous is None:
            return (_create_row(value._fields, values, RowKind.INSERT),)
        return (
            _create_row(value._fields, previous, RowKind.UPDATE_BEFORE),
            _create_row(value._fields, values, RowKind.UPDATE_AFTER),
        )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_row"] = None
        return state


class TopNFunction(KeyedProcessFunction):
    """Per key, the first `limit` rows by the sort columns, over inserts (Flink's AppendOnlyTopNFunction).

    A row that enters the top N is emitted (+I); the row it pushes out of the top N is deleted (-D). With the
    rank number in the output, every row whose rank changed is updated instead (-U old, +U new rank) and a
    rank filled for the first time is inserted. Rows equal in the sort columns keep their arrival order.
    """

    def __init__(
        self,
        names: Sequence[str],
        sort: Sequence[tuple[int, bool]],
        limit: int,
        rank_output: bool,
        state_ttl_millis: int = 0,
    ) -> None:
        self.names = list(names)
        self.sort = tuple(sort)
        self.limit = limit
        self.rank_output = rank_output
        self.state_ttl_millis = state_ttl_millis
        self._rows: Any = None
        self._before = functools.partial(sorts_before, self.sort)  # whether row a sorts strictly before row b

    def open(self, runtime_context: Any) -> None:
        self._rows = runtime_context.get_state(_with_ttl(ValueStateDescriptor("top-n"), self.state_ttl_millis))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        if value._row_kind not in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            raise ValueError(
                "this Top-N takes an insert-only input; over an input that emits updates the planner runs "
                "RetractableTopNFunction (fluvial.table.runtime.rank) instead"
            )
        rows = self._rows.value() or []
        values = list(value._values)
        position = len(rows)
        while position > 0 and self._before(values, rows[position - 1]):
            position -= 1
        if position >= self.limit:
            return ()
        previous = list(rows[: self.limit])
        rows.insert(position, values)
        del rows[self.limit :]
        self._rows.update(rows)
        if not self.rank_output:
            out = [_create_row(self.names, values, RowKind.INSERT)]
            if len(previous) == self.limit:
                out.insert(0, _create_row(self.names, previous[-1], RowKind.DELETE))
            return out
        out = []
        for rank in range(position, len(rows)):
            if rank < len(previous):
                out.append(_create_row(self.names, previous[rank] + [rank + 1], RowKind.UPDATE_BEFORE))
                out.append(_create_row(self.names, rows[rank] + [rank + 1], RowKind.UPDATE_AFTER))
            else:
                out.append(_create_row(self.names, rows[rank] + [rank + 1], RowKind.INSERT))
        return out

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_rows"] = None
        return state


def sorts_before(sort: Sequence[tuple[int, bool]], a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether `a` sorts strictly before `b` by `sort` (index, descending) (NULL is the smallest value, as in
    Flink)."""
    for index, descending in sort:
        x, y = a[index], b[index]
        if x == y:
            continue
        if x is None or y is None:
            return (x is None) != descending
        return bool(x > y if descending else x < y)
    return False


_Descriptor = TypeVar("_Descriptor", bound=StateDescriptor)


def _with_ttl(descriptor: _Descriptor, ttl_millis: int) -> _Descriptor:
    """`table.exec.state.ttl`: a key's state expires after that long without a write (processing time)."""
    if ttl_millis > 0:
        from fluvial.common.time import Duration
        from fluvial.datastream.state import StateTtlConfig

        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_millis(ttl_millis)).build())
    return descriptor


class ExpressionEvaluator:
    """One compiled rex, built lazily (used by watermark generators and sinks)."""

    def __init__(self, rex: Rex) -> None:
        self.rex = rex
        self._fn: Any = None

    def __call__(self, values: Sequence[Any]) -> Any:
        if self._fn is None:
            self._fn = compile_expression(self.rex)
        return self._fn(values)

    def __getstate__(self) -> dict:
        return {"rex": self.rex, "_fn": None}
