"""PyFlink's `pyflink.table.expressions`: the functions that start an expression (`col`, `lit`, `call`, ...)."""

from __future__ import annotations

from typing import Any

from fluvial.table.expression import Expression, _expr, literal
from fluvial.table.types import DataType

__all__ = [
    "col",
    "lit",
    "call",
    "and_",
    "or_",
    "not_",
    "if_then_else",
    "coalesce",
    "concat",
    "concat_ws",
    "current_timestamp",
    "current_date",
    "current_time",
    "local_timestamp",
    "now",
    "null_of",
    "row",
    "array",
    "map_",
    "uuid",
    "rand",
    "pi",
    "e",
    "with_columns",
    "without_columns",
    "range_",
    "call_sql",
    "to_timestamp_ltz",
    "row_interval",
    "CURRENT_ROW",
    "UNBOUNDED_ROW",
    "UNBOUNDED_RANGE",
    "CURRENT_RANGE",
]


def col(name: str) -> Expression:
    """A reference to the column `name` of the input table."""
    if name == "*":
        return Expression("star")
    return Expression("field", name)


def lit(v: Any, data_type: DataType | None = None) -> Expression:
    """A literal: `lit(1)`, `lit("a")`, `lit(1.5, DataTypes.FLOAT())` (the type casts the value)."""
    expression = literal(v)
    return expression if data_type is None else expression.cast(data_type)


def call(f: Any, *args: Any) -> Expression:
    """A call of a built-in function by name, a registered function by name, or a user function object."""
    if isinstance(f, str):
        return Expression("call", f.lower(), tuple(_expr(a) for a in args))
    return Expression("call", "__udf__", tuple(_expr(a) for a in args), value=f)


def call_sql(sql_expression: str) -> Expression:
    """A SQL expression, resolved against the input table like a column: `call_sql("a + 1")`."""
    return Expression("sql", value=sql_expression)


def and_(predicate0: Any, predicate1: Any, *predicates: Any) -> Expression:
    result = _expr(predicate0) & predicate1
    for p in predicates:
        result = result & p
    return result


def or_(predicate0: Any, predicate1: Any, *predicates: Any) -> Expression:
    result = _expr(predicate0) | predicate1
    for p in predicates:
        result = result | p
    return result


def not_(expression: Any) -> Expression:
    return ~_expr(expression)


def if_then_else(condition: Any, if_true: Any, if_false: Any) -> Expression:
    return _expr(condition).then(if_true, if_false)


def coalesce(*args: Any) -> Expression:
    return Expression("call", "coalesce", tuple(_expr(a) for a in args))


def concat(first: Any, *others: Any) -> Expression:
    return Expression("call", "concat", tuple(_expr(a) for a in (first, *others)))


def concat_ws(separator: Any, first: Any, *others: Any) -> Expression:
    return Expression("call", "concat_ws", tuple(_expr(a) for a in (separator, first, *others)))


def current_timestamp() -> Expression:
    return Expression("call", "current_timestamp")


def now() -> Expression:
    return Expression("call", "current_timestamp")


def local_timestamp() -> Expression:
    return Expression("call", "localtimestamp")


def current_date() -> Expression:
    return Expression("call", "current_date")


def current_time() -> Expression:
    return Expression("call", "current_time")


def to_timestamp_ltz(numeric_epoch_time: Any, precision: Any = 3) -> Expression:
    return Expression("call", "to_timestamp_ltz", (_expr(numeric_epoch_time), _expr(precision)))


def null_of(data_type: DataType) -> Expression:
    return literal(None).cast(data_type)


def row(head: Any, *tail: Any) -> Expression:
    return Expression("call", "row", tuple(_expr(a) for a in (head, *tail)))


def array(head: Any, *tail: Any) -> Expression:
    return Expression("call", "array", tuple(_expr(a) for a in (head, *tail)))


def map_(key: Any, value: Any, *tail: Any) -> Expression:
    return Expression("call", "map", tuple(_expr(a) for a in (key, value, *tail)))


def uuid() -> Expression:
    return Expression("call", "uuid")


def rand(seed: Any = None) -> Expression:
    return Expression("call", "rand", () if seed is None else (_expr(seed),))


def pi() -> Expression:
    return Expression("call", "pi")


def e() -> Expression:
    return Expression("call", "e")


def range_(start: Any, end: Any) -> Expression:
    return Expression("range", value=(start, end))


def with_columns(head: Any, *tails: Any) -> Expression:
    return Expression("with_columns", args=tuple(_expr(a) for a in (head, *tails)))


def without_columns(head: Any, *tails: Any) -> Expression:
    return Expression("without_columns", args=tuple(_expr(a) for a in (head, *tails)))


def row_interval(rows: int) -> Expression:
    """`n` rows, the bound of a ROWS over window: `Over...preceding(row_interval(2))`."""
    return Expression("call", "row_interval", value=int(rows))


CURRENT_ROW = Expression("call", "current_row")
CURRENT_RANGE = Expression("call", "current_range")
UNBOUNDED_ROW = Expression("call", "unbounded_row")
UNBOUNDED_RANGE = Expression("call", "unbounded_range")
