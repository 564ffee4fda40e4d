"""Resolves unresolved expressions (Table API or SQL) against an input schema into typed rex nodes, and
plans aggregations (`plan_aggregate`): the errors a user meets first — an unknown column, a function that
does not take its operands' types, a column neither grouped nor aggregated — are raised here, with the SQL
position when the expression came from SQL text.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from fluvial.table.builtins import AGGREGATES, BUILTINS, SignatureError
from fluvial.table.errors import ValidationException, at
from fluvial.table.expression import Expression
from fluvial.table.planner.logical import Aggregate, Calc, Column, RelNode, WindowAggregate, WindowSpec
from fluvial.table.planner.rex import AggCall, Call, InputRef, Literal, Rex
from fluvial.table.types import DataType, DataTypes

# The user functions a plan may call by name (create_temporary_function), set by the table environment while it
# plans one statement.
registered_functions: ContextVar[dict[str, Any]] = ContextVar("registered_functions", default={})  # noqa: B039 - read only; set per statement
# (table alias, column name) → column index of the joined row, for `o.id` in a join's query; set by the SQL
# planner while it resolves one SELECT over a join.
qualified_columns: ContextVar[dict[tuple[str, str], int]] = ContextVar("qualified_columns", default={})  # noqa: B039 - read only
qualified_names: ContextVar[list[str]] = ContextVar("qualified_names", default=[])  # noqa: B039 - read only

__all__ = [
    "Resolver",
    "registered_functions",
    "resolve",
    "output_name",
    "plan_aggregate",
    "project",
    "contains_aggregate",
]


def _case_insensitive_index(names: Sequence[str], name: str) -> int | None:
    for i, n in enumerate(names):
        if n == name:
            return i
    return None


class Resolver:
    """Resolves expressions against one schema; `extra` maps whole expressions (by their text) to columns,
    which is how a grouped query's select list reaches its group keys and aggregates."""

    def __init__(
        self, schema: Sequence[Column], extra: dict[str, int] | None = None, ungrouped: Sequence[str] = ()
    ) -> None:
        self.schema = list(schema)
        self.names = [c.name for c in self.schema]
        self.extra = extra or {}
        self.ungrouped = set(ungrouped)

    def resolve(self, e: Expression) -> Rex:
        key = expression_key(e)
        if key in self.extra:
            i = self.extra[key]
            return InputRef(i, self.schema[i].type, self.schema[i].name)
        if e.kind == "field":
            return self._field(e)
        if e.kind == "literal":
            return Literal(e.value, e.data_type or DataTypes.NULL())
        if e.kind == "alias":
            return self.resolve(e.args[0])
        if e.kind == "cast":
            operand = self.resolve(e.args[0])
            target = e.data_type
            if not operand.type.nullable and target is not None:
                target = replace(
                    target,
                    nullable=e.name == "try_cast"
                    or target.nullable
                    and operand.type.name == "NULL"
                    or (target.nullable and False),
                )
            return Call(e.name or "cast", (operand,), target)  # type: ignore[arg-type]
        if e.kind == "sql":
            from fluvial.table.sql.convert import parse_expression

            return self.resolve(parse_expression(e.value))
        if e.kind == "call":
            return self._call(e)
        if e.kind == "star":
            raise ValidationException(at(e.sql_position, "'*' is only allowed in a select list"))
        raise ValidationException(at(e.sql_position, f"cannot resolve {e.to_string()}"))

    def _field(self, e: Expression) -> Rex:
        name = e.name or ""
        if e.value and self.names == qualified_names.get():
            qualified = qualified_columns.get().get((str(e.value), name))
            if qualified is not None:
                return InputRef(qualified, self.schema[qualified].type, self.names[qualified])
        if e.value:
            nested = self._nested_field(str(e.value), name)
            if nested is not None:
                return nested
        index = _case_insensitive_index(self.names, name) if name else None
        if index is None:
            if name in self.ungrouped:
                raise ValidationException(at(e.sql_position, f"Expression '{name}' is not being grouped"))
            raise ValidationException(
                at(
                    e.sql_position,
                    f"Column '{name}' not found in any table; the input has columns [{', '.join(self.names)}]",
                )
            )
        return InputRef(index, self.schema[index].type, name)

    def _nested_field(self, row_name: str, name: str) -> Rex | None:
        """`person.id` where `person` is a ROW column: its field (NULL when the row is)."""
        index = _case_insensitive_index(self.names, row_name)
        if index is None or self.schema[index].type.name != "ROW":
            return None
        row_type = self.schema[index].type
        field_names = [f.name for f in row_type.fields]
        if name not in field_names:
            return None
        position = field_names.index(name)
        field_type = row_type.fields[position].data_type
        if row_type.nullable and not field_type.nullable:
            field_type = replace(field_type, nullable=True)
        row = InputRef(index, row_type, row_name)
        return Call("get_field", (row, Literal(position, DataTypes.INT(False))), field_type)

    def _call(self, e: Expression) -> Rex:
        name = e.name or ""
        if name in AGGREGATES or name == "distinct" or user_aggregate(e) is not None:
            raise ValidationException(
                at(
                    e.sql_position,
                    f"Aggregate function {name.upper()} is not allowed here: aggregates belong in the select "
                    "list of a grouped query (group_by(...).select(...)) or a GROUP BY query",
                )
            )
        if name == "proctime_field":
            raise ValidationException(
                at(
                    e.sql_position,
                    ".proctime declares a processing-time attribute in from_data_stream(ds, ..., col('pt').proctime) "
                    "or, on a processing-time group window's alias, is its time (w.proctime) in its select list",
                )
            )
        if name in ("window_start", "window_end", "window_rowtime"):
            raise ValidationException(
                at(
                    e.sql_position,
                    f"{name} refers to a window: use it in the select list of window(...).group_by(..., w).select(...)",
                )
            )
        operands = tuple(self.resolve(a) for a in e.args)
        function = e.value if name == "__udf__" else registered_functions.get().get(name)
        if name == "__udtf__" or getattr(function, "_kind", "scalar") == "table":
            raise ValidationException(
                at(
                    e.sql_position,
                    f"Cannot call table function here: '{name if name != '__udtf__' else e.value._name}': a "
                    "table function (udtf) is called by flat_map, join_lateral or LATERAL TABLE, not in a select list",
                )
            )
        if function is not None:
            result_type = getattr(function, "_result_type", None) or DataTypes.STRING()
            return Call("__udf__", operands, result_type, function)
        builtin = BUILTINS.get(name)
        if builtin is None:
            raise ValidationException(
                at(
                    e.sql_position,
                    f"No match found for function signature {name}("
                    f"{', '.join('<' + o.type.summary(False) + '>' for o in operands)})",
                )
            )
        try:
            result = builtin.infer([o.type for o in operands])
        except SignatureError as error:
            raise ValidationException(at(e.sql_position, str(error))) from None
        if name in _NUMERIC_OPERATORS:
            operands = _coerce_numeric(operands)
        if (
            name in ("floor", "ceil", "extract")
            and operands
            and isinstance(operands[-1], Literal)
            and operands[-1].type.name == "SYMBOL"
            and name != "extract"
        ):
            result = operands[0].type
        if name == "extract":
            operands = (Literal(e.args[1].value, DataTypes.STRING()), operands[0]) if False else operands
        return Call(name, operands, result)


