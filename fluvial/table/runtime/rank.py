"""Top-N over an updating input (Flink's RetractableTopNFunction, the Rank's RetractStrategy).

`ROW_NUMBER() OVER (PARTITION BY k ORDER BY s) <= n` over an aggregation: a row may leave and come back, and a
row of the top N may be retracted, so the operator keeps every row of the partition (not only the top N, as
the insert-only TopNFunction can) sorted by `s`, rows equal in `s` in arrival order. After each change it emits
what changed in the top N, as Flink does: with the rank number in the output, each rank whose row changed is
updated (-U old, +U new), a rank filled for the first time is inserted and a rank left empty deleted; without
it (Flink's "no ranking output" optimisation) only the rows entering or leaving the top N are emitted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.table.runtime.functions import TopNFunction

__all__ = ["RetractableTopNFunction"]

logger = logging.getLogger(__name__)

_ACCUMULATE = (RowKind.INSERT, RowKind.UPDATE_AFTER)


class RetractableTopNFunction(TopNFunction):
    """Per key, the first `limit` rows by the sort columns over a changelog (+I/+U add a row, -U/-D take one).

    State is one list per key of the partition's rows in rank order (a row added twice is kept twice). A
    retraction of a row the state does not hold is a stale-state case: with `table.exec.state.ttl` the row
    expired, so it is skipped with a warning, as Flink does; without a TTL it is an error in the input.
    """

    def process_element(self, value: Row, ctx: Any) -> Iterable[Row]:
        rows: list[list] = self._rows.value() or []
        values = list(value._values)
        if value._row_kind in _ACCUMULATE:
            out = self._add(rows, values)
        else:
            retracted = self._retract(rows, values)
            if retracted is None:
                return ()
            out = retracted
        if rows:
            self._rows.update(rows)
        else:
            self._rows.clear()
        return out

    def _add(self, rows: list[list], values: list) -> list[Row]:
        """Insert after every row not sorting after it (ties keep arrival order); emit the top N's changes."""
        low, high = 0, len(rows)
        while low < high:
            middle = (low + high) // 2
            if self._before(values, rows[middle]):
                high = middle
            else:
                low = middle + 1
        position = low
        filled = min(len(rows), self.limit)
        rows.insert(position, values)
        if position >= self.limit:
            return []
        if not self.rank_output:
            out = [_create_row(self.names, values, RowKind.INSERT)]
            if filled == self.limit:
                out.append(_create_row(self.names, rows[self.limit], RowKind.DELETE))
            return out
        return self._shifted(rows, position, filled, old_offset=-1)

    def _retract(self, rows: list[list], values: list) -> list[Row] | None:
        """Remove the first held row equal to `values`; emit the top N's changes (None: the row is not held)."""
        low, high = 0, len(rows)
        while low < high:  # the first row not sorting before `values`: where its ties begin
            middle = (low + high) // 2
            if self._before(rows[middle], values):
                low = middle + 1
            else:
                high = middle
        position = low
        while position < len(rows) and rows[position] != values:
            if self._before(values, rows[position]):
                position = len(rows)
                break
            position += 1
        if position == len(rows):
            if self.state_ttl_millis > 0:
                logger.warning("Top-N skips the retraction of a row its state no longer holds (expired): %s", values)
                return None
            raise ValueError(
                f"Top-N received the retraction of a row it never received ({values}); its input must be a "
                "consistent changelog (every -U/-D after the +I/+U it retracts)"
            )
        filled = min(len(rows), self.limit)
        del rows[position]
        if position >= self.limit:
            return []
        if not self.rank_output:
            out = [_create_row(self.names, values, RowKind.DELETE)]
            if len(rows) >= self.limit:
                out.append(_create_row(self.names, rows[self.limit - 1], RowKind.INSERT))
            return out
        return self._shifted(rows, position, filled, old_offset=1, removed=values)

    def _shifted(
        self, rows: list[list], start: int, filled: int, old_offset: int, removed: list | None = None
    ) -> list[Row]:
        """The rank changes from `start` on: rows[r] now holds rank r+1, which rows[r + old_offset] held before
        the change (the removed row at `start` for a retraction); `filled` ranks were held before."""
        out: list[Row] = []
        for rank in range(start, max(filled, min(len(rows), self.limit))):
            if rank < filled:
                if old_offset < 0:
                    old = rows[rank + 1]
                elif rank == start and removed is not None:
                    old = removed
                else:
                    old = rows[rank - 1]
                if rank < len(rows) and rows[rank] == old:
                    continue  # a duplicate moved into its twin's rank: nothing changed there
                out.append(_create_row(self.names, old + [rank + 1], RowKind.UPDATE_BEFORE))
                if rank < len(rows):
                    out.append(_create_row(self.names, rows[rank] + [rank + 1], RowKind.UPDATE_AFTER))
                else:
                    out[-1] = _create_row(self.names, old + [rank + 1], RowKind.DELETE)
            else:
                out.append(_create_row(self.names, rows[rank] + [rank + 1], RowKind.INSERT))
        return out
