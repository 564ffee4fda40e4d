"""`Table` and its grouped forms (PyFlink `pyflink.table.table`): each operation returns a new Table over a
new logical plan node; nothing runs until `execute`, `execute_insert` or a conversion to a DataStream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fluvial.table.errors import ValidationException
from fluvial.table.expression import Expression, _expr
from fluvial.table.expressions import col
from fluvial.table.planner.logical import Aggregate, Calc, Column, Limit, RelNode, Union, WindowKind, WindowSpec
from fluvial.table.planner.resolve import (
    Resolver,
    check_unique,
    contains_aggregate,
    expand_star,
    plan_aggregate,
    project,
    resolve_condition,
)
from fluvial.table.planner.rex import InputRef
from fluvial.table.table_result import TableSchema
from fluvial.table.types import common_type

if TYPE_CHECKING:
    from fluvial.table.table_environment import TableEnvironment

__all__ = ["Table", "GroupedTable", "GroupWindowedTable", "WindowGroupedTable"]


def _exprs(fields: Sequence[Any]) -> list[Expression]:
    out: list[Expression] = []
    for f in fields:
        if isinstance(f, str):
            from fluvial.table.sql.convert import parse_expression_list

            out.extend(parse_expression_list(f))
        else:
            out.append(_expr(f))
    return out


class Table:
    """A table: a logical plan in a TableEnvironment."""

    def __init__(self, node: RelNode, t_env: TableEnvironment) -> None:
        self._node = node
        self._t_env = t_env
        self._registered_name: str | None = None

    # -- column access (`table.price`) --------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Expression:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._node.names:
            raise AttributeError(f"The table has no column '{name}'; its columns are {self._node.names}")
        return col(name)

    def __str__(self) -> str:
        """The table's name in SQL text (`"SELECT * FROM %s" % table`): registered on first use, as PyFlink's."""
        if self._registered_name is None:
            self._registered_name = self._t_env._register_anonymous(self)
        return self._registered_name

    # -- relational operations ----------------------------------------------------------------------------------

    def select(self, *fields: Any) -> Table:
        items = _exprs(fields)
        if any(contains_aggregate(e) for e in items):
            return self._new(plan_aggregate(self._node, [], items))
        return self._new(project(self._node, items))

    def where(self, predicate: Any) -> Table:
        condition = _exprs([predicate])[0]
        resolver = Resolver(self._node.schema)
        rex = resolve_condition(condition, resolver)
        return self._new(Calc(self._node.schema, self._node, None, rex))

    filter = where

    def alias(self, field: str, *fields: str) -> Table:
        names = [field, *fields]
        if len(names) != len(self._node.schema):
            raise ValidationException(
                f"Aliasing more fields than we actually have: the table has "
                f"{len(self._node.schema)} columns {self._node.names}, got {names}"
            )
        return self._rename(names)

    def _rename(self, names: list[str]) -> Table:
        check_unique(names)
        rexes = tuple(InputRef(i, c.type, c.name) for i, c in enumerate(self._node.schema))
        columns = tuple(Column(n, c.type) for n, c in zip(names, self._node.schema))
        return self._new(Calc(columns, self._node, rexes, None))

    def group_by(self, *fields: Any) -> GroupedTable:
        return GroupedTable(self, _exprs(fields))

    def distinct(self) -> Table:
        node = self._node
        return self._new(Aggregate(node.schema, node, tuple(range(len(node.schema))), ()))

    def union_all(self, right: Table) -> Table:
        return self._new(_union(self._node, right._node))

    def union(self, right: Table) -> Table:
        return self.union_all(right).distinct()

    def limit(self, fetch: int, offset: int = 0) -> Table:
        return self._new(Limit(self._node.schema, self._node, offset, fetch))

    def fetch(self, fetch: int) -> Table:
        if isinstance(self._node, Limit) and self._node.fetch is None:
            return self._new(Limit(self._node.schema, self._node.input, self._node.offset, fetch))
        return self.limit(fetch)

    def offset(self, offset: int) -> Table:
        return self._new(Limit(self._node.schema, self._node, offset, None))

    def add_columns(self, *fields: Any) -> Table:
        items = [col(n) for n in self._node.names] + _exprs(fields)
        return self._new(project(self._node, items))

    def add_or_replace_columns(self, *fields: Any) -> Table:
        added = _exprs(fields)
        names = list(self._node.names)
        items: list[Expression] = [col(n) for n in names]
        for e in added:
            name = e.aliases[0] if e.kind == "alias" else e.name if e.kind == "field" else None
            if name in names:
                items[names.index(name)] = e if e.kind == "alias" else e.alias(name)
            else:
                items.append(e)
        return self._new(project(self._node, items))

    def rename_columns(self, *fields: Any) -> Table:
        renames: dict[str, str] = {}
        for e in _exprs(fields):
            if e.kind != "alias" or e.args[0].kind != "field":
                raise ValidationException(f"rename_columns takes col('old').alias('new'), got {e.to_string()}")
            if e.args[0].name not in self._node.names:
                raise ValidationException(
                    f"Field reference expression expected: {e.args[0].name} is not a column of {self._node.names}"
                )
            renames[e.args[0].name or ""] = e.aliases[0]
        return self._rename([renames.get(n, n) for n in self._node.names])

    def drop_columns(self, *fields: Any) -> Table:
        dropped = set()
        for e in _exprs(fields):
            if e.kind != "field" or e.name not in self._node.names:
                raise ValidationException(
                    f"drop_columns takes columns of the table {self._node.names}, got {e.to_string()}"
                )
            dropped.add(e.name)
        return self._new(project(self._node, [col(n) for n in self._node.names if n not in dropped]))

    def join(self, right: Table, join_predicate: Any = None) -> Table:
        """Inner join; the two tables' column names must differ (rename first), as in Flink's Table API."""
        return self._join(right, "INNER", join_predicate)

    def left_outer_join(self, right: Table, join_predicate: Any = None) -> Table:
        return self._join(right, "LEFT", join_predicate)

    def right_outer_join(self, right: Table, join_predicate: Any = None) -> Table:
        return self._join(right, "RIGHT", join_predicate)

    def full_outer_join(self, right: Table, join_predicate: Any = None) -> Table:
        return self._join(right, "FULL", join_predicate)

    def _join(self, right: Table, join_type: str, predicate: Any) -> Table:
        from fluvial.table.planner.resolve import plan_join

        clash = set(self._node.names) & set(right._node.names)
        if clash:
            raise ValidationException(
                f"join of tables with the same column names {sorted(clash)}: rename them "
                "first (rename_columns(col('id').alias('r_id')))"
            )
        condition = _exprs([predicate])[0] if predicate is not None else None
        return self._new(plan_join(self._node, right._node, join_type, condition))

    def map(self, func: Any) -> Table:
        """A scalar function over each row: `map(f(col("a"), col("b")))`, or `map(f)` (f gets the row); its
        ROW result's fields become the columns (renamed with `.alias(...)`)."""
        from fluvial.table.planner.udf_plans import plan_map

        return self._new(plan_map(self._node, func))

    def aggregate(self, func: Any) -> AggregatedTable:
        """A udaf over the whole table; its ROW result's fields become the columns. Close with `select`."""
        return self.group_by().aggregate(func)

    def flat_aggregate(self, func: Any) -> FlatAggregateTable:
        """A udtaf over the whole table: the rows its `emit_value` yields. Close with `select`."""
        return self.group_by().flat_aggregate(func)

    def flat_map(self, func: Any) -> Table:
        """A table function over each row: its output columns only (`f0`, ... unless aliased)."""
        return self._new(self._correlate(func, keep_input=False))

    def join_lateral(self, table_function_call: Any, join_predicate: Any = None) -> Table:
        """Each row joined with the rows a table function gives for it (inner: rows it gives none for drop)."""
        return self._new(self._correlate(table_function_call, keep_input=True, condition=join_predicate))

    def left_outer_join_lateral(self, table_function_call: Any, join_predicate: Any = None) -> Table:
        return self._new(
            self._correlate(table_function_call, keep_input=True, left_outer=True, condition=join_predicate)
        )

    def _correlate(self, call: Any, keep_input: bool, left_outer: bool = False, condition: Any = None) -> RelNode:
        from fluvial.table.planner.logical import Correlate
        from fluvial.table.udf import UserDefinedFunctionWrapper

        node = self._node
        aliases: tuple[str, ...] = ()
        if isinstance(call, Expression) and call.kind == "alias":
            aliases = call.aliases
            call = call.args[0]
        if isinstance(call, UserDefinedFunctionWrapper):
            function, operands = call, None
        elif isinstance(call, Expression) and call.kind == "call" and _table_function(call, self._t_env) is not None:
            # `f(col("a"))` of a udtf, `call(f, ...)`, or `call("name", ...)` of a registered one (PyFlink's three)
            function = _table_function(call, self._t_env)
            resolver = Resolver(node.schema)
            operands = tuple(resolver.resolve(a) for a in call.args)
        else:
            raise ValidationException(f"expected a table function made by udtf(...), got {call!r}")
        if function._kind != "table":
            raise ValidationException(
                f"{function._name} is a scalar function; flat_map and join_lateral take a table function (udtf)"
            )
        names = list(aliases or function._alias_names) or [f"f{i}" for i in range(len(function._result_types))]
        if len(names) != len(function._result_types):
            raise ValidationException(
                f"the table function {function._name} has {len(function._result_types)} "
                f"columns but {len(names)} aliases"
            )
        columns = (list(node.schema) if keep_input else []) + [
            Column(n, t) for n, t in zip(names, function._result_types)
        ]
        check_unique([c.name for c in columns])
        rex = None
        if condition is not None:
            rex = resolve_condition(_exprs([condition])[0], Resolver(columns))
        return Correlate(tuple(columns), node, function, operands, keep_input, left_outer, rex)

    def window(self, window: Any) -> GroupWindowedTable:
        return GroupWindowedTable(self, window)

    def over_window(self, *over_windows: Any) -> OverWindowedTable:
        """Over windows for `.select(..., col("b").sum.over(col("w")))` (one window, as Flink supports)."""
        if len(over_windows) != 1:
            raise ValidationException(f"over_window takes one over window; {len(over_windows)} were given")
        return OverWindowedTable(self, over_windows[0])

    def order_by(self, *fields: Any) -> Table:
        """Streaming sort: by a time attribute ascending first (`order_by(col("ts"), col("a").desc)`), emitted in
        time order as the watermark passes, as Flink's TemporalSort."""
        from fluvial.table.planner.sort import plan_temporal_sort

        keys = []
        for e in _exprs(fields):
            descending = e.kind == "call" and e.name in ("desc", "asc")
            target = e.args[0] if descending else e
            if target.kind != "field":
                raise ValidationException(f"order_by takes columns (optionally .asc / .desc); got {e.to_string()}")
            keys.append((target.name or "", e.kind == "call" and e.name == "desc"))
        return self._new(plan_temporal_sort(self._node, keys))

    # -- running and conversion ---------------------------------------------------------------------------------

    def execute(self) -> Any:
        return self._t_env._collect(self._node)

    def execute_insert(self, table_path_or_descriptor: Any, overwrite: bool = False) -> Any:
        return self._t_env._execute_inserts([(table_path_or_descriptor, self._node)])

    def insert_into(self, table_path: str) -> Any:
        return self._t_env._execute_inserts([(table_path, self._node)])

    def explain(self, *extra_details: Any) -> str:
        return self._t_env._explain([(None, self._node)], *extra_details)

    def print_schema(self) -> None:
        print(self.get_schema())

    def get_schema(self) -> TableSchema:
        return TableSchema(self._node.schema)

    def get_resolved_schema(self) -> TableSchema:
        return TableSchema(self._node.schema)

    def to_pandas(self) -> Any:
        import pandas as pd

        with self.execute().collect() as rows:
            data = [list(r) for r in rows if r.get_row_kind().name in ("INSERT", "UPDATE_AFTER")]
        return pd.DataFrame(data, columns=self._node.names)

    def _new(self, node: RelNode) -> Table:
        return Table(node, self._t_env)