_NUMERIC_OPERATORS = frozenset(
    {
        "plus",
        "minus",
        "times",
        "divide",
        "mod",
        "equals",
        "not_equals",
        "less_than",
        "less_than_or_equal",
        "greater_than",
        "greater_than_or_equal",
        "between",
        "not_between",
        "greatest",
        "least",
        "coalesce",
        "if",
        "case",
        "in",
    }
)


def _coerce_numeric(operands: tuple[Rex, ...]) -> tuple[Rex, ...]:
    """Python cannot mix Decimal and float: where an approximate (FLOAT/DOUBLE) operand meets an exact DECIMAL
    one, the DECIMAL is cast to DOUBLE, as Flink's type coercion widens DECIMAL to DOUBLE."""
    if not any(o.type.name in ("FLOAT", "DOUBLE") for o in operands):
        return operands
    return tuple(
        Call("cast", (o,), replace(DataTypes.DOUBLE(), nullable=o.type.nullable)) if o.type.name == "DECIMAL" else o
        for o in operands
    )


def expression_key(e: Expression) -> str:
    """A structural key of an expression, to match a select item against a GROUP BY item."""
    if e.kind == "alias":
        return expression_key(e.args[0])
    if e.kind == "field":
        qualified = qualified_columns.get().get((str(e.value), e.name or "")) if e.value else None
        return f"f:{e.name}" if qualified is None else f"q:{qualified}"
    if e.kind == "literal":
        return f"l:{e.value!r}:{e.data_type}"
    if e.kind == "cast":
        return f"c:{e.name}:{e.data_type}({expression_key(e.args[0])})"
    return (
        f"{e.kind}:{e.name}:{id(e.value) if e.name in ('__udf__', '__udaf__') else ''}("
        + ",".join(expression_key(a) for a in e.args)
        + ")"
    )


