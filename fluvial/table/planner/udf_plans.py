"""Plans of the Table API's function operations: `map` (a scalar udf whose ROW result becomes the columns),
`aggregate` (a udaf whose ROW result becomes the columns after the group keys) and `flat_aggregate` (a udtaf:
Flink's GroupTableAggregate, each group's rows as its `emit_value` yields them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.expression import Expression
from fluvial.table.planner.logical import Calc, Column, RelNode, TableAggregate
from fluvial.table.planner.resolve import Resolver, check_unique, plan_aggregate
from fluvial.table.planner.rex import Call, InputRef, Literal, Rex
from fluvial.table.types import DataType, DataTypes

__all__ = ["plan_map", "plan_udaf_aggregate", "plan_flat_aggregate"]


def _call_and_aliases(func: Any, kind: str, input: RelNode) -> tuple[Expression, tuple[str, ...]]:
    """`f(col(...)).alias(...)`, `f(...)`, or `f` alone: then it takes one Row of every column, as PyFlink's
    `map(f)`, `aggregate(f)` and `flat_aggregate(f)` pass it (`accumulate(self, acc, row)` reads `row.tel`)."""
    from fluvial.table.udf import UserDefinedFunctionWrapper

    aliases: tuple[str, ...] = ()
    if isinstance(func, Expression) and func.kind == "alias":
        aliases, func = func.aliases, func.args[0]
    if isinstance(func, UserDefinedFunctionWrapper):
        if func._kind != kind:
            raise ValidationException(_wrong_kind(func, kind))
        return func._taking_row(input.names)(*[Expression("field", n) for n in input.names]), aliases
    if not isinstance(func, Expression) or func.kind != "call" or getattr(func.value, "_kind", None) != kind:
        raise ValidationException(_wrong_kind(func, kind))
    return func, aliases


def _wrong_kind(func: Any, kind: str) -> str:
    what = {"scalar": "map takes a scalar function (udf)", "aggregate": "aggregate takes an aggregate function (udaf)"}
    return f"{what.get(kind, 'flat_aggregate takes a table aggregate function (udtaf)')}; got {func!r}"


def _fields(result: DataType, aliases: Sequence[str], default: str) -> list[tuple[str, DataType]]:
    """The columns a function's result becomes: a ROW's fields (renamed by `aliases`), else one column."""
    if result.name == "ROW":
        names = list(aliases) or [f.name for f in result.fields]
        if len(names) != len(result.fields):
            raise ValidationException(
                f"the function's result has {len(result.fields)} fields but {len(names)} aliases were given"
            )
        return [(n, f.data_type) for n, f in zip(names, result.fields)]
    if len(aliases) > 1:
        raise ValidationException(f"the function's result is one {result} column but {len(aliases)} aliases were given")
    return [(aliases[0] if aliases else default, result)]


def _expand(node: RelNode, index: int, fields: list[tuple[str, DataType]], row: bool) -> RelNode:
    """The columns before `index`, then the fields of the ROW at `index` (or that column renamed)."""
    rexes: list[Rex] = [InputRef(i, c.type, c.name) for i, c in enumerate(node.schema[:index])]
    source = InputRef(index, node.schema[index].type, node.schema[index].name)
    for i, (_, data_type) in enumerate(fields):
        rexes.append(Call("__field__", (source, Literal(i, DataTypes.INT(False))), data_type) if row else source)
    columns = list(node.schema[:index]) + [Column(n, t) for n, t in fields]
    check_unique([c.name for c in columns])
    return Calc(tuple(columns), node, tuple(rexes), None)


def plan_map(input: RelNode, func: Any) -> RelNode:
    call, aliases = _call_and_aliases(func, "scalar", input)
    rex = Resolver(input.schema).resolve(call)
    mapped = Calc((Column("_c0", rex.type),), input, (rex,), None)
    return _expand(mapped, 0, _fields(rex.type, aliases, "_c0"), rex.type.name == "ROW")


def plan_udaf_aggregate(input: RelNode, keys: list[Expression], func: Any) -> RelNode:
    call, aliases = _call_and_aliases(func, "aggregate", input)
    aggregated = plan_aggregate(input, keys, [*keys, call])
    result = aggregated.schema[len(keys)].type
    return _expand(aggregated, len(keys), _fields(result, aliases, "EXPR$0"), result.name == "ROW")


def plan_flat_aggregate(input: RelNode, keys: list[Expression], func: Any) -> RelNode:
    call, aliases = _call_and_aliases(func, "table_aggregate", input)
    function = call.value
    resolver = Resolver(input.schema)
    key_rexes = [resolver.resolve(k) for k in keys]
    arg_rexes = [resolver.resolve(a) for a in call.args]
    key_columns = [
        Column(k.name if k.kind == "field" and k.name else f"$f{i}", r.type)
        for i, (k, r) in enumerate(zip(keys, key_rexes))
    ]
    pre_columns = key_columns + [Column(f"$f{len(keys) + i}", r.type) for i, r in enumerate(arg_rexes)]
    pre = Calc(tuple(pre_columns), input, tuple(key_rexes + arg_rexes), None)
    if input.changelog_mode.value != "[I]":
        from fluvial.table.udf import overrides

        if not overrides(function._func, "retract"):
            raise ValidationException(
                f"The table aggregate function {type(function._func).__name__} is applied to an input that emits "
                "updates (retractions), so it must implement retract(accumulator, *args)"
            )
    fields = _fields(function._result_type, aliases, "f0")
    columns = key_columns + [Column(n, t) for n, t in fields]
    check_unique([c.name for c in columns])
    args = tuple(range(len(keys), len(pre_columns)))
    return TableAggregate(tuple(columns), pre, tuple(range(len(keys))), args, function)