def _union(left: RelNode, right: RelNode) -> RelNode:
    if len(left.schema) != len(right.schema):
        raise ValidationException(
            f"Union two tables of different column sizes: {len(left.schema)} and {len(right.schema)}"
        )
    columns = []
    for a, b in zip(left.schema, right.schema):
        try:
            columns.append(Column(a.name, common_type([a.type, b.type])))
        except TypeError as error:
            raise ValidationException(f"Union of incompatible types: {error}") from None
    children: list[RelNode] = []
    for n in (left, right):
        children.extend(n.children if isinstance(n, Union) else [n])
    return Union(tuple(columns), tuple(children))


def _table_function(call: Expression, t_env: Any) -> Any:
    """The table function an Expression calls: a udtf's own call, `call(udtf, ...)`, or a registered name."""
    function = call.value if call.name in ("__udtf__", "__udf__") else t_env._catalog.functions.get(call.name or "")
    return function if getattr(function, "_kind", None) == "table" else None


class GroupedTable:
    def __init__(self, table: Table, keys: list[Expression]) -> None:
        self._table = table
        self._keys = keys

    def select(self, *fields: Any) -> Table:
        return self._table._new(plan_aggregate(self._table._node, self._keys, _exprs(fields)))

    def aggregate(self, func: Any) -> AggregatedTable:
        """A udaf per group: the group keys, then its result's columns. Close with `select`."""
        from fluvial.table.planner.udf_plans import plan_udaf_aggregate

        return AggregatedTable(self._table._new(plan_udaf_aggregate(self._table._node, self._keys, func)))

    def flat_aggregate(self, func: Any) -> FlatAggregateTable:
        """A udtaf per group: the group keys, then each row its `emit_value` yields. Close with `select`."""
        from fluvial.table.planner.udf_plans import plan_flat_aggregate

        return FlatAggregateTable(self._table._new(plan_flat_aggregate(self._table._node, self._keys, func)))


