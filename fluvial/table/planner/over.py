"""Plans OVER aggregation (SQL's `agg OVER (...)` and the Table API's `over_window(Over...)`) onto an
OverAggregate: a Calc computing the input's columns and the aggregates' arguments, the OverAggregate (the input's
columns then one column per aggregate), and a Calc for the select list over them.

Flink's rules, checked here for both front ends: every OVER aggregate of one query uses the same window; the
window is ordered by one time attribute ascending; its frame ends at the CURRENT ROW.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.expression import Expression
from fluvial.table.planner.logical import Calc, Column, OverAggregate, RelNode
from fluvial.table.planner.resolve import Resolver, aggregate_type, expression_key, output_name, user_aggregate
from fluvial.table.planner.rex import AggCall, InputRef

__all__ = ["OverFrame", "plan_over", "collect_over", "has_over", "check_over_order", "table_api_frame"]


@dataclass(frozen=True, slots=True)
class OverFrame:
    """PARTITION BY `keys` (input columns) ORDER BY input column `time_index`; `preceding` None is UNBOUNDED,
    else a row count (`rows_frame`) or milliseconds (RANGE)."""

    keys: tuple[int, ...]
    time_index: int
    rows_frame: bool
    preceding: int | None


def has_over(e: Expression) -> bool:
    return e.kind == "call" and e.name == "__over__" or any(has_over(a) for a in e.args)


def collect_over(items: Sequence[Expression], out: list[Expression]) -> None:
    """The `__over__` calls of `items`, outermost first (an OVER aggregate is never nested in another)."""
    for e in items:
        if e.kind == "call" and e.name == "__over__":
            out.append(e)
        else:
            collect_over(list(e.args), out)


def plan_over(input_node: RelNode, items: Sequence[Expression], frame: OverFrame, sql: bool) -> RelNode:
    calls: list[Expression] = []
    collect_over(items, calls)
    names = input_node.names
    resolver = Resolver(input_node.schema)
    arg_rexes: list[Any] = []
    agg_calls = []
    for i, call in enumerate(calls):
        inner = call.args[0]
        distinct = inner.name == "distinct"
        if distinct:
            inner = inner.args[0]
        kind = (inner.name or "").upper()
        indexes = []
        for a in (a for a in inner.args if a.kind != "star"):
            arg_rexes.append(resolver.resolve(a))
            indexes.append(len(names) + len(arg_rexes) - 1)
        arg_types = tuple(arg_rexes[j - len(names)].type for j in indexes)
        function = user_aggregate(inner)
        if function is not None:
            _check_user_aggregate(function, frame)
            agg_calls.append(
                AggCall("UDAF", tuple(indexes), function._result_type, f"w0$o{i}", False, arg_types, function=function)
            )
            continue
        agg_type = aggregate_type(kind, arg_types, call.sql_position)
        agg_calls.append(AggCall(kind, tuple(indexes), agg_type, f"w0$o{i}", distinct, arg_types))
    pre_rexes = tuple(InputRef(i, c.type, c.name) for i, c in enumerate(input_node.schema)) + tuple(arg_rexes)
    pre_columns = tuple(input_node.schema) + tuple(
        Column(f"$f{len(names) + j}", r.type) for j, r in enumerate(arg_rexes)
    )
    pre = Calc(pre_columns, input_node, pre_rexes, None)
    over = OverAggregate(
        pre_columns + tuple(Column(a.name, a.type) for a in agg_calls),
        pre,
        frame.keys,
        frame.time_index,
        frame.rows_frame,
        tuple(agg_calls),
        frame.preceding,
    )
    extra = {expression_key(c): len(pre_columns) + i for i, c in enumerate(calls)}
    post = Resolver(over.schema, extra)
    post.names = list(names) + [""] * (len(over.schema) - len(names))
    rexes, columns = [], []
    for position, item in enumerate(items):
        rex = post.resolve(item)
        columns.append(Column(output_name(item, position, sql=sql), rex.type))
        rexes.append(rex)
    return Calc(tuple(columns), over, tuple(rexes), None)


def _check_user_aggregate(function: Any, frame: OverFrame) -> None:
    """A udaf over a bounded frame must `retract` the rows that leave it (a pandas udaf keeps its rows)."""
    from fluvial.table.udf import overrides

    if frame.preceding is not None and not function._pandas and not overrides(function._func, "retract"):
        raise ValidationException(
            f"The aggregate function {function._name} is used in an OVER window with a bounded frame, whose rows "
            "leave it, so it must implement retract(accumulator, *args)"
        )


def check_over_order(input_node: RelNode, time_name: str) -> int:
    """The index of the ORDER BY column, which must be a rowtime attribute (Flink's rule for streaming OVER):
    a rowtime, or a processing-time attribute (`PROCTIME()`)."""
    names = input_node.names
    if time_name not in names or input_node.schema[names.index(time_name)].type.time_attribute is None:
        raise ValidationException(
            f"OVER windows can only be ordered by a time attribute; '{time_name}' is none (declare a watermark on "
            "it: WATERMARK FOR ... / Schema.watermark, or order by a PROCTIME() column)"
        )
    return names.index(time_name)


def table_api_frame(window: Any, input_node: RelNode) -> OverFrame:
    """The frame of a Table API `OverWindow`: `row_interval(n)` / UNBOUNDED_ROW / CURRENT_ROW make a ROWS frame,
    an interval (`lit(5).seconds`) / UNBOUNDED_RANGE / CURRENT_RANGE (the default) a RANGE frame."""
    names = input_node.names
    keys = []
    for p in window.partition_by:
        if p.kind != "field" or p.name not in names:
            raise ValidationException(f"Over.partition_by takes columns of the table; {p.to_string()} is none")
        keys.append(names.index(p.name))
    order = window.order_by
    if order is None or order.kind != "field":
        raise ValidationException("Over.order_by takes the time attribute column, e.g. col('rowtime')")
    time_index = check_over_order(input_node, order.name or "")
    following = window.following_bound
    if following is not None and not (following.kind == "call" and following.name in ("current_row", "current_range")):
        raise ValidationException(
            "a streaming over window ends at the current row: following(CURRENT_ROW) or following(CURRENT_RANGE)"
        )
    bound = window.preceding_bound
    name = bound.name if bound is not None and bound.kind == "call" else None
    if bound is None or name == "unbounded_range":
        return OverFrame(tuple(keys), time_index, False, None)
    if name == "unbounded_row":
        return OverFrame(tuple(keys), time_index, True, None)
    if name == "current_row":
        return OverFrame(tuple(keys), time_index, True, 0)
    if name == "current_range":
        return OverFrame(tuple(keys), time_index, False, 0)
    if name == "row_interval":
        return OverFrame(tuple(keys), time_index, True, int(bound.value))
    if bound.kind == "literal" and bound.data_type is not None and bound.data_type.name == "INTERVAL_DAY_TIME":
        return OverFrame(tuple(keys), time_index, False, int(bound.value))
    raise ValidationException(
        f"Over.preceding takes UNBOUNDED_ROW, UNBOUNDED_RANGE, CURRENT_ROW, CURRENT_RANGE, row_interval(n) or a "
        f"time interval such as lit(5).seconds; got {bound.to_string()}"
    )
