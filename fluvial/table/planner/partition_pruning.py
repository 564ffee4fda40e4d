"""Partition pruning (Flink's PushPartitionIntoTableSourceScanRule, for the cases that are cheap to decide): a
WHERE clause's conjuncts `p = literal`, `p IN (literals)` and `p = a OR p = b` on a partition column `p`
tell a partitioned source which partition values can match, so it reads only those partitions. The filter
itself stays in the plan: pruning only skips files that no row of could pass it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fluvial.table.planner.logical import Calc, Scan
from fluvial.table.planner.rex import Call, InputRef, Literal, Rex
from fluvial.table.types import DataType
from fluvial.table.values import cast_value

__all__ = ["prune_partitions"]


def prune_partitions(node: Calc) -> Scan | None:
    """The Calc's input Scan told which partition values the Calc's condition allows; None when nothing prunes."""
    scan = node.input
    if not isinstance(scan, Scan) or not getattr(scan.source, "partition_keys", ()) or node.condition is None:
        return None
    source: Any = scan.source
    keys = source.partition_keys
    computed = scan.computed
    names = scan.names
    types = {c.name: c.type for c in source.columns}
    allowed: dict[str, set[Any]] = {}
    for conjunct in _conjuncts(node.condition):
        found = _allowed_values(conjunct, names, computed)
        if found is None or found[0] not in keys:
            continue
        column, values = found
        typed = _typed(values, types[column])
        if typed is None:
            continue
        allowed[column] = allowed[column] & typed if column in allowed else typed
    if not allowed:
        return None
    partition_filter = tuple((k, tuple(v)) for k, v in allowed.items())
    return replace(scan, source=replace(source, partition_filter=partition_filter))


def _conjuncts(rex: Rex) -> list[Rex]:
    if isinstance(rex, Call) and rex.op == "and":
        return [c for operand in rex.operands for c in _conjuncts(operand)]
    return [rex]


def _column(rex: Rex, names: list[str], computed: tuple[Rex | None, ...]) -> str | None:
    """The physical column a reference of the Scan's output is (through an identity computed column)."""
    if not isinstance(rex, InputRef):
        return None
    if computed:
        inner = computed[rex.index]
        return inner.name if isinstance(inner, InputRef) else None
    return names[rex.index]


def _allowed_values(rex: Rex, names: list[str], computed: tuple[Rex | None, ...]) -> tuple[str, list[Any]] | None:
    if not isinstance(rex, Call):
        return None
    if rex.op == "equals" and len(rex.operands) == 2:
        left, right = rex.operands
        if isinstance(left, Literal):
            left, right = right, left
        column = _column(left, names, computed)
        return None if column is None or not isinstance(right, Literal) else (column, [right.value])
    if rex.op == "in" and rex.operands and all(isinstance(o, Literal) for o in rex.operands[1:]):
        column = _column(rex.operands[0], names, computed)
        return None if column is None else (column, [o.value for o in rex.operands[1:]])  # type: ignore[union-attr]
    if rex.op == "or":
        found = [_allowed_values(o, names, computed) for o in rex.operands]
        if all(f is not None for f in found) and len({f[0] for f in found if f is not None}) == 1:
            return found[0][0], [v for f in found if f is not None for v in f[1]]  # type: ignore[index]
    return None


def _typed(values: list[Any], column_type: DataType) -> set[Any] | None:
    """The literals as the partition column's values (SQL's = casts them so); None when one does not convert."""
    out = set()
    for value in values:
        if value is None:
            continue  # `p = NULL` is never true
        try:
            out.add(value if column_type.is_string() and isinstance(value, str) else cast_value(value, column_type))
        except (ValueError, TypeError, ArithmeticError):
            return None
    return out
