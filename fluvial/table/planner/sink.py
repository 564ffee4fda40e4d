"""Fits a query to the sink it is inserted into: same column count, each column implicitly cast to the
sink's type where Flink allows it (numeric widening, anything to STRING), else a clear mismatch error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Calc, Column, RelNode
from fluvial.table.planner.rex import Call, InputRef, Rex
from fluvial.table.types import DataType

__all__ = ["conform_to_sink", "metadata_last"]


def _assignable(source: DataType, target: DataType) -> bool:
    if source.name == "NULL" or source.without_time_attribute() == target:
        return True
    if source.family is target.family:
        return True
    return False


def conform_to_sink(node: RelNode, sink_columns: Sequence[Column], sink_name: str) -> RelNode:
    query_types = node.types
    if len(query_types) != len(sink_columns):
        raise ValidationException(
            f"Column types of query result and sink for 'default_catalog.default_database.{sink_name}' do not match.\n"
            f"Cause: Different number of columns.\n\nQuery schema: [{_show(node.schema)}]\n"
            f"Sink schema:  [{_show(sink_columns)}]"
        )
    rexes: list[Rex] = []
    changed = False
    for i, (q, s) in enumerate(zip(node.schema, sink_columns)):
        ref = InputRef(i, q.type, q.name)
        source = q.type.without_time_attribute()
        if s.type.nullable:
            source = source.nullable_()  # NOT NULL into a nullable column of its type: nothing to convert
        if (
            source.summary(False) == s.type.summary(False) or q.type.is_string() and s.type.is_string()
        ):  # no length enforcement (Flink's default: IGNORE)
            rexes.append(ref)
            continue
        if not _assignable(q.type, s.type):
            raise ValidationException(
                f"Column types of query result and sink for 'default_catalog.default_database.{sink_name}' do not "
                f"match.\nCause: Incompatible types for sink column '{s.name}' at position {i}.\n\n"
                f"Query schema: [{_show(node.schema)}]\nSink schema:  [{_show(sink_columns)}]"
            )
        rexes.append(Call("cast", (ref,), s.type))
        changed = True
    if not changed and [c.name for c in node.schema] == [c.name for c in sink_columns]:
        return node
    return Calc(tuple(sink_columns), node, tuple(rexes), None)


def _show(columns: Sequence[Column]) -> str:
    return ", ".join(f"{c.name}: {c.type.summary()}" for c in columns)


def metadata_last(node: RelNode, physical: Sequence[Column], metadata: Sequence[Any]) -> RelNode:
    """The query's rows rearranged as a connector's sink takes them: the physical columns, then the metadata
    columns (a projection only when some metadata column is declared before a physical one)."""
    names = node.names
    order = [names.index(c.name) for c in physical] + [names.index(m.name) for m in metadata]
    if order == list(range(len(names))):
        return node
    rexes = tuple(InputRef(i, node.schema[i].type, node.schema[i].name) for i in order)
    return Calc(tuple(node.schema[i] for i in order), node, rexes, None)
