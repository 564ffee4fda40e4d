"""ChangelogNormalize: an upsert stream made a full changelog (Flink's ProcTimeDeduplicateKeepLastRowFunction
as the ChangelogNormalize node runs it).

An upsert source (upsert-kafka) knows only "this key now has this row" and "this key is gone"; a GROUP BY or a
join downstream needs the old row retracted before the new one arrives. Keyed by the primary key, the
operator keeps the last row of each key in keyed state (so it is checkpointed and rescaled as any keyed
state) and turns each record into what changed:
- an upsert of a new key: `+I`; of a known key with a different row: `-U` old, `+U` new; equal to the kept row:
  nothing (a re-read or duplicated message changes nothing);
- a delete (a tombstone) of a known key: `-D` of the kept row (the tombstone carries only the key); of an
  unknown key: nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import KeyedProcessFunction
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.table.runtime.functions import _with_ttl

__all__ = ["ChangelogNormalizeFunction"]

_DELETE = RowKind.DELETE
_UPDATE_BEFORE = RowKind.UPDATE_BEFORE
_NOTHING: tuple[Row, ...] = ()


class ChangelogNormalizeFunction(KeyedProcessFunction):
    def __init__(self, names: Sequence[str], state_ttl_millis: int = 0) -> None:
        self.names = list(names)
        self.state_ttl_millis = state_ttl_millis
        self._last: Any = None

    def open(self, runtime_context: Any) -> None:
        descriptor = ValueStateDescriptor("changelog-normalize-row")
        self._last = runtime_context.get_state(_with_ttl(descriptor, self.state_ttl_millis))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        state = self._last
        previous = state.value()
        kind = value._row_kind
        if kind is _DELETE or kind is _UPDATE_BEFORE:
            if previous is None:
                return _NOTHING
            state.clear()
            return (_create_row(self.names, previous, _DELETE),)
        values = value._values
        if previous is None:
            state.update(values)
            return (_create_row(self.names, values, RowKind.INSERT),)
        if previous == values:
            return _NOTHING
        state.update(values)
        return (
            _create_row(self.names, previous, _UPDATE_BEFORE),
            _create_row(self.names, values, RowKind.UPDATE_AFTER),
        )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_last"] = None
        return state
