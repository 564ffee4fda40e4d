"""SinkUpsertMaterializer: a changelog made correct upserts for a sink keyed by another key than the query's
(Flink's SinkUpsertMaterializer, planned by `fluvial.table.planner.upsert_materialize`).

An upsert sink (JDBC with a PRIMARY KEY, upsert-kafka) writes each change of a key over the last one, and
drops -U. That is right only when the changes of one sink key arrive in the order the query made them, one row
alive per key at a time. When the query's changelog is keyed otherwise (a join's result, a GROUP BY on other
columns than the sink's key), two different query rows may share a sink key, and their changes may arrive from
different subtasks in any order: a -U of the row the sink no longer shows, arriving after the +I of the row it
does, would delete the live row.

Keyed by the sink's key, this operator keeps the list of the rows currently alive for the key, in arrival
order, and the sink sees the last one:
- `+I`/`+U`: the row is appended (replacing the row with the same input upsert key, when the input has one:
  that row moves to the end, so the sink always shows the list's last row) and emitted: `+I` when the key had
  no row, `+U` otherwise;
- `-U`/`-D`: the first equal row (by the input's upsert key if it has one, else by all columns) is removed; if
  the list is then empty, `-D` of the row; if the removed row was the last one, `+U` of the new last row;
  else nothing (the sink still shows the right row). A retraction of a row not in the list (its state expired
  under `table.exec.state.ttl`) is dropped and logged.

The lists are keyed state, so they are checkpointed, restored and rescaled like every keyed operator's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import KeyedProcessFunction
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.table.runtime.functions import _with_ttl

__all__ = ["SinkUpsertMaterializeFunction", "find_row"]

_LOG = logging.getLogger(__name__)

_INSERT = RowKind.INSERT
_UPDATE_AFTER = RowKind.UPDATE_AFTER
_DELETE = RowKind.DELETE
_UPDATE_BEFORE = RowKind.UPDATE_BEFORE
_NOTHING: tuple[Row, ...] = ()


def find_row(rows: Sequence[tuple[Any, ...]], values: tuple[Any, ...], upsert_key: tuple[int, ...] | None) -> int:
    """The index of the first of `rows` equal to `values` (by `upsert_key`'s columns when given, else by all
    columns), -1 when none is."""
    if upsert_key is None:
        for i, alive in enumerate(rows):
            if alive == values:
                return i
        return -1
    wanted = tuple(values[k] for k in upsert_key)
    for i, alive in enumerate(rows):
        if tuple(alive[k] for k in upsert_key) == wanted:
            return i
    return -1


class SinkUpsertMaterializeFunction(KeyedProcessFunction):  # type: ignore[misc]
    """Per sink key, the rows alive (module docstring). `upsert_key` is the input's own upsert key (column
    indexes) when it has one: rows are then matched by it; None matches rows by all their columns."""

    def __init__(
        self, names: Sequence[str], upsert_key: Sequence[int] | None = None, state_ttl_millis: int = 0
    ) -> None:
        self.names = list(names)
        self.upsert_key = tuple(upsert_key) if upsert_key else None
        self.state_ttl_millis = state_ttl_millis
        self._rows: Any = None
        self._cleared_logged = False

    def open(self, runtime_context: Any) -> None:
        descriptor = ValueStateDescriptor("sink-upsert-materializer-rows")
        self._rows = runtime_context.get_state(_with_ttl(descriptor, self.state_ttl_millis))

    def _find(self, rows: list[tuple[Any, ...]], values: tuple[Any, ...]) -> int:
        return find_row(rows, values, self.upsert_key)

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        state = self._rows
        rows: list[tuple[Any, ...]] = list(state.value() or ())
        values = tuple(value._values)
        kind = value._row_kind
        if kind is _UPDATE_BEFORE or kind is _DELETE:
            index = self._find(rows, values)
            if index < 0:
                if not self._cleared_logged:
                    self._cleared_logged = True
                    _LOG.info(
                        "SinkUpsertMaterializer dropped a retraction of a row it does not hold; its state may have "
                        "expired (table.exec.state.ttl) — the sink's table may keep a stale row for that key"
                    )
                return _NOTHING
            del rows[index]
            if not rows:
                state.clear()
                return (_create_row(self.names, list(values), _DELETE),)
            state.update(rows)
            if index == len(rows):  # the row the sink showed is gone: it shows the new last row
                return (_create_row(self.names, list(rows[-1]), _UPDATE_AFTER),)
            return _NOTHING
        out_kind = _UPDATE_AFTER if rows else _INSERT
        index = self._find(rows, values) if self.upsert_key is not None else -1
        if index >= 0:  # the same input row updated: it moves to the end, where the sink's shown row is
            del rows[index]
        rows.append(values)
        state.update(rows)
        return (_create_row(self.names, list(values), out_kind),)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_rows"] = None
        return state
