"""Interval joins (Flink's IntervalJoin): a join whose condition bounds one input's time attribute by the
other's (both rowtimes, or both processing-time attributes).

`a JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts + INTERVAL '2' SECOND` (or the
same bounds as `>=`/`>`/`<=`/`<` conjuncts) over two insert-only inputs whose `ts` columns are time attributes
is planned as an IntervalJoin: `lower <= a.ts - b.ts <= upper` in milliseconds. It keeps each row only as long
as the other side's watermark lets rows that could match it arrive, and emits only inserts (an outer join's
NULL-padded row when its row expires unmatched), so its output stays insert-only and keeps both rowtimes as
time attributes, as Flink's. A join with one bound only, or over an updating input, stays a regular join.
"""

from __future__ import annotations

from dataclasses import dataclass

from fluvial.table.planner.logical import ChangelogMode, Join
from fluvial.table.planner.rex import Call, InputRef, Literal, Rex
from fluvial.table.types import DataTypes

__all__ = ["IntervalJoin", "as_interval_join"]

_FLIP = {
    "greater_than": "less_than",
    "greater_than_or_equal": "less_than_or_equal",
    "less_than": "greater_than",
    "less_than_or_equal": "greater_than_or_equal",
}


@dataclass(frozen=True)
class IntervalJoin(Join):
    """`lower <= left[left_time] - right[right_time] <= upper` (ms), besides the keys and `condition`."""

    left_time: int = 0
    right_time: int = 0
    lower: int = 0
    upper: int = 0

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.INSERT_ONLY

    @property
    def proctime(self) -> bool:
        """Both bounded columns are processing-time attributes (Flink's ProcTimeIntervalJoin)."""
        return self.left.schema[self.left_time].type.time_attribute == "PROCTIME"

    def explain_terms(self) -> str:
        kind = {"INNER": "InnerJoin", "LEFT": "LeftOuterJoin", "RIGHT": "RightOuterJoin", "FULL": "FullOuterJoin"}
        return (
            f"IntervalJoin(joinType=[{kind[self.join_type]}], windowBounds=[isRowTime={str(not self.proctime).lower()}, "
            f"leftLowerBound={self.lower}, leftUpperBound={self.upper}, leftTimeIndex={self.left_time}, "
            f"rightTimeIndex={self.right_time}], where=[{self.condition_text}], select=[{', '.join(self.names)}])"
        )


def as_interval_join(join: Join) -> Join:
    """`join` as an IntervalJoin when its remaining condition bounds the left rowtime by the right one on both
    sides; else `join` itself."""
    if join.condition is None or any(i.changelog_mode is not ChangelogMode.INSERT_ONLY for i in join.inputs):
        return join
    width = len(join.left.schema)
    lower: int | None = None
    upper: int | None = None
    times: tuple[int, int] | None = None
    rest: list[Rex] = []
    for conjunct in _conjuncts(join.condition):
        bounds = _bounds(conjunct, join, width)
        if bounds is None or (times is not None and bounds[0] != times):
            rest.append(conjunct)
            continue
        times = bounds[0]
        for low, high in bounds[1]:
            if low is not None:
                lower = low if lower is None else max(lower, low)
            if high is not None:
                upper = high if upper is None else min(upper, high)
    if times is None or lower is None or upper is None:
        return join
    remainder: Rex | None = None
    for r in rest:
        remainder = r if remainder is None else Call("and", (remainder, r), DataTypes.BOOLEAN())
    return IntervalJoin(
        join.schema,
        join.left,
        join.right,
        join.join_type,
        join.left_keys,
        join.right_keys,
        remainder,
        join.condition_text,
        times[0],
        times[1] - width,
        lower,
        upper,
    )


def _conjuncts(rex: Rex) -> list[Rex]:
    if isinstance(rex, Call) and rex.op == "and":
        return _conjuncts(rex.operands[0]) + _conjuncts(rex.operands[1])
    return [rex]


def _offset(rex: Rex) -> tuple[int, int] | None:
    """`col`, `col + INTERVAL`, `col - INTERVAL` → (column index, offset ms); a time attribute column only."""
    if isinstance(rex, InputRef):
        return (rex.index, 0) if rex.type.time_attribute in ("ROWTIME", "PROCTIME") else None
    if (
        isinstance(rex, Call)
        and rex.op in ("plus", "minus")
        and isinstance(rex.operands[1], Literal)
        and rex.operands[1].type.name == "INTERVAL_DAY_TIME"
        and isinstance(rex.operands[1].value, int)
    ):
        inner = _offset(rex.operands[0])
        if inner is None:
            return None
        step = rex.operands[1].value
        return inner[0], inner[1] + (step if rex.op == "plus" else -step)
    return None


def _attribute(rex: Rex) -> str | None:
    while isinstance(rex, Call):
        rex = rex.operands[0]
    return rex.type.time_attribute


def _bounds(rex: Rex, join: Join, width: int) -> tuple[tuple[int, int], list[tuple[int | None, int | None]]] | None:
    """A conjunct bounding `left_time - right_time`: ((left index, right index), [(lower, upper), ...])."""
    if isinstance(rex, Call) and rex.op == "between" and len(rex.operands) == 3:
        value, low, high = rex.operands
        first = _bounds(Call("greater_than_or_equal", (value, low), rex.type), join, width)
        second = _bounds(Call("less_than_or_equal", (value, high), rex.type), join, width)
        if first is None or second is None or first[0] != second[0]:
            return None
        return first[0], first[1] + second[1]
    if not (isinstance(rex, Call) and rex.op in _FLIP and len(rex.operands) == 2):
        return None
    a, b = _offset(rex.operands[0]), _offset(rex.operands[1])
    if a is None or b is None or _attribute(rex.operands[0]) != _attribute(rex.operands[1]):
        return None  # a rowtime bounded by a processing time is no interval join, as in Flink
    op = rex.op
    if a[0] >= width > b[0]:  # right side first: flip to `left op' right`
        a, b, op = b, a, _FLIP[op]
    if not (a[0] < width <= b[0]):
        return None
    # left + da  op  right + db  ⇔  left - right  op  db - da
    bound = b[1] - a[1]
    if op == "greater_than":
        return (a[0], b[0]), [(bound + 1, None)]
    if op == "greater_than_or_equal":
        return (a[0], b[0]), [(bound, None)]
    if op == "less_than":
        return (a[0], b[0]), [(None, bound - 1)]
    return (a[0], b[0]), [(None, bound)]
