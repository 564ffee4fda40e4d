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

__all__ = ["JoinFunction", "TwoSidedJoin"]

_ACCUMULATE = (RowKind.INSERT, RowKind.UPDATE_AFTER)


class TwoSidedJoin(KeyedCoProcessFunction):
    """What every join of two keyed inputs shares (the regular, interval and window joins): the output's column
    names, each side's width, the join type, the remaining condition compiled on open, and how a row of one side
    is joined with or padded for the other. Side 0 is the left input, side 1 the right."""

    def __init__(self, names: Sequence[str], widths: tuple[int, int], join_type: str, condition: Rex | None) -> None:
        self.names = list(names)
        self.widths = widths
        self.join_type = join_type  # INNER, LEFT, RIGHT, FULL
        self.condition = condition
        self._states: Any = None
        self._condition: Any = None

    def _compile_condition(self) -> None:
        self._condition = compile_expression(self.condition) if self.condition is not None else None

    def _fits(self, joined: list) -> bool:
        """The remaining condition holds for a joined row (no condition: every pair joins)."""
        return self._condition is None or self._condition(joined) is True

    def _outer(self, side: int) -> bool:
        """A row of `side` without a match is emitted padded with NULLs."""
        return self.join_type == "FULL" or self.join_type == ("LEFT", "RIGHT")[side]

    def _joined(self, mine: Sequence, other: Sequence, side: int) -> list:
        return [*mine, *other] if side == 0 else [*other, *mine]

    def _padded(self, values: Sequence, side: int) -> list:
        nulls = [None] * self.widths[1 - side]
        return [*values, *nulls] if side == 0 else [*nulls, *values]

    def _padded_row(self, values: Sequence, side: int, kind: RowKind = RowKind.INSERT) -> Row:
        return _create_row(self.names, self._padded(values, side), kind)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_states"] = state["_condition"] = None
        return state


class JoinFunction(TwoSidedJoin):
    def __init__(
        self,
        names: Sequence[str],
        left_width: int,
        right_width: int,
        join_type: str,
        condition: Rex | None,
        state_ttl_millis: int = 0,
    ) -> None:
        super().__init__(names, (left_width, right_width), join_type, condition)
        self.state_ttl_millis = state_ttl_millis

    def open(self, runtime_context: Any) -> None:
        from fluvial.table.runtime.functions import _with_ttl

        self._states = tuple(
            runtime_context.get_map_state(_with_ttl(MapStateDescriptor(f"join-{side}"), self.state_ttl_millis))
            for side in ("left", "right")
        )
        self._compile_condition()

    def process_element1(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 0)

    def process_element2(self, value: Row, ctx: Any) -> Iterable[Row]:
        return self._process(value, 1)

    def _matches(self, values: tuple, side: int) -> list[tuple[tuple, int]]:
        other_state = self._states[1 - side]
        out = []
        for other, count in other_state.items():
            if self._fits(self._joined(values, other, side)):
                out.append((other, count))
        return out

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
                    emit(self._padded_row(values, side, RowKind.INSERT))
                return out
            for other, count in matches:
                if other_outer and self._was_alone(other, 1 - side, values):
                    emit(self._padded_row(other, 1 - side, RowKind.DELETE))
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
                emit(self._padded_row(values, side, RowKind.DELETE))
            return out
        for other, count in matches:
            for _ in range(count):
                emit(_create_row(self.names, self._joined(values, other, side), RowKind.DELETE))
            if other_outer and not self._matches(other, 1 - side):
                emit(self._padded_row(other, 1 - side, RowKind.INSERT))
        return out

    def _was_alone(self, other: tuple, other_side: int, new: tuple) -> bool:
        """Whether `other` had no match before `new` arrived (its NULL-padded row is out and must go)."""
        for candidate, count in self._matches(other, other_side):
            if candidate != new or count > 1:
                return False
        return True
