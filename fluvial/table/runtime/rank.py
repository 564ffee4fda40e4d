"""Top-N over an updating input (Flink's RetractableTopNFunction, the Rank's RetractStrategy).

`ROW_NUMBER() OVER (PARTITION BY k ORDER BY s) <= n` over an aggregation: a row may leave and come back, and a
row of the top N may be retracted, so the operator keeps every row of the partition (not only the top N, as
the insert-only TopNFunction can), as Flink does: the partition's distinct sort keys in order with their row
counts (one small value), and the rows of each sort key in arrival order (a map entry per sort key), so a
change reads and writes the sort keys and the few rows up to rank N + 1, never the whole partition's rows.
After each change it emits
what changed in the top N, as Flink does: with the rank number in the output, each rank whose row changed is
updated (-U old, +U new), a rank filled for the first time is inserted and a rank left empty deleted; without
it (Flink's "no ranking output" optimisation) only the rows entering or leaving the top N are emitted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.state import MapStateDescriptor, ValueStateDescriptor
from fluvial.table.runtime.functions import TopNFunction, _with_ttl, sorts_before

__all__ = ["RetractableTopNFunction"]

logger = logging.getLogger(__name__)

_ACCUMULATE = (RowKind.INSERT, RowKind.UPDATE_AFTER)


class RetractableTopNFunction(TopNFunction):
    """Per key, the first `limit` rows by the sort columns over a changelog (+I/+U add a row, -U/-D take one).

    A row added twice is held twice. A retraction of a row the state does not hold is a stale-state case: with
    `table.exec.state.ttl` the row expired, so it is skipped with a warning, as Flink does; without a TTL it is
    an error in the input. A sort key whose rows expired while the sort keys lived on is dropped when met.
    """

    def open(self, runtime_context: Any) -> None:
        ttl = self.state_ttl_millis
        self._key_sort = tuple((position, descending) for position, (_, descending) in enumerate(self.sort))
        self._keys = runtime_context.get_state(_with_ttl(ValueStateDescriptor("top-n-sort-keys"), ttl))
        self._rows = runtime_context.get_map_state(_with_ttl(MapStateDescriptor("top-n-rows"), ttl))

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        keys: list[list] = self._keys.value() or []  # [sort key, row count] in rank order
        values = list(value._values)
        sort_key = tuple(values[i] for i, _ in self.sort)
        top = self._top(keys)  # the first `limit` + 1 rows before the change (stale sort keys dropped)
        low, high = 0, len(keys)
        while low < high:  # the first sort key not before this row's
            middle = (low + high) // 2
            if sorts_before(self._key_sort, keys[middle][0], sort_key):
                low = middle + 1
            else:
                high = middle
        found = low < len(keys) and keys[low][0] == sort_key
        if value._row_kind in _ACCUMULATE:
            out = self._add(keys, low, found, sort_key, values, top)
        else:
            retracted = self._retract(keys, low, found, sort_key, values, top)
            if retracted is None:
                return ()
            out = retracted
        if keys:
            self._keys.update(keys)
        else:
            self._keys.clear()
        return out

    def _top(self, keys: list[list]) -> list[list]:
        """The partition's first `limit` + 1 rows in rank order, read sort key by sort key."""
        top: list[list] = []
        index = 0
        while index < len(keys) and len(top) <= self.limit:
            rows = self._rows.get(keys[index][0])
            if rows is None:  # its rows expired (table.exec.state.ttl): the sort key goes too
                del keys[index]
                continue
            top.extend(rows[: self.limit + 1 - len(top)])
            index += 1
        return top

    def _add(
        self, keys: list[list], index: int, found: bool, sort_key: tuple, values: list, top: list[list]
    ) -> list[Row]:
        """Hold the row after its ties (arrival order) and emit the top N's changes."""
        rows = self._rows.get(sort_key) if found else None
        if rows is None:
            if found:  # a stale sort key (its rows expired): start it afresh
                keys[index][1] = 0
            else:
                keys.insert(index, [sort_key, 0])
            rows = []
        rows.append(values)
        keys[index][1] += 1
        self._rows.put(sort_key, rows)
        position = 0
        while position < len(top) and not self._before(values, top[position]):
            position += 1
        if position >= self.limit:
            return []
        if not self.rank_output:
            out = [_create_row(self.names, values, RowKind.INSERT)]
            if len(top) >= self.limit:
                out.append(_create_row(self.names, top[self.limit - 1], RowKind.DELETE))
            return out
        return self._ranks_changed(top, top[:position] + [values] + top[position:])

    def _retract(
        self, keys: list[list], index: int, found: bool, sort_key: tuple, values: list, top: list[list]
    ) -> list[Row] | None:
        """Remove the first held row equal to `values` and emit the top N's changes (None: it is not held)."""
        rows = self._rows.get(sort_key) if found else None
        if rows is None or values not in rows:
            if self.state_ttl_millis > 0:
                logger.warning("Top-N skips the retraction of a row its state no longer holds (expired): %s", values)
                return None
            raise ValueError(
                f"Top-N received the retraction of a row it never received ({values}); its input must be a "
                "consistent changelog (every -U/-D after the +I/+U it retracts)"
            )
        rows.remove(values)
        keys[index][1] -= 1
        if rows:
            self._rows.put(sort_key, rows)
        else:
            self._rows.remove(sort_key)
            del keys[index]
        position = top.index(values) if values in top[: self.limit] else self.limit
        if position >= self.limit:
            return []
        if not self.rank_output:
            out = [_create_row(self.names, values, RowKind.DELETE)]
            if len(top) > self.limit:
                out.append(_create_row(self.names, top[self.limit], RowKind.INSERT))
            return out
        return self._ranks_changed(top, top[:position] + top[position + 1 :])

    def _ranks_changed(self, before: list[list], after: list[list]) -> list[Row]:
        """Each rank whose row changed: updated (-U old, +U new), inserted when new, deleted when emptied."""
        out: list[Row] = []
        for rank in range(min(max(len(before), len(after)), self.limit)):
            old = before[rank] if rank < len(before) else None
            new = after[rank] if rank < len(after) else None
            if old == new:
                continue  # a duplicate moved into its twin's rank, or a rank the change did not reach
            number = [rank + 1]
            if old is not None:
                kind = RowKind.DELETE if new is None else RowKind.UPDATE_BEFORE
                out.append(_create_row(self.names, old + number, kind))
            if new is not None:
                kind = RowKind.INSERT if old is None else RowKind.UPDATE_AFTER
                out.append(_create_row(self.names, new + number, kind))
        return out

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_rows"] = state["_keys"] = None
        return state
