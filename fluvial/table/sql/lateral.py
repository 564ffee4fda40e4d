"""`FROM t, LATERAL TABLE(f(t.a)) AS T(x, y)` and `FROM t CROSS JOIN UNNEST(t.arr) AS A(x)`: a table function
applied to each row of the tables before it (Flink's Correlate), planned onto the same Correlate node and
operator as the Table API's `join_lateral`/`left_outer_join_lateral`.

The forms Flink accepts: a comma, `CROSS JOIN`, `JOIN ... ON TRUE` (an inner correlate; `JOIN ... ON cond`
filters the joined rows), and `LEFT JOIN ... ON TRUE` (rows the function gives nothing for are kept, padded
with NULLs; Flink accepts no other condition there). UNNEST is Flink's built-in table function over an ARRAY
(one column per element, or a ROW element's fields), a MAP (key and value) or a MULTISET, `WITH ORDINALITY`
adding the 1-based position. Both also stand alone in FROM (`FROM TABLE(f('a b'))`, `FROM UNNEST(ARRAY[1, 2])`),
called once with constant arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Column, Correlate, RelNode
from fluvial.table.planner.resolve import (
    Resolver,
    joined_names,
    qualified_columns,
    qualified_names,
    registered_functions,
    resolve_condition,
)
from fluvial.table.planner.rex import Rex
from fluvial.table.runtime.unnest import UnnestFunction, unnest_columns

if TYPE_CHECKING:
    from fluvial.table.sql.convert import Converter

__all__ = ["is_lateral", "is_table_function", "plan_lateral", "plan_table_function_scan"]

Qualifiers = dict[tuple[str, str], int]


def is_lateral(join: exp.Expression) -> bool:
    """Whether a FROM item after the first is a table function of the rows before it."""
    return isinstance(join, exp.Join) and isinstance(join.this, (exp.Lateral, exp.Unnest))


def is_table_function(call: exp.Expression) -> bool:
    """Whether `FROM TABLE(call)` calls a registered table function (rather than a window function)."""
    name = str(call.this) if isinstance(call, exp.Anonymous) else type(call).__name__
    return getattr(registered_functions.get().get(name.lower()), "_kind", None) == "table"


def plan_table_function_scan(convert: Converter, item: exp.Expression) -> RelNode:
    """`FROM TABLE(f('a b'))` or `FROM UNNEST(ARRAY[1, 2])`: a table function called once, with constant
    arguments (Flink's TableFunctionScan, or Uncollect): the Correlate of a single empty row. The caller applies
    the `AS T(x, y)` column aliases."""
    from fluvial.table.planner.logical import Values

    single = Values((), ((),))
    if isinstance(item, exp.Unnest):
        function, operands, names = _unnest(convert, item, single)
    else:
        function, operands, names = _table_function(convert, exp.Lateral(this=item), single)
    columns = tuple(Column(n, t) for n, (_, t) in zip(names, function.columns))
    return Correlate(columns, single, function.wrapper, operands, True, False, None)


def plan_lateral(
    convert: Converter, left: RelNode, qualifiers: Qualifiers, join: exp.Join
) -> tuple[RelNode, Qualifiers]:
    """The Correlate of `left` with the join's LATERAL TABLE or UNNEST, and where each `alias.column` lands."""
    item = join.this
    side = str(join.args.get("side") or "").upper()
    if side not in ("", "LEFT"):
        raise convert.error(join, f"{side} JOIN LATERAL is not supported: use a comma, CROSS JOIN, JOIN or LEFT JOIN")
    left_outer = side == "LEFT"
    on = join.args.get("on")
    if left_outer and not (isinstance(on, exp.Boolean) and on.this is True):
        # Flink's own words for a LEFT JOIN LATERAL with another condition (or none)
        raise convert.error(
            on if on is not None else join,
            "Only literal TRUE is accepted: write LEFT JOIN LATERAL TABLE(f(...)) AS T(...) ON TRUE, and filter "
            "the function's rows in WHERE or inside the function",
        )
    tokens = (qualified_columns.set(qualifiers), qualified_names.set(list(left.names)))
    try:
        if isinstance(item, exp.Unnest):
            function, operands, default_names = _unnest(convert, item, left)
        else:
            function, operands, default_names = _table_function(convert, item, left)
    finally:
        qualified_names.reset(tokens[1])
        qualified_columns.reset(tokens[0])
    alias = item.args.get("alias")
    names = list(default_names)
    if isinstance(alias, exp.TableAlias) and alias.columns:
        names = [c.name for c in alias.columns]
        if isinstance(item, exp.Unnest) and isinstance(item.args.get("offset"), exp.Identifier):
            names.append(item.args["offset"].name)  # sqlglot reads `WITH ORDINALITY AS A(x, n)`'s last name apart
        if len(names) != len(default_names):
            raise convert.error(
                alias,
                f"List of column aliases must have same degree as table; table has {len(default_names)} columns "
                f"{list(default_names)}, whereas alias list has {len(names)} columns",
            )
    types = [t for _, t in function.columns]
    table_alias = alias.name if isinstance(alias, exp.TableAlias) and alias.name else ""
    all_names = joined_names(left.names, names)
    columns = tuple(Column(n, t) for n, t in zip(all_names, [c.type for c in left.schema] + types))
    combined = dict(qualifiers)
    for i, n in enumerate(names):
        combined[(table_alias or function.name, n)] = len(left.schema) + i
    condition: Rex | None = None
    if on is not None and not (isinstance(on, exp.Boolean) and on.this is True):
        tokens = (qualified_columns.set(combined), qualified_names.set(all_names))
        try:
            condition = resolve_condition(convert.expr(on), Resolver(columns))
        finally:
            qualified_names.reset(tokens[1])
            qualified_columns.reset(tokens[0])
    return Correlate(columns, left, function.wrapper, operands, True, left_outer, condition), combined


class _Invocation:
    """The table function a LATERAL item calls: its output columns, and the object Correlate invokes."""

    def __init__(self, name: str, columns: list[tuple[str, Any]], wrapper: Any) -> None:
        self.name = name
        self.columns = columns
        self.wrapper = wrapper


def _table_function(convert: Converter, item: exp.Lateral, left: RelNode) -> tuple[_Invocation, tuple[Rex, ...], list]:
    call = item.this
    if isinstance(call, exp.Anonymous) and str(call.this).upper() == "TABLE" and len(call.expressions) == 1:
        call = call.expressions[0]
    if not isinstance(call, exp.Func):
        raise convert.error(item, "LATERAL takes a table function call: LATERAL TABLE(my_udtf(t.a)) AS T(x)")
    where: exp.Expression = call  # type: ignore[assignment]  # sqlglot's Func is an Expression
    name = str(call.this) if isinstance(call, exp.Anonymous) else call.sql_name()
    function = registered_functions.get().get(name.lower())
    if function is None:
        raise convert.error(
            where,
            f"No match found for function signature {name}(...): register the table function with "
            f"create_temporary_function or CREATE FUNCTION first",
        )
    if getattr(function, "_kind", "scalar") != "table":
        raise convert.error(
            where,
            f"Function '{name}' cannot be used as a table function: LATERAL TABLE takes a function made by "
            f"udtf(...) (a scalar function goes in the select list)",
        )
    args = list(call.expressions) if isinstance(call, exp.Anonymous) else convert.function_args(call)
    resolver = Resolver(left.schema)
    operands = tuple(resolver.resolve(convert.expr(a)) for a in args)
    result_types = list(function._result_types)
    names = list(function._alias_names) or [f"f{i}" for i in range(len(result_types))]
    return _Invocation(name, list(zip(names, result_types)), function), operands, names


def _unnest(convert: Converter, item: exp.Unnest, left: RelNode) -> tuple[_Invocation, tuple[Rex, ...], list]:
    if len(item.expressions) != 1:
        raise convert.error(item, "UNNEST takes one ARRAY, MAP or MULTISET argument")
    operand = Resolver(left.schema).resolve(convert.expr(item.expressions[0]))
    ordinality = bool(item.args.get("offset"))
    try:
        columns = unnest_columns(operand.type, ordinality)
    except ValidationException as error:
        raise convert.error(item.expressions[0], str(error)) from None
    function = UnnestFunction(operand.type, ordinality, columns)
    return _Invocation("UNNEST", columns, function), (operand,), [n for n, _ in columns]
