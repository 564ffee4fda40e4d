"""The bundle functions of mini-batch GROUP BY aggregation (Flink's MiniBatchGroupAggFunction,
MiniBatchLocalGroupAggFunction and MiniBatchGlobalGroupAggFunction), run by the mini-batch operator
(`MapBundleSpec`): a bundle holds, per group key, what arrived since the last flush, and finishing it touches
each key's state once and emits at most one change per key.

- `MiniBatchGroupAggFunction` (one phase, after the hash exchange): buffers the key's rows; on finish folds them
  into the key's accumulators in keyed state and emits `+I`, `-U`/`+U` or `-D` for the whole batch.
- `LocalGroupAggFunction` (before the exchange, no state): folds rows into fresh accumulators per key and emits
  one partial row per key and batch: the key columns, each aggregate's accumulator, the row count.
- `GlobalGroupAggFunction` (after the exchange): merges the partial rows of a key, then merges that into the
  key's accumulators in keyed state and emits the change, as the one-phase function does.

Keyed state has the layout of `GroupAggFunction` (rows accumulated, accumulators, results last emitted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import Function
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.table.planner.rex import AggCall
from fluvial.table.runtime.aggregators import AggregateSet

__all__ = ["MiniBatchGroupAggFunction", "LocalGroupAggFunction", "GlobalGroupAggFunction", "group_changes"]

_ACCUMULATE = (RowKind.INSERT, RowKind.UPDATE_AFTER)


def group_changes(
    names: list[str], keys: list, previous: list | None, current: list | None, update_before: bool
) -> list[Row]:
    """The changelog of one key after a batch: `current` None means the key has no rows left."""
    if current is None:
        return [] if previous is None else [_create_row(names, keys + previous, RowKind.DELETE)]
    if previous is None:
        return [_create_row(names, keys + current, RowKind.INSERT)]
    if current == previous:
        return []
    after = _create_row(names, keys + current, RowKind.UPDATE_AFTER)
    if not update_before:
        return [after]
    return [_create_row(names, keys + previous, RowKind.UPDATE_BEFORE), after]


class _StatefulBundle(Function):
    """Shared by the two functions that keep each key's accumulators in keyed state."""

    def __init__(
        self, names: Sequence[str], key_count: int, calls: Sequence[AggCall], state_ttl_millis: int = 0
    ) -> None:
        self.names = list(names)
        self.key_count = key_count
        self.calls = tuple(calls)
        self.state_ttl_millis = state_ttl_millis
        self.generate_update_before = True
        self._aggs: AggregateSet | None = None
        self._state: Any = None

    def open(self, runtime_context: Any) -> None:
        from fluvial.table.runtime.functions import _with_ttl

        self._aggs = AggregateSet(self.calls)
        self._state = runtime_context.get_state(_with_ttl(ValueStateDescriptor("group-agg"), self.state_ttl_millis))

    def _emit(self, stored: Any, keys: list, count: int, accs: Any, out: list) -> None:
        """Write the key's new state and add its change to `out` (the current key is set)."""
        state, aggs = self._state, self._aggs
        assert aggs is not None
        previous = None if stored is None else stored[2]
        if count <= 0:
            state.clear()
            out.extend(group_changes(self.names, keys, previous, None, self.generate_update_before))
            return
        current = aggs.values(accs)
        state.update((count, accs, current))
        out.extend(group_changes(self.names, keys, previous, current, self.generate_update_before))

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_aggs"] = state["_state"] = None
        return state


class MiniBatchGroupAggFunction(_StatefulBundle):
    """One-phase mini-batch GROUP BY: a bundle entry is the key's rows of the batch, in arrival order."""

    def add_input(self, rows: list | None, row: Row) -> list:
        if rows is None:
            return [row]
        rows.append(row)
        return rows

    def finish_bundle(self, bundle: dict, context: Any) -> list:
        aggs = self._aggs
        assert aggs is not None
        accumulate, retract = aggs.accumulate, aggs.retract
        key_count, state = self.key_count, self._state
        out: list = []
        for key, rows in bundle.items():
            context.set_current_key(key)
            stored = state.value()
            if stored is None:
                count, accs = 0, aggs.create()
            else:
                count, accs, _ = stored
            for row in rows:
                values = row._values
                if row._row_kind in _ACCUMULATE:
                    accumulate(accs, values)
                    count += 1
                elif count > 0:
                    retract(accs, values)
                    count -= 1
                # else: a retraction of a row this key never saw (state expired): nothing to take back
            if stored is None and count <= 0:
                continue
            self._emit(stored, list(rows[0]._values[:key_count]), count, accs, out)
        return out


class LocalGroupAggFunction(Function):
    """The local phase of two-phase aggregation: no state; one partial row per key and batch."""

    def __init__(self, names: Sequence[str], key_count: int, calls: Sequence[AggCall]) -> None:
        self.names = list(names)
        self.key_count = key_count
        self.calls = tuple(calls)
        self._aggs: AggregateSet | None = None

    def open(self, runtime_context: Any) -> None:
        self._aggs = AggregateSet(self.calls)

    def add_input(self, partial: list | None, row: Row) -> list:
        aggs = self._aggs
        assert aggs is not None
        values = row._values
        if partial is None:
            partial = [values[: self.key_count], 0, aggs.create()]
        if row._row_kind in _ACCUMULATE:
            aggs.accumulate(partial[2], values)
            partial[1] += 1
        else:
            aggs.retract(partial[2], values)
            partial[1] -= 1
        return partial

    def finish_bundle(self, bundle: dict, context: Any) -> list:
        names = self.names
        return [_create_row(names, [*keys, *state[0], count], RowKind.INSERT) for keys, count, state in bundle.values()]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_aggs"] = None
        return state


class GlobalGroupAggFunction(_StatefulBundle):
    """The global phase: merges a key's partial rows (keys, accumulators..., row count), then the key's state."""

    def add_input(self, merged: list | None, row: Row) -> list:
        aggs = self._aggs
        assert aggs is not None
        values = row._values
        key_count = self.key_count
        accs = list(values[key_count:-1])
        if merged is None:
            return [list(values[:key_count]), values[-1], [accs, [None] * len(accs)]]
        aggs.merge(merged[2], [accs, None])
        merged[1] += values[-1]
        return merged

    def finish_bundle(self, bundle: dict, context: Any) -> list:
        aggs = self._aggs
        assert aggs is not None
        state = self._state
        out: list = []
        for key, (keys, delta, partial) in bundle.items():
            context.set_current_key(key)
            stored = state.value()
            if stored is None:
                if delta <= 0:
                    continue  # only retractions of rows whose state expired: nothing to take back
                count, accs = 0, aggs.create()
            else:
                count, accs, _ = stored
            aggs.merge(accs, partial)
            self._emit(stored, keys, count + delta, accs, out)
        return out
