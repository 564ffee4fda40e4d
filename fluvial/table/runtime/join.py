"""The regular streaming join (Flink's StreamingJoinOperator) on keyed state.

Both inputs are keyed by the join key; each side keeps, per key, a map from row to how many times it is
present (so a changelog's retractions remove exactly what they retract). A row of one side joins every
stored row of the other that satisfies the remaining condition. Output kinds, as Flink's:
- inner join: an accumulating input row (+I/+U) emits +I joined rows, a retracting one (-U/-D) emits -D;
- left outer join: a left row without a match emits `left + NULLs` (+I); when the first right row for it
  arrives that row is retracted (-D) before the joined rows (+I), and when the last match goes the padded
  row comes back (+I). Right-side NULL padding of right and full joins mirrors it.
`table.exec.state.ttl` expires a key's rows after that long without a write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import KeyedCoProcessFunction
from fluvial.datastream.state import MapStateDescriptor
from fluvial.table.planner.rex import Rex
from fluvial.table.runtime.codegen import compile_expression

__all__ = ["JoinFunction"]

_ACCUMULATE = (RowKind.INSERT, RowKind.UPDATE_AFTER)


class JoinFunction(KeyedCoProcessFunction):
    def __init__(
        self,
        names: Sequence[str],
        left_width: int,
        right_width: int,
        join_type: str,
        condition: Rex | None,
        state_ttl_millis: int = 0,
    ) -> None:
        self.names = list(names)
        self.left_width = left_width
        self.right_width = right_width
        self.join_type = join_type  # INNER, LEFT, RIGHT, FULL
        self.condition = condition
        self.state_ttl_millis = state_ttl_millis
        self._states: Any = None
        self._condition: Any = None

    def open(self, runtime_context: Any) -> None:
        from fluvial.table.runtime.functions import _with_ttl

        self._states = tuple(
            runtime_context.get_map_state(_with_ttl(MapStateDescriptor(f"join-{side}"), self.state_ttl_millis))
            for side in ("left", "right")
        )
        self._condition = compile_expression(self.condition) if self.condition is not None else None

    def process_element1(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 0)

    def process_element2(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 1)

    def _outer(self, side: int) -> bool:
        return (
            self.join_type == "FULL"
            or (self.join_type == "LEFT" and side == 0)
            or (self.join_type == "RIGHT" and side == 1)
        )

    def _joined(self, mine: tuple, other: tuple, side: int) -> list:
        return list(mine) + list(other) if side == 0 else list(other) + list(mine)

    def _matches(self, values: tuple, side: int) -> list[tuple[tuple, int]]:
        other_state = self._states[1 - side]
        out = []
        for other, count in other_state.items():
            joined = self._joined(values, other, side)
            if self._condition is None or self._condition(joined) is True:
                out.append((other, count))
        return out

    def _padded(self, values: tuple, side: int) -> list:
        nulls = [None] * (self.right_width if side == 0 else self.left_width)
        return list(values) + nulls if side == 0 else nulls + list(values)

    def _process(self, row: Row, side: int) -> list[Row]:
        values = tuple(row._values)
        state = self._states[side]
        accumulate = row._row_kind in _ACCUMULATE
        matches = self._matches(values, side)
        out: list[Row] = []
        emit = out.append
        other_outer = self._outer(1 - side)
        if accumulate:
            state.put(values, (state.get(values) or 0) + 1)
            if not matches:
                if self._outer(side):
                    emit(_create_row(self.names, self._padded(values, side), RowKind.INSERT))
                return out
            for other, count in matches:
                if other_outer and self._was_alone(other, 1 - side, values):
                    emit(_create_row(self.names, self._padded(other, 1 - side), RowKind.DELETE))
                for _ in range(count):
                    emit(_create_row(self.names, self._joined(values, other, side), RowKind.INSERT))
            return out
        present = state.get(values) or 0
        if present <= 1:
            state.remove(values)
        else:
            state.put(values, present - 1)
        if not matches:
            if self._outer(side):
                emit(_create_row(self.names, self._padded(values, side), RowKind.DELETE))
            return out
        for other, count in matches:
            for _ in range(count):
                emit(_create_row(self.names, self._joined(values, other, side), RowKind.DELETE))
            if other_outer and not self._matches(other, 1 - side):
                emit(_create_row(self.names, self._padded(other, 1 - side), RowKind.INSERT))
        return out

    def _was_alone(self, other: tuple, other_side: int, new: tuple) -> bool:
        """Whether `other` had no match before `new` arrived (its NULL-padded row is out and must go)."""
        for candidate, count in self._matches(other, other_side):
            if candidate != new or count > 1:
                return False
        return True

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_states"] = state["_condition"] = None
        return state
