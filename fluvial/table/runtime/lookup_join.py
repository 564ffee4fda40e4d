"""The lookup join at run time (Flink's LookupJoinRunner, sync mode): for each input row, the lookup table's
rows whose key columns equal the row's (from the partial cache when it has them, else from the connector's
lookup), each checked against the rest of the ON condition; a LEFT join emits the input row padded with NULLs
when none fits. Output rows keep the input row's kind. Nothing is kept in state: a lookup reads the table as it
is when the row is processed, so a restored job's replayed rows may meet newer dimension rows (as in Flink)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, _create_row
from fluvial.datastream.functions import FlatMapFunction
from fluvial.table.connectors.lookup import LookupFunction, cached
from fluvial.table.planner.rex import Rex
from fluvial.table.runtime.codegen import compile_expression

__all__ = ["LookupJoinFunction"]


class LookupJoinFunction(FlatMapFunction):
    def __init__(
        self,
        names: Sequence[str],
        lookup: LookupFunction,
        input_keys: Sequence[int],
        lookup_width: int,
        left_outer: bool,
        condition: Rex | None,
    ) -> None:
        self.names = list(names)
        self.lookup = lookup
        self.input_keys = tuple(input_keys)
        self.lookup_width = lookup_width
        self.left_outer = left_outer
        self.condition = condition
        self._cache: Any = None
        self._condition: Any = None
        self._opened = False

    def open(self, runtime_context: Any) -> None:
        self.lookup.open()
        self._cache = cached(self.lookup)
        self._condition = compile_expression(self.condition) if self.condition is not None else None
        self._opened = True

    def flat_map(self, value: Row) -> Iterable[Row]:
        if not self._opened:
            self.open(None)
        values = value._values
        key = tuple(values[i] for i in self.input_keys)
        rows: list | None = [] if any(k is None for k in key) else None  # NULL equals nothing
        if rows is None and self._cache is not None:
            rows = self._cache.get(key)
        if rows is None:
            rows = self.lookup.lookup(key)
            if self._cache is not None:
                self._cache.put(key, rows)
        kind = value._row_kind
        out = []
        for found in rows:
            joined = [*values, *found]
            if self._condition is None or self._condition(joined) is True:
                out.append(_create_row(self.names, joined, kind))
        if not out and self.left_outer:
            out.append(_create_row(self.names, [*values, *([None] * self.lookup_width)], kind))
        return out

    def close(self) -> None:
        if self._opened:
            self.lookup.close()
            self._opened = False

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_cache"] = state["_condition"] = None
        state["_opened"] = False
        return state
