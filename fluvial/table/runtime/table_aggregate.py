"""The runtime of `flat_aggregate` (Flink's GroupTableAggFunction) on keyed state: per group key, the udtaf's
accumulator and the number of rows accumulated. Each input row first retracts what the group emitted before
(`-D` for each row its `emit_value` yields from the old accumulator), then accumulates (or retracts, for a -U/-D
input) and emits what `emit_value` yields now (`+I`); a group whose last row was retracted is forgotten."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import KeyedProcessFunction

__all__ = ["TableAggFunction"]


class TableAggFunction(KeyedProcessFunction):
    def __init__(self, names: Sequence[str], key_count: int, args: Sequence[int], function: Any) -> None:
        self.names = list(names)
        self.key_count = key_count
        self.args = tuple(args)
        self.function = function
        self._state: Any = None
        self._udtaf: Any = None

    def open(self, runtime_context: Any) -> None:
        from fluvial.datastream.state import ValueStateDescriptor
        from fluvial.table.udf import FunctionContext

        self._state = runtime_context.get_state(ValueStateDescriptor("table-agg"))
        self._udtaf = self.function._func
        self._udtaf.open(FunctionContext(runtime_context))

    def _emit(self, keys: list, accumulator: Any, kind: RowKind) -> list[Row]:
        out = []
        for result in self._udtaf.emit_value(accumulator) or ():
            values = list(result) if isinstance(result, (Row, tuple, list)) else [result]
            out.append(_create_row(self.names, keys + values, kind))
        return out

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        values = value._values
        keys = list(values[: self.key_count])
        args = [values[a] for a in self.args]
        if self.function._row_names is not None:  # `flat_aggregate(f)` with no arguments: one Row of every column
            args = [_create_row(list(self.function._row_names), args, RowKind.INSERT)]
        state = self._state.value()
        out: list[Row] = []
        if state is None:
            count, accumulator = 0, self._udtaf.create_accumulator()
        else:
            count, accumulator = state
            out.extend(self._emit(keys, accumulator, RowKind.DELETE))
        if value._row_kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            self._udtaf.accumulate(accumulator, *args)
            count += 1
        else:
            self._udtaf.retract(accumulator, *args)
            count -= 1
        if count <= 0:
            self._state.clear()
            return out
        out.extend(self._emit(keys, accumulator, RowKind.INSERT))
        self._state.update((count, accumulator))
        return out

    def close(self) -> None:
        if self._udtaf is not None:
            self._udtaf.close()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_state"] = state["_udtaf"] = None
        return state
