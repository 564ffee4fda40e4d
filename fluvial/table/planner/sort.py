"""Plans a streaming ORDER BY (SQL's and the Table API's `order_by`) onto a TemporalSort, with Flink's rule: the
first sort key is a time attribute, ascending."""

from __future__ import annotations

from collections.abc import Sequence

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import RelNode, TemporalSort

__all__ = ["plan_temporal_sort"]


def plan_temporal_sort(input_node: RelNode, order: Sequence[tuple[str, bool]]) -> RelNode:
    """ORDER BY (column, descending) pairs of `input_node` in a streaming query: Flink sorts only by a time
    attribute ascending first (then any columns)."""
    names = input_node.names
    for name, _ in order:
        if name not in names:
            raise ValidationException(f"ORDER BY takes columns of the query's result; '{name}' is none of {names}")
    (first, descending), rest = order[0], order[1:]
    if input_node.schema[names.index(first)].type.time_attribute is None:
        raise ValidationException(
            f"Sort on a non-time-attribute field is not supported: a streaming ORDER BY starts with a time "
            f"attribute ascending (declare a watermark on it, or use a PROCTIME() column); '{first}' is none"
        )
    if descending:
        raise ValidationException("Sort on a time attribute in descending order is not supported in streaming mode")
    fields = tuple((names.index(n), d) for n, d in rest)
    return TemporalSort(input_node.schema, input_node, names.index(first), fields)