class AggregatedTable:
    """`aggregate(...)`'s result, closed by `select` over its columns (PyFlink's AggregatedTable)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def select(self, *fields: Any) -> Table:
        return self._table.select(*fields)


class FlatAggregateTable(AggregatedTable):
    """`flat_aggregate(...)`'s result, closed by `select` (PyFlink's FlatAggregateTable)."""


class GroupWindowedTable:
    def __init__(self, table: Table, window: Any) -> None:
        self._table = table
        self._window = window

    def group_by(self, *fields: Any) -> WindowGroupedTable:
        return WindowGroupedTable(self._table, self._window, _exprs(fields))


class WindowGroupedTable:
    def __init__(self, table: Table, window: Any, keys: list[Expression]) -> None:
        self._table = table
        self._window = window
        self._keys = keys

    def select(self, *fields: Any) -> Table:
        node = self._table._node
        window = self._window
        alias = window.alias_name
        keys = [k for k in self._keys if not (k.kind == "field" and k.name == alias)]
        if window.time_field is None or window.time_field.kind != "field":
            raise ValidationException("A group window needs .on(col('rowtime')) naming a time attribute column")
        time_name = window.time_field.name
        if time_name not in node.names:
            raise ValidationException(f"Cannot resolve field [{time_name}], input field list: {node.names}")
        index = node.names.index(time_name)
        if node.schema[index].type.time_attribute is None:
            raise ValidationException(
                f"A group window expects a time attribute for grouping in a stream environment: column "
                f"'{time_name}' has no watermark; declare one (Schema.watermark / WATERMARK FOR {time_name}) or use "
                "a PROCTIME() column"
            )
        spec = WindowSpec(WindowKind(window.kind), index, window.size, window.slide)
        return self._table._new(plan_aggregate(node, keys, _exprs(fields), window=spec, window_alias=alias))


class OverWindowedTable:
    def __init__(self, table: Table, window: Any) -> None:
        self._table = table
        self._window = window

    def select(self, *fields: Any) -> Table:
        from fluvial.table.planner.over import collect_over, plan_over, table_api_frame

        node = self._table._node
        items = expand_star(_exprs(fields), node)
        calls: list[Expression] = []
        collect_over(items, calls)
        for call in calls:
            if call.value != self._window.alias_name:
                raise ValidationException(
                    f"Over window '{call.value}' is not defined: over_window(...) named it '{self._window.alias_name}'"
                )
        return self._table._new(plan_over(node, items, table_api_frame(self._window, node), sql=False))