def resolve(e: Expression, schema: Sequence[Column]) -> Rex:
    return Resolver(schema).resolve(e)


def output_name(e: Expression, position: int, sql: bool = False) -> str:
    """The column name of a select item: its alias, a column's own name, else `_c<position>` (Table API) or
    `EXPR$<position>` (SQL)."""
    if e.kind == "alias":
        return e.aliases[0]
    if e.kind == "field":
        return e.name or ""
    return f"EXPR${position}" if sql else f"_c{position}"


def project(
    input: RelNode, items: Sequence[Expression], sql: bool = False, condition: Expression | None = None
) -> Calc:
    """A Calc of `items` over `input` (a select list: `*` expands), with an optional filter."""
    resolver = Resolver(input.schema)
    rexes: list[Rex] = []
    columns: list[Column] = []
    for e in expand_star(items, input):
        rex = resolver.resolve(e)
        columns.append(Column(output_name(e, len(columns), sql), rex.type))
        rexes.append(rex)
    if sql:
        columns = _uniquified(columns)
    check_unique([c.name for c in columns])
    cond = None
    if condition is not None:
        cond = resolve_condition(condition, resolver)
    return Calc(tuple(columns), input, tuple(rexes), cond)


def resolve_condition(condition: Expression, resolver: Resolver) -> Rex:
    rex = resolver.resolve(condition)
    if rex.type.name not in ("BOOLEAN", "NULL"):
        raise ValidationException(
            at(
                condition.sql_position,
                f"A filter condition must be BOOLEAN, but '{condition.to_string()}' is {rex.type.summary(False)}",
            )
        )
    return rex


def _uniquified(columns: list[Column]) -> list[Column]:
    """A SQL select list's repeated names made unique as Calcite does: `id, id` becomes `id, id0`."""
    seen: set[str] = set()
    out = []
    for c in columns:
        name, n = c.name, 0
        while name in seen:
            name, n = f"{c.name}{n}", n + 1
        seen.add(name)
        out.append(c if name == c.name else Column(name, c.type))
    return out


