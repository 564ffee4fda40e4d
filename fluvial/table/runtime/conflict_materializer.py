"""`ON CONFLICT DO ERROR` and `ON CONFLICT DO NOTHING`: the watermark-compacting sink materializer (Flink's
WatermarkCompactingSinkMaterializer, planned by `fluvial.table.planner.upsert_materialize`).

When a query's upsert key differs from the sink's primary key, several query rows can be alive for one sink
key. `DO DEDUPLICATE` shows the last of them (`sink_materializer`); `DO ERROR` fails the job when two different
rows are alive for a key, `DO NOTHING` keeps showing the first. Judged per record, both would trip over the
transient states of an ordinary changelog: an aggregate's `-U` of one row can arrive after the `+U` of another
with the same sink key, so for a moment two rows are alive though the query never meant it. As Flink does,
this operator therefore buffers each key's changes until the watermark passes them and judges the key only
then, on the compacted result (which is why both strategies need every source to declare a watermark):
- the buffered changes are applied to the key's rows alive, in arrival order: `+I`/`+U` appends (or replaces
  the row with the same input upsert key in place; an `+U` right after its `-U` takes the retracted row's
  place), `-U`/`-D` removes the first equal row (by the upsert key when the input has one);
- no row alive: `-D` of the row the sink shows, if any;
- `ERROR`: two different rows alive fail the job, naming the sink key and both rows;
- the sink is then made to show the first row alive (`+I` when it showed nothing, `+U` when it showed another).
The rows alive, the buffer and the row shown are keyed state: checkpointed, restored and rescaled like every
keyed operator's, and they expire with `table.exec.state.ttl`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import KeyedProcessFunction
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.table.errors import TableException
from fluvial.table.runtime.functions import _with_ttl
from fluvial.table.runtime.sink_materializer import find_row

__all__ = ["ConflictError", "WatermarkCompactingMaterializeFunction"]

_LOG = logging.getLogger(__name__)

_RETRACTIONS = (RowKind.UPDATE_BEFORE, RowKind.DELETE)
_NOTHING: tuple[Row, ...] = ()


class ConflictError(TableException):
    """Two different rows alive for one sink key under `ON CONFLICT DO ERROR`."""


class WatermarkCompactingMaterializeFunction(KeyedProcessFunction):  # type: ignore[misc]
    """Per sink key, the changes buffered until the watermark, then the first row alive shown (module
    docstring). `error` selects DO ERROR (else DO NOTHING); `pk` are the sink key's column indexes and `table`
    the sink's name, for the error; `upsert_key` the input's own upsert key, when it has one."""

    def __init__(
        self,
        names: Sequence[str],
        pk: Sequence[int],
        table: str,
        error: bool,
        upsert_key: Sequence[int] | None = None,
        state_ttl_millis: int = 0,
    ) -> None:
        self.names = list(names)
        self.pk = tuple(pk)
        self.table = table
        self.error = error
        self.upsert_key = tuple(upsert_key) if upsert_key else None
        self.state_ttl_millis = state_ttl_millis
        self._alive: Any = None
        self._pending: Any = None
        self._shown: Any = None
        self._dropped_logged = False

    def open(self, runtime_context: Any) -> None:
        ttl = self.state_ttl_millis
        self._alive = runtime_context.get_state(_with_ttl(ValueStateDescriptor("conflict-rows-alive"), ttl))
        self._pending = runtime_context.get_state(_with_ttl(ValueStateDescriptor("conflict-pending"), ttl))
        self._shown = runtime_context.get_state(_with_ttl(ValueStateDescriptor("conflict-shown"), ttl))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        pending = list(self._pending.value() or ())
        pending.append((value._row_kind, tuple(value._values)))
        self._pending.update(pending)
        timers = ctx.timer_service()
        timers.register_event_time_timer(timers.current_watermark() + 1)
        return _NOTHING

    def _compact(self, rows: list[tuple[Any, ...]], pending: Sequence[tuple[RowKind, tuple[Any, ...]]]) -> None:
        hole = -1  # where the last retracted row stood: its +U takes that place
        for kind, values in pending:
            index = find_row(rows, values, self.upsert_key)
            if kind in _RETRACTIONS:
                if index < 0:
                    if not self._dropped_logged:
                        self._dropped_logged = True
                        _LOG.info(
                            "ON CONFLICT materializer dropped a retraction of a row it does not hold; its state may "
                            "have expired (table.exec.state.ttl)"
                        )
                    continue
                del rows[index]
                hole = index
            elif self.upsert_key is not None and index >= 0:
                rows[index] = values
            elif kind is RowKind.UPDATE_AFTER and 0 <= hole <= len(rows):
                rows.insert(hole, values)
                hole = -1
            else:
                rows.append(values)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Row]:
        pending = self._pending.value()
        if not pending:
            return _NOTHING
        self._pending.clear()
        rows = [tuple(r) for r in self._alive.value() or ()]
        self._compact(rows, [(kind, tuple(values)) for kind, values in pending])
        held = self._shown.value()
        shown = tuple(held) if held is not None else None
        if not rows:
            self._alive.clear()
            if shown is None:
                return _NOTHING
            self._shown.clear()
            return (_create_row(self.names, list(shown), RowKind.DELETE),)
        self._alive.update(rows)
        first = rows[0]
        if self.error:
            other = next((r for r in rows[1:] if r != first), None)
            if other is not None:
                key = ", ".join(f"{self.names[k]}={first[k]!r}" for k in self.pk)
                raise ConflictError(
                    f"ON CONFLICT DO ERROR: two different rows are alive for primary key ({key}) of sink table "
                    f"'{self.table}': {first} and {other}; use ON CONFLICT DO DEDUPLICATE to keep the last row "
                    "or DO NOTHING to keep the first"
                )
        if shown == first:
            return _NOTHING
        self._shown.update(first)
        kind = RowKind.INSERT if shown is None else RowKind.UPDATE_AFTER
        return (_create_row(self.names, list(first), kind),)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_alive"] = state["_pending"] = state["_shown"] = None
        return state
