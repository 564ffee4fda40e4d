"""What a table source can do itself, so the planner need not (Flink's `SupportsProjectionPushDown`,
`SupportsFilterPushDown`, `SupportsLimitPushDown`).

A source factory declares an ability by having the method; the planner's push-down rule
(`fluvial.table.planner.pushdown`) asks it while planning and records the answer in the `ConnectorContext`
the factory's `create_source` is later given: `context.projection` (the physical columns to produce, in that
order), `context.filters` (the conjuncts the source applies; over the physical columns, `InputRef` indices into
`context.columns`) and `context.limit` (a hint: the planner keeps its Limit). A source that produces a
projection emits rows of only those columns, named `context.produced_names`.

As in Flink, an accepted filter may also be returned as remaining (a best-effort filter): the planner keeps
every remaining one in a Calc after the scan, and trusts the source for the accepted-only ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from fluvial.table.planner.rex import Call, InputRef, Literal, Rex

if TYPE_CHECKING:
    from fluvial.table.connectors.base import ConnectorContext

__all__ = [
    "FilterPushDownResult",
    "SupportsProjectionPushDown",
    "SupportsFilterPushDown",
    "SupportsLimitPushDown",
    "referenced_columns",
    "comparison_with_literal",
]


@dataclass(frozen=True, slots=True)
class FilterPushDownResult:
    """Flink's `SupportsFilterPushDown.Result`: the conjuncts the source applies, and those a Calc after the
    scan must still apply (a conjunct may be in both)."""

    accepted: tuple[Rex, ...]
    remaining: tuple[Rex, ...]


@runtime_checkable
class SupportsProjectionPushDown(Protocol):
    """The source produces only the columns `context.projection` names (top-level column indices, each a
    one-element path; nested paths only when `supports_nested_projection`)."""

    def supports_nested_projection(self) -> bool: ...


@runtime_checkable
class SupportsFilterPushDown(Protocol):
    """Given the conjuncts of a WHERE over the table's physical columns, say which the source applies."""

    def apply_filters(self, context: ConnectorContext, filters: Sequence[Rex]) -> FilterPushDownResult: ...


@runtime_checkable
class SupportsLimitPushDown(Protocol):
    """Whether the source can stop after `limit` rows (per subtask): a hint, the planner's Limit stays."""

    def supports_limit(self, context: ConnectorContext) -> bool: ...


def referenced_columns(rex: Rex) -> set[int]:
    """The input columns a rex reads."""
    if isinstance(rex, InputRef):
        return {rex.index}
    if isinstance(rex, Call):
        out: set[int] = set()
        for operand in rex.operands:
            out |= referenced_columns(operand)
        return out
    return set()


_MIRRORED = {
    "equals": "equals",
    "not_equals": "not_equals",
    "less_than": "greater_than",
    "less_than_or_equal": "greater_than_or_equal",
    "greater_than": "less_than",
    "greater_than_or_equal": "less_than_or_equal",
}


def comparison_with_literal(rex: Rex) -> tuple[int, str, object] | None:
    """`col OP literal` (or `literal OP col`, mirrored) as (column, op, value), op one of `equals`,
    `not_equals`, `less_than`, `less_than_or_equal`, `greater_than`, `greater_than_or_equal`; None for anything else.
    What simple sources accept: a comparison they can test without the expression compiler."""
    if not isinstance(rex, Call) or rex.function is not None or rex.op not in _MIRRORED or len(rex.operands) != 2:
        return None
    left, right = rex.operands
    if isinstance(left, InputRef) and isinstance(right, Literal) and right.value is not None:
        return left.index, rex.op, right.value
    if isinstance(right, InputRef) and isinstance(left, Literal) and left.value is not None:
        return right.index, _MIRRORED[rex.op], left.value
    return None