def check_unique(names: list[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ValidationException(f"Ambiguous column name: {n}; give the columns distinct names with alias()")
        seen.add(n)


def expand_star(items: Sequence[Expression], input: RelNode) -> list[Expression]:
    out: list[Expression] = []
    for e in items:
        if e.kind == "star":
            out.extend(Expression("field", n) for n in input.names)
        elif e.kind == "with_columns":
            out.extend(_select_range(e.args, input.names))
        elif e.kind == "without_columns":
            removed = {x.name for x in _select_range(e.args, input.names)}
            out.extend(Expression("field", n) for n in input.names if n not in removed)
        else:
            out.append(e)
    return out


def _select_range(args: Sequence[Expression], names: list[str]) -> list[Expression]:
    out = []
    for a in args:
        if a.kind == "range":
            start, end = a.value
            lo = start if isinstance(start, int) else names.index(start) + 1
            hi = end if isinstance(end, int) else names.index(end) + 1
            out.extend(Expression("field", n) for n in names[lo - 1 : hi])
        elif a.kind == "literal" and isinstance(a.value, int):
            out.append(Expression("field", names[a.value - 1]))
        else:
            out.append(a)
    return out


def contains_aggregate(e: Expression) -> bool:
    if e.kind == "call" and (_is_agg(e) or e.name == "distinct" and e.args and _is_agg(e.args[0])):
        return True
    return any(contains_aggregate(a) for a in e.args)


def _is_agg(e: Expression) -> bool:
    return e.kind == "call" and (e.name in AGGREGATES or user_aggregate(e) is not None)


def user_aggregate(e: Expression) -> Any:
    """The udaf a call expression calls (by object, or by a name create_temporary_function registered), or None."""
    if e.kind != "call":
        return None
    if e.name == "__udaf__":
        return e.value
    function = registered_functions.get().get(e.name or "")
    return function if getattr(function, "_kind", None) == "aggregate" else None


@dataclass
class _AggCollector:
    """Collects the aggregate calls of a select list and the columns their arguments need."""

    resolver: Resolver
    arg_rexes: list[Rex]
    calls: list[tuple[str, AggCall]]
    sql: bool

    grouped: bool = True

    def collect(self, e: Expression, key_offset: int) -> None:
        if e.kind == "call" and (_is_agg(e) or e.name == "distinct" and e.args and _is_agg(e.args[0])):
            key = expression_key(e)
            if any(k == key for k, _ in self.calls):
                return
            distinct = e.name == "distinct"
            call = e.args[0] if distinct else e
            function = user_aggregate(call)
            if function is not None:
                self._collect_user(call, function, key, key_offset)
                return
            kind = (call.name or "").upper()
            args = call.args
            if kind == "COUNT" and (not args or args[0].kind == "star"):
                kind, args = "COUNT", ()
            rexes = [self.resolver.resolve(a) for a in args]
            if kind == "COUNT" and args and all(isinstance(r, Literal) and r.value is not None for r in rexes):
                rexes, args = [], ()  # COUNT(1) counts rows
            indexes = []
            for rex in rexes:
                self.arg_rexes.append(rex)
                indexes.append(key_offset + len(self.arg_rexes) - 1)
            arg_types = tuple(r.type for r in rexes)
            result_type = aggregate_type(kind, arg_types, e.sql_position, self.grouped)
            self.calls.append((key, AggCall(kind, tuple(indexes), result_type, "", distinct, arg_types)))
            return
        for a in e.args:
            self.collect(a, key_offset)

    def _collect_user(self, call: Expression, function: Any, key: str, key_offset: int) -> None:
        indexes = []
        for a in call.args:
            self.arg_rexes.append(self.resolver.resolve(a))
            indexes.append(key_offset + len(self.arg_rexes) - 1)
        arg_types = tuple(self.arg_rexes[i - key_offset].type for i in indexes)
        agg = AggCall("UDAF", tuple(indexes), function._result_type, "", False, arg_types, function=function)
        self.calls.append((key, agg))


def aggregate_type(kind: str, arg_types: tuple[DataType, ...], position: Any = None, grouped: bool = True) -> DataType:
    """Flink's result type of an aggregate: COUNT BIGINT NOT NULL, SUM of INT is INT, AVG keeps the type...;
    SUM, AVG, MIN and MAX are nullable when their argument is, or when there are no group keys (an empty
    input has no value), as Calcite's `*_NULLABLE_IF_EMPTY` rules say."""
    result = _aggregate_type(kind, arg_types, position)
    if kind in ("SUM", "AVG", "MIN", "MAX") and arg_types:
        result = replace(result, nullable=not grouped or arg_types[0].nullable)
    return result


def _aggregate_type(kind: str, arg_types: tuple[DataType, ...], position: Any = None) -> DataType:
    if kind == "COUNT":
        return DataTypes.BIGINT(False)
    if not arg_types:
        raise ValidationException(at(position, f"{kind} takes one argument"))
    t = arg_types[0]
    if (
        kind in ("SUM", "SUM0", "AVG", "STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP")
        and not t.is_numeric()
        and t.name != "NULL"
    ):
        raise ValidationException(
            at(
                position,
                f"Cannot apply '{kind}' to arguments of type '{kind}(<"
                f"{t.summary(False)}>)'. Supported form(s): '{kind}(<NUMERIC>)'",
            )
        )
    if kind == "SUM0":
        return replace(t, nullable=False)
    if kind in ("SUM", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE"):
        if kind == "SUM" and t.name == "DECIMAL":
            return DataTypes.DECIMAL(38, t.scale or 0)
        return replace(t.without_time_attribute(), nullable=True)
    if kind == "AVG":
        if t.name == "DECIMAL":
            return DataTypes.DECIMAL(38, max(t.scale or 0, 6))
        return replace(t, nullable=True)
    if kind in ("STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP"):
        return DataTypes.DOUBLE()
    if kind == "LISTAGG":
        return DataTypes.STRING()
    if kind == "COLLECT":
        return DataTypes.MULTISET(t, False)
    raise ValidationException(at(position, f"unknown aggregate function {kind}"))


def plan_join(
    left: RelNode,
    right: RelNode,
    join_type: str,
    condition: Expression | None,
    right_names: Sequence[str] | None = None,
) -> RelNode:
    """A regular join of `left` and `right`: its schema is left's columns then right's (a right name that
    repeats a left one gets a `0` suffix, as Flink's), keyed on the equalities between a left and a right
    column among the condition's conjuncts; the rest of the condition is checked per joined row."""
    from fluvial.table.planner.logical import Join

    names = joined_names(left.names, right_names or right.names)
    nullable_left = join_type in ("RIGHT", "FULL")
    nullable_right = join_type in ("LEFT", "FULL")
    columns = [
        Column(n, replace(c.type, nullable=True) if nullable_left else c.type) for n, c in zip(names, left.schema)
    ]
    columns += [
        Column(n, replace(c.type, nullable=True) if nullable_right else c.type)
        for n, c in zip(names[len(left.schema) :], right.schema)
    ]
    if condition is None:
        raise ValidationException(
            "a streaming join needs a condition with an equality between the two tables' "
            "columns (ON a.k = b.k); a cross join is not supported"
        )
    rex = resolve_condition(condition, Resolver(columns))
    left_keys, right_keys, remainder = split_equi_join(rex, len(left.schema))
    if not left_keys:
        raise ValidationException(
            at(
                condition.sql_position,
                "a streaming join needs an equality between a column of each table (ON a.k = b.k) to key its state by",
            )
        )
    from fluvial.table.planner.interval_join import as_interval_join
    from fluvial.table.planner.window_join import as_window_join

    rest = [] if remainder is None else _conjuncts(remainder)
    asynchronous = _async_call(rex)
    if asynchronous is not None:
        raise ValidationException(
            at(
                condition.sql_position,
                f"The async scalar function '{asynchronous.function._name}' cannot be called in a join condition: "
                "compute it in a select of the join's input and compare that column",
            )
        )
    vectorized = [r for r in rest if _calls_pandas(r)]
    if vectorized and join_type != "INNER":
        raise ValidationException(
            at(
                condition.sql_position,
                f"a pandas (vectorized) function in the condition of a {join_type} join is not supported, as in "
                "Flink; use an INNER join, or a general udf (func_type='general') in the condition",
            )
        )
    # Flink's SplitPythonConditionFromJoinRule: an inner join's pandas conditions filter its joined rows after
    # it, in one vectorized call per buffer of joined rows (the join keys and the rest of the condition first)
    rest = [r for r in rest if not _calls_pandas(r)]
    described = _and([c for c in _conjuncts(rex) if not _calls_pandas(c)]) if vectorized else rex
    assert described is not None  # the join keys are among the conjuncts
    join = Join(
        tuple(columns), left, right, join_type, tuple(left_keys), tuple(right_keys), _and(rest), described.describe()
    )
    try:
        windowed = as_window_join(join)
    except ValidationException as error:
        raise ValidationException(at(condition.sql_position, str(error))) from None
    planned = windowed if windowed is not join else as_interval_join(join)
    return Calc(planned.schema, planned, None, _and(vectorized)) if vectorized else planned


def _and(conjuncts: Sequence[Rex]) -> Rex | None:
    joined: Rex | None = None
    for r in conjuncts:
        joined = r if joined is None else Call("and", (joined, r), DataTypes.BOOLEAN())
    return joined


def _async_call(rex: Rex) -> Call | None:
    """The first async scalar function call in `rex`, if any."""
    if not isinstance(rex, Call):
        return None
    if rex.op == "__udf__" and getattr(rex.function, "_async", False):
        return rex
    return next((c for c in map(_async_call, rex.operands) if c is not None), None)


def _calls_pandas(rex: Rex) -> bool:
    if not isinstance(rex, Call):
        return False
    if rex.op == "__udf__" and getattr(rex.function, "_pandas", False):
        return True
    return any(_calls_pandas(o) for o in rex.operands)


def joined_names(left: Sequence[str], right: Sequence[str]) -> list[str]:
    """A join's column names: left's, then right's, a right name that repeats one before it suffixed `0` (as
    Flink's)."""
    names = list(left)
    for name in right:
        while name in names:
            name += "0"
        names.append(name)
    return names


def split_equi_join(rex: Rex, width: int) -> tuple[list[int], list[int], Rex | None]:
    """A join condition over `left + right` (left `width` columns wide) as the equalities between a left and a
    right column (left indexes, right indexes from 0) and the AND of the other conjuncts (None: none)."""
    left_keys: list[int] = []
    right_keys: list[int] = []
    remainder: Rex | None = None
    for conjunct in _conjuncts(rex):
        if isinstance(conjunct, Call) and conjunct.op == "equals":
            a, b = conjunct.operands
            if isinstance(a, InputRef) and isinstance(b, InputRef):
                if b.index < width <= a.index:
                    a, b = b, a
                if a.index < width <= b.index:
                    left_keys.append(a.index)
                    right_keys.append(b.index - width)
                    continue
        remainder = conjunct if remainder is None else Call("and", (remainder, conjunct), DataTypes.BOOLEAN())
    return left_keys, right_keys, remainder


def _conjuncts(rex: Rex) -> list[Rex]:
    if isinstance(rex, Call) and rex.op == "and":
        return _conjuncts(rex.operands[0]) + _conjuncts(rex.operands[1])
    return [rex]


def plan_aggregate(
    input: RelNode,
    group_items: Sequence[Expression],
    select_items: Sequence[Expression],
    sql: bool = False,
    having: Expression | None = None,
    window: WindowSpec | None = None,
    window_alias: str | None = None,
) -> RelNode:
    """GROUP BY `group_items`, then the select list over the keys and aggregates (Flink's plan: a Calc that
    computes the keys and aggregate arguments, the (window) aggregate, a Calc for the select list)."""
    resolver = Resolver(input.schema)
    key_rexes = [resolver.resolve(g) for g in group_items]
    collector = _AggCollector(resolver, [], [], sql)
    collector.grouped = bool(group_items) or window is not None
    select_items = (
        expand_star(select_items, input)
        if not any(s.kind == "star" for s in select_items)
        else _grouped_star(select_items, group_items)
    )
    for item in select_items:
        collector.collect(item, len(key_rexes))
    if having is not None:
        collector.collect(having, len(key_rexes))
    _check_user_aggregates([c for _, c in collector.calls], input, window)
    pre_columns = [Column(_key_name(g, i, input), r.type) for i, (g, r) in enumerate(zip(group_items, key_rexes))] + [
        Column(f"$f{len(key_rexes) + i}", r.type) for i, r in enumerate(collector.arg_rexes)
    ]
    rowtime = None
    if window is not None:
        rowtime_rex = InputRef(window.time_index, input.schema[window.time_index].type, input.names[window.time_index])
        rowtime = len(pre_columns)
        pre_columns.append(Column(input.names[window.time_index], rowtime_rex.type))
        pre = Calc(tuple(pre_columns), input, tuple(key_rexes + collector.arg_rexes + [rowtime_rex]), None)
    else:
        pre = Calc(tuple(pre_columns), input, tuple(key_rexes + collector.arg_rexes), None)
    group = tuple(range(len(key_rexes)))
    agg_calls = []
    names_used: set[str] = set()
    for i, (_, call) in enumerate(collector.calls):
        name = f"EXPR${i}"
        names_used.add(name)
        agg_calls.append(replace(call, name=name))
    key_columns = [pre_columns[i] for i in group]
    agg_columns = [Column(c.name, c.type) for c in agg_calls]
    if window is not None:
        ts_type = DataTypes.TIMESTAMP(3, False)
        rowtime_type = replace(input.schema[window.time_index].type, nullable=False)
        columns = (
            key_columns
            + agg_columns
            + [Column("window_start", ts_type), Column("window_end", ts_type), Column("window_time", rowtime_type)]
        )
        agg: RelNode = WindowAggregate(
            tuple(columns),
            pre,
            # a SESSION's partition keys are its group keys (else the SQL planner plans a window TVF)
            replace(window, time_index=rowtime, partition=group if window.partition else ()),
            group,
            tuple(agg_calls),
        )
    else:
        agg = Aggregate(tuple(key_columns + agg_columns), pre, group, tuple(agg_calls))
    extra = {expression_key(g): i for i, g in enumerate(group_items)}
    for j, (key, _) in enumerate(collector.calls):
        extra[key] = len(key_rexes) + j
    if window is not None and window_alias is not None:
        base = len(key_rexes) + len(agg_calls)
        for offset, prop in enumerate(("window_start", "window_end", "window_rowtime")):
            extra[expression_key(Expression("call", prop, (Expression("field", window_alias),)))] = base + offset
        if agg.schema[base + 2].type.time_attribute == "PROCTIME":  # w.proctime: a processing-time window's time
            extra[expression_key(Expression("call", "proctime_field", (Expression("field", window_alias),)))] = base + 2
    post_resolver = Resolver(agg.schema, extra, ungrouped=input.names)
    key_count, agg_count = len(key_rexes), len(agg_calls)
    post_resolver.names = [
        c.name if i < key_count or window is not None and i >= key_count + agg_count else ""
        for i, c in enumerate(agg.schema)
    ]
    rexes, columns = [], []
    agg_counter = 0
    for position, item in enumerate(select_items):
        rex = post_resolver.resolve(item)
        if item.kind == "alias" or item.kind == "field":
            name = output_name(item, position, sql)
        elif sql:
            name = f"EXPR${position}"
        elif contains_aggregate(item) or _is_window_property(item):
            name = f"EXPR${agg_counter}"
            agg_counter += 1
            if _is_window_property(item):
                rex = replace(rex, type=replace(rex.type, nullable=True))
        else:
            name = f"_c{position}"
        columns.append(Column(name, rex.type))
        rexes.append(rex)
    check_unique([c.name for c in columns])
    condition = resolve_condition(having, post_resolver) if having is not None else None
    return Calc(tuple(columns), agg, tuple(rexes), condition)


def _check_user_aggregates(calls: Sequence[AggCall], input: RelNode, window: WindowSpec | None) -> None:
    """Flink's rules for udafs: over an updating input they must `retract`; in a session window, `merge`."""
    from fluvial.table.udf import overrides

    for call in calls:
        if call.function is None:
            continue
        name = call.function._name
        if call.function._pandas:
            if window is None:
                raise ValidationException(
                    f"The pandas (vectorized) aggregate function {name} runs in a window aggregation or an OVER "
                    "window only in streaming mode (a window TVF, a group window or OVER), as in Flink"
                )
            continue
        if input.changelog_mode.value != "[I]" and not overrides(call.function._func, "retract"):
            raise ValidationException(
                f"The aggregate function {name} is applied to an input that emits updates (retractions), so it "
                "must implement retract(accumulator, *args)"
            )
        if window is not None and window.kind.value == "SESSION" and not overrides(call.function._func, "merge"):
            raise ValidationException(
                f"The aggregate function {name} is used in a session window, whose windows merge, so it must "
                "implement merge(accumulator, accumulators)"
            )


def _is_window_property(e: Expression) -> bool:
    return e.kind == "call" and e.name in ("window_start", "window_end", "window_rowtime", "proctime_field")


def _grouped_star(items: Sequence[Expression], group_items: Sequence[Expression]) -> list[Expression]:
    out: list[Expression] = []
    for e in items:
        out.extend(group_items if e.kind == "star" else [e])
    return out


def _key_name(e: Expression, i: int, input: RelNode) -> str:
    if e.kind == "field":
        return e.name or f"$f{i}"
    if e.kind == "alias":
        return e.aliases[0]
    return f"$f{i}"
