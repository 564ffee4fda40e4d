"""Plans a SQL query (sqlglot's Select/Union tree) into a logical plan.

Handled: SELECT [DISTINCT] list FROM table | (subquery) | TABLE(TUMBLE/HOP/CUMULATE(TABLE t,
DESCRIPTOR(ts), ...)) [, LATERAL TABLE(udtf(...)) | UNNEST(...)] [WHERE] [GROUP BY] [HAVING] [LIMIT/OFFSET], UNION [ALL], VALUES. A GROUP BY over a window
TVF that groups by window_start and window_end becomes an event-time window aggregation; any other GROUP BY a
changelog-emitting group aggregation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from fluvial.table.errors import ValidationException
from fluvial.table.expression import Expression
from fluvial.table.planner.logical import Calc, Column, Limit, RelNode, Values, WindowKind, WindowSpec
from fluvial.table.planner.over import OverFrame, collect_over, has_over, plan_over
from fluvial.table.planner.resolve import Resolver, contains_aggregate, plan_aggregate, project, resolve_condition
from fluvial.table.planner.rex import InputRef
from fluvial.table.sql.convert import Converter
from fluvial.table.sql.lateral import is_lateral, is_table_function, plan_lateral, plan_table_function_scan
from fluvial.table.table import _union
from fluvial.table.types import common_type

if TYPE_CHECKING:
    from fluvial.table.table_environment import TableEnvironment

__all__ = ["QueryPlanner"]

_WINDOW_COLUMNS = ("window_start", "window_end", "window_time")


@dataclass
class _WindowedInput:
    """FROM TABLE(TUMBLE(...)): the input and the window; the TVF's own columns come from the aggregation."""

    input: RelNode
    spec: WindowSpec


class QueryPlanner:
    def __init__(self, t_env: TableEnvironment, text: str) -> None:
        self.t_env = t_env
        self.convert = Converter(text)

    def plan(self, node: exp.Expression) -> RelNode:
        if isinstance(node, exp.Subquery):
            return self.plan(node.this)
        if isinstance(node, exp.Union):
            left, right = self.plan(node.this), self.plan(node.expression)
            union = _union(left, right)
            if node.args.get("distinct"):
                from fluvial.table.planner.logical import Aggregate

                return Aggregate(union.schema, union, tuple(range(len(union.schema))), ())
            return union
        if isinstance(node, exp.Values):
            return self.values(node)
        if isinstance(node, exp.Select):
            return self.select(node)
        if isinstance(node, (exp.Intersect, exp.Except)):
            raise self.convert.error(node, f"{type(node).__name__.upper()} is not supported yet")
        raise self.convert.error(node, f"not a query: {node.sql()[:60]}")

    # -- FROM ---------------------------------------------------------------------------------------------------

    def source(self, node: exp.Expression | None) -> RelNode | _WindowedInput:
        if node is None:
            return Values((), ((),))
        alias = node.args.get("alias")
        columns = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) and alias.columns else None
        if columns is not None and isinstance(node, exp.Unnest) and isinstance(node.args.get("offset"), exp.Identifier):
            columns.append(node.args["offset"].name)  # `WITH ORDINALITY AS A(x, n)`: sqlglot keeps n apart
        result = self._source(node)
        if columns is not None and not isinstance(result, _WindowedInput):
            if len(columns) != len(result.schema):
                raise self.convert.error(
                    node,
                    f"List of column aliases must have same degree as table; table has "
                    f"{len(result.schema)} columns {result.names}, whereas alias list has "
                    f"{len(columns)} columns",
                )
            rexes = tuple(InputRef(i, c.type, c.name) for i, c in enumerate(result.schema))
            result = Calc(tuple(Column(n, c.type) for n, c in zip(columns, result.schema)), result, rexes, None)
        return result

    def _source(self, node: exp.Expression) -> RelNode | _WindowedInput:
        if isinstance(node, exp.Subquery):
            return self.plan(node.this)
        if isinstance(node, exp.Table):
            inner = node.this
            if isinstance(inner, exp.Anonymous) and str(inner.this).upper() == "TABLE":
                if is_table_function(inner.expressions[0]):
                    return plan_table_function_scan(self.convert, inner.expressions[0])
                return self.window_tvf(inner.expressions[0])
            if isinstance(inner, exp.Anonymous):
                return self.window_tvf(inner)
            name = node.name
            return self.t_env._catalog.scan(name, self.convert.position(node))
        if isinstance(node, exp.Values):
            return self.values(node)
        if isinstance(node, exp.Unnest):
            return plan_table_function_scan(self.convert, node)
        raise self.convert.error(node, f"unsupported FROM item {node.sql()[:60]}")

    def window_tvf(self, call: exp.Expression) -> _WindowedInput:
        if not isinstance(call, exp.Anonymous):
            raise self.convert.error(call, "TABLE(...) takes a window function: TUMBLE, HOP or CUMULATE")
        name = str(call.this).upper()
        args = list(call.expressions)
        if name not in ("TUMBLE", "HOP", "CUMULATE", "SESSION"):
            raise self.convert.error(
                call, f"unknown table function {name}; Flink's window functions are TUMBLE, HOP, CUMULATE and SESSION"
            )
        partition_node = None
        if len(args) > 1 and isinstance(args[1], exp.Anonymous) and str(args[1].this).upper() == "PARTITION_BY":
            partition_node = args.pop(1)
            if name != "SESSION":
                raise self.convert.error(
                    partition_node, f"{name} takes no PARTITION BY: only SESSION's table argument is partitioned"
                )
        if len(args) < 3 or not isinstance(args[1], exp.Anonymous) or str(args[1].this).upper() != "DESCRIPTOR":
            raise self.convert.error(call, f"{name}(TABLE t, DESCRIPTOR(time_col), INTERVAL ...) expected")
        table_arg = args[0]
        input_node = self.source(exp.Table(this=table_arg.this) if isinstance(table_arg, exp.Column) else table_arg)
        if isinstance(input_node, _WindowedInput):
            raise self.convert.error(call, "a window function's input cannot be another window function")
        time_column = args[1].expressions[0]
        time_name = time_column.name
        if time_name not in input_node.names:
            raise self.convert.error(
                time_column, f"Column '{time_name}' not found in table; its columns are [{', '.join(input_node.names)}]"
            )
        index = input_node.names.index(time_name)
        time_type = input_node.schema[index].type
        if time_type.time_attribute is None:
            raise self.convert.error(
                time_column,
                f"The window function {name}(TABLE table_name, DESCRIPTOR(timecol), datetime "
                f"interval) requires the timecol to be a time attribute type, but is {time_type}: declare "
                f"a watermark on it (WATERMARK FOR {time_name} AS ...) or use a PROCTIME() column",
            )
        intervals = [self._interval_millis(a) for a in args[2:]]
        if name == "TUMBLE":
            spec = WindowSpec(WindowKind.TUMBLE, index, intervals[0], 0, intervals[1] if len(intervals) > 1 else 0)
        elif name == "HOP":
            if len(intervals) < 2:
                raise self.convert.error(call, "HOP takes a slide and a size")
            slide, size = intervals[0], intervals[1]
            if size % slide != 0:
                raise self.convert.error(
                    call,
                    f"HOP table function based aggregate requires size must be an "
                    f"integral multiple of slide, but got size {size} ms and slide "
                    f"{slide} ms",
                )
            spec = WindowSpec(WindowKind.HOP, index, size, slide, intervals[2] if len(intervals) > 2 else 0)
        elif name == "CUMULATE":
            if len(intervals) < 2:
                raise self.convert.error(call, "CUMULATE takes a step and a max size")
            step, size = intervals[0], intervals[1]
            if size % step != 0:
                raise self.convert.error(
                    call,
                    f"CUMULATE table function based aggregate requires maxSize must be "
                    f"an integral multiple of step, but got maxSize {size} ms and step "
                    f"{step} ms",
                )
            spec = WindowSpec(WindowKind.CUMULATE, index, size, step)
        else:
            if len(intervals) != 1:
                raise self.convert.error(call, "SESSION(TABLE t [PARTITION BY k], DESCRIPTOR(ts), gap) takes one gap")
            partition = []
            for key in partition_node.expressions if partition_node is not None else []:
                if not isinstance(key, exp.Column) or key.name not in input_node.names:
                    raise self.convert.error(
                        key, f"Column '{key.sql()}' not found in table; its columns are [{', '.join(input_node.names)}]"
                    )
                partition.append(input_node.names.index(key.name))
            spec = WindowSpec(WindowKind.SESSION, index, intervals[0], partition=tuple(partition))
        return _WindowedInput(input_node, spec)

    def _interval_millis(self, node: exp.Expression) -> int:
        e = self.convert.expr(node)
        if e.kind != "literal" or e.data_type is None or e.data_type.name != "INTERVAL_DAY_TIME":
            raise self.convert.error(node, "a window size is a day-time interval literal such as INTERVAL '5' SECOND")
        return int(e.value)

    # -- SELECT -------------------------------------------------------------------------------------------------

    def select(self, node: exp.Select) -> RelNode:
        from fluvial.table.planner.resolve import qualified_columns, qualified_names

        from_ = node.args.get("from_") or node.args.get("from")
        if node.args.get("joins"):
            node = _comma_join_condition(node, self.convert)
            source, qualifiers = self.joined(from_.this, node.args["joins"])
            tokens = (qualified_columns.set(qualifiers), qualified_names.set(source.names))
            try:
                return self._select(node, source)
            finally:
                qualified_names.reset(tokens[1])
                qualified_columns.reset(tokens[0])
        deduplicated = self._deduplicated(node)
        if deduplicated is not None:
            return deduplicated
        return self._select(node, self.source(from_.this if from_ is not None else None))

    def joined(self, first: exp.Expression, joins: list) -> tuple[RelNode, dict[tuple[str, str], int]]:
        """FROM a JOIN b ON ... [JOIN c ON ...]: a left-deep tree of regular joins, and where each
        `alias.column` lands in the joined row."""
        from fluvial.table.planner.resolve import plan_join, qualified_columns, qualified_names

        left = self._relation(first)
        qualifiers = {(first.alias_or_name, n): i for i, n in enumerate(left.names)}
        for join in joins:
            if is_lateral(join):
                left, qualifiers = plan_lateral(self.convert, left, qualifiers, join)
                continue
            version = join.this.args.get("version") if isinstance(join.this, exp.Table) else None
            if version is not None:
                left, qualifiers = self._lookup_joined(left, qualifiers, join, version)
                continue
            right = self._relation(join.this)
            side = str(join.args.get("side") or "").upper()
            kind = str(join.args.get("kind") or "").upper()
            if kind == "CROSS" or join.args.get("on") is None:
                raise self.convert.error(
                    join,
                    "a streaming join needs ON with an equality between the tables' "
                    "columns; CROSS JOIN and USING are not supported yet",
                )
            join_type = side if side in ("LEFT", "RIGHT", "FULL") else "INNER"
            combined, names = _joined_qualifiers(qualifiers, left, join.this.alias_or_name, right)
            tokens = (qualified_columns.set(combined), qualified_names.set(names))
            try:
                condition = self.convert.expr(join.args["on"])
                left = plan_join(left, right, join_type, condition)
            finally:
                qualified_names.reset(tokens[1])
                qualified_columns.reset(tokens[0])
            qualifiers = combined
        return left, qualifiers

    def _lookup_joined(
        self, left: RelNode, qualifiers: dict[tuple[str, str], int], join: exp.Join, version: exp.Expression
    ) -> tuple[RelNode, dict[tuple[str, str], int]]:
        """`JOIN dim FOR SYSTEM_TIME AS OF o.proc_time AS d ON ...`: a lookup join (planner/lookup_join.py); as of
        an event-time attribute, a temporal join of a versioned table (planner/temporal_join.py)."""
        from fluvial.table.planner.lookup_join import plan_lookup_join
        from fluvial.table.planner.resolve import qualified_columns, qualified_names

        table = join.this
        if str(version.args.get("kind") or "").upper() != "AS OF" or join.args.get("on") is None:
            raise self.convert.error(join, "a temporal join is JOIN t FOR SYSTEM_TIME AS OF o.proc_time ON o.k = t.k")
        lookup = self.t_env._catalog.scan(table.name, self.convert.position(table))
        side = str(join.args.get("side") or "").upper()
        join_type = side if side in ("LEFT", "RIGHT", "FULL") else "INNER"
        time = self.convert.expr(version.expression)
        tokens = (qualified_columns.set(qualifiers), qualified_names.set(left.names))
        try:
            period = Resolver(left.schema).resolve(time)
        finally:
            qualified_names.reset(tokens[1])
            qualified_columns.reset(tokens[0])
        combined, names = _joined_qualifiers(qualifiers, left, table.alias_or_name, lookup)
        tokens = (qualified_columns.set(combined), qualified_names.set(names))
        try:
            condition = self.convert.expr(join.args["on"])
            if period.type.time_attribute == "ROWTIME" and isinstance(period, InputRef):
                # as of an event time: a versioned table's version valid then (planner/temporal_join.py)
                from fluvial.table.planner.temporal_join import plan_temporal_join

                joined: RelNode = plan_temporal_join(
                    left, lookup, table.name, join_type, condition, time, period.index, self.convert.position(table)
                )
                return joined, combined
            joined = plan_lookup_join(
                left, lookup, table.name, join_type, condition, time, period, self.convert.position(table)
            )
        finally:
            qualified_names.reset(tokens[1])
            qualified_columns.reset(tokens[0])
        return joined, combined

    def _relation(self, node: exp.Expression) -> RelNode:
        relation = self.source(node)
        if isinstance(relation, _WindowedInput):
            return self._window_table(relation, node)
        return relation

    def _window_table(self, windowed: _WindowedInput, node: exp.Expression) -> RelNode:
        from fluvial.table.planner.window_join import window_table

        try:
            return window_table(windowed.input, windowed.spec)
        except ValidationException as error:
            raise self.convert.error(node, str(error)) from None

    def _deduplicated(self, node: exp.Select) -> RelNode | None:
        """`SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY k ORDER BY rowtime [DESC]) AS rn FROM t)
        WHERE rn = 1`: Flink's deduplication (the first or last row per key by event time), with `rn` = 1."""
        from_ = node.args.get("from_") or node.args.get("from")
        where = node.args.get("where")
        if from_ is None or not isinstance(from_.this, exp.Subquery) or where is None:
            return None
        inner = from_.this.this
        if not isinstance(inner, exp.Select):
            return None
        ranked = [
            e
            for e in inner.expressions
            if isinstance(e, exp.Alias) and isinstance(e.this, exp.Window) and isinstance(e.this.this, exp.RowNumber)
        ]
        if not ranked:
            return None
        rank, condition = ranked[0], where.this
        rn = rank.alias
        limit = _rank_limit(condition, rn)
        if limit is None:
            raise self.convert.error(
                condition,
                f"fluvial plans ROW_NUMBER() with WHERE {rn} = 1, {rn} <= N or {rn} < N (deduplication and Top-N) only",
            )
        window = rank.this
        others = [e for e in inner.expressions if e is not rank]
        inner_source = self.source((inner.args.get("from_") or inner.args.get("from")).this)
        if isinstance(inner_source, _WindowedInput):
            raise self.convert.error(inner, "deduplication over a window table function is not supported yet")
        base = project(inner_source, [self.convert.expr(e) for e in others], sql=True)
        keys = [self.convert.expr(p) for p in window.args.get("partition_by") or []]
        order = window.args.get("order")
        if order is None or not order.expressions:
            raise self.convert.error(window, "ROW_NUMBER() needs ORDER BY")
        names = base.names
        key_indexes = []
        for k in keys:
            if k.kind != "field" or k.name not in names:
                raise self.convert.error(window, "PARTITION BY takes columns of the subquery")
            key_indexes.append(names.index(k.name))
        from fluvial.table.planner.logical import Deduplicate, TopN
        from fluvial.table.planner.rex import Literal
        from fluvial.table.types import DataTypes

        ordered = order.expressions[0]
        time_name = ordered.this.name if isinstance(ordered.this, exp.Column) else ""
        is_time = time_name in names and base.schema[names.index(time_name)].type.time_attribute is not None
        rank_column = Column(rn, DataTypes.BIGINT(False))
        retract = base.changelog_mode.value != "[I]"  # over an aggregation or a join: RetractStrategy
        if limit == 1 and len(order.expressions) == 1 and is_time and not retract:
            dedup = Deduplicate(
                base.schema, base, tuple(key_indexes), bool(ordered.args.get("desc")), names.index(time_name)
            )
            rexes = tuple(InputRef(i, c.type, c.name) for i, c in enumerate(dedup.schema)) + (
                Literal(1, DataTypes.BIGINT(False)),
            )
            with_rank = Calc(dedup.schema + (rank_column,), dedup, rexes, None)
        else:
            sort = []
            for o in order.expressions:
                e = self.convert.expr(o.this)
                if e.kind != "field" or e.name not in names:
                    raise self.convert.error(o, "Top-N's ORDER BY takes columns of the subquery")
                sort.append((names.index(e.name), bool(o.args.get("desc"))))
            with_rank = TopN(base.schema + (rank_column,), base, tuple(key_indexes), tuple(sort), limit, True, retract)
            if not _selects(node, rn):
                with_rank = TopN(base.schema, base, tuple(key_indexes), tuple(sort), limit, False, retract)
                rexes = tuple(InputRef(i, c.type, c.name) for i, c in enumerate(with_rank.schema)) + (
                    Literal(None, DataTypes.BIGINT()),
                )
                with_rank = Calc(with_rank.schema + (rank_column,), with_rank, rexes, None)
        node = node.copy()
        node.set("where", None)
        return self._select(node, with_rank)

    def _select(self, node: exp.Select, source: RelNode | _WindowedInput) -> RelNode:
        if node.args.get("windows"):
            node = self._inline_named_windows(node)
        items = [self.convert.expr(e) for e in node.expressions]
        where = node.args.get("where")
        group = node.args.get("group")
        having = node.args.get("having")
        windowed = isinstance(source, _WindowedInput)
        input_node = source.input if isinstance(source, _WindowedInput) else source
        if where is not None:
            condition = self.convert.expr(where.this)
            rex = resolve_condition(condition, Resolver(input_node.schema))
            input_node = Calc(input_node.schema, input_node, None, rex)
        group_items = [self.convert.expr(g) for g in group.expressions] if group is not None else []
        having_expr = self.convert.expr(having.this) if having is not None else None
        if any(has_over(e) for e in items):
            if windowed or group_items or having_expr is not None:
                raise self.convert.error(node, "OVER aggregates go in a query without GROUP BY or window functions")
            result = self._over(input_node, items)
        elif isinstance(source, _WindowedInput) and not (
            group_items or any(contains_aggregate(e) for e in items) or having_expr is not None
        ):
            result = project(self._window_table(_WindowedInput(input_node, source.spec), node), items, sql=True)
        elif isinstance(source, _WindowedInput):
            result = self._window_aggregate(source, input_node, group_items, items, having_expr, node)
        elif group_items or any(contains_aggregate(e) for e in items) or having_expr is not None:
            result = plan_aggregate(input_node, group_items, items, sql=True, having=having_expr)
        else:
            result = project(input_node, items, sql=True)
        if node.args.get("distinct"):
            from fluvial.table.planner.logical import Aggregate

            result = Aggregate(result.schema, result, tuple(range(len(result.schema))), ())
        if node.args.get("order"):
            result = self._sorted(result, node.args["order"])
        limit = node.args.get("limit")
        offset = node.args.get("offset")
        if limit is not None or offset is not None:
            fetch = int(limit.expression.this) if limit is not None else None
            skip = int(offset.expression.this) if offset is not None else 0
            result = Limit(result.schema, result, skip, fetch)
        return result

    def _inline_named_windows(self, node: exp.Select) -> exp.Select:
        """`agg OVER w ... WINDOW w AS (...)`: each `OVER w` takes the named window's PARTITION BY, ORDER BY and
        frame."""
        node = node.copy()
        named = {w.this.name: w for w in node.args["windows"]}
        node.set("windows", None)
        for window in node.find_all(exp.Window):
            alias = window.args.get("alias")
            if alias is None or window.args.get("order") is not None or window.args.get("partition_by"):
                continue
            definition = named.get(alias.name)
            if definition is None:
                raise self.convert.error(
                    window, f"Window '{alias.name}' not found; the query's WINDOW clause names {sorted(named)}"
                )
            for part in ("partition_by", "order", "spec"):
                value = definition.args.get(part)
                window.set(part, value.copy() if isinstance(value, exp.Expression) else value)
            window.set("alias", None)
        return node

    def _sorted(self, result: RelNode, order: exp.Order) -> RelNode:
        from fluvial.table.planner.sort import plan_temporal_sort

        keys = []
        for ordered in order.expressions:
            if not isinstance(ordered.this, exp.Column):
                raise self.convert.error(ordered, "ORDER BY takes columns of the query's result")
            keys.append((ordered.this.name, bool(ordered.args.get("desc"))))
        width = len(result.schema)
        hidden = [n for n, _ in keys if n not in result.names]
        if hidden and isinstance(result, Calc) and result.projections is not None and result.condition is None:
            # ORDER BY columns of the input the select list drops: carried through the sort, dropped after it
            inner = result.input
            extra = [
                InputRef(inner.names.index(n), inner.schema[inner.names.index(n)].type, n)
                for n in hidden
                if n in inner.names
            ]
            result = Calc(
                result.schema + tuple(Column(r.name, r.type) for r in extra),
                inner,
                result.projections + tuple(extra),
                None,
            )
        try:
            sort = plan_temporal_sort(result, keys)
        except ValidationException as error:
            raise self.convert.error(order, str(error)) from None
        if len(sort.schema) == width:
            return sort
        kept = tuple(InputRef(i, c.type, c.name) for i, c in enumerate(sort.schema[:width]))
        return Calc(sort.schema[:width], sort, kept, None)

    def _over(self, input_node: RelNode, items: list[Expression]) -> RelNode:
        """OVER aggregates ordered by a rowtime from UNBOUNDED PRECEDING to CURRENT ROW (all the select list's
        OVER clauses the same window): the input's columns and the aggregates' arguments, the OverAggregate,
        then the select list over them."""
        calls: list[Expression] = []
        collect_over(items, calls)
        window = calls[0].value
        frames = {
            (str(c.value.args.get("partition_by")), str(c.value.args.get("order")), str(c.value.args.get("spec")))
            for c in calls
        }
        if len(frames) > 1:
            raise self.convert.error(window, "all OVER aggregates of a query must use the same window yet")
        spec = window.args.get("spec")
        rows_frame = spec is not None and str(spec.args.get("kind", "")).upper() == "ROWS"
        preceding = self._over_preceding(window, spec, rows_frame)
        order = window.args.get("order")
        if order is None or len(order.expressions) != 1 or order.expressions[0].args.get("desc"):
            raise self.convert.error(window, "OVER windows must be ordered by one time attribute, ascending")
        time_name = order.expressions[0].this.name
        names = input_node.names
        if time_name not in names or input_node.schema[names.index(time_name)].type.time_attribute is None:
            raise self.convert.error(
                order,
                f"OVER windows can only be ordered by a time attribute; '{time_name}' "
                "is none (declare a watermark on it, or order by a PROCTIME() column)",
            )
        keys = []
        for p in window.args.get("partition_by") or []:
            e = self.convert.expr(p)
            if e.kind != "field" or e.name not in names:
                raise self.convert.error(p, "PARTITION BY takes columns of the input")
            keys.append(names.index(e.name))
        frame = OverFrame(tuple(keys), names.index(time_name), rows_frame, preceding)
        return plan_over(input_node, items, frame, sql=True)

    def _over_preceding(self, window: exp.Window, spec: exp.WindowSpec | None, rows_frame: bool) -> int | None:
        """The frame's lower bound: None for UNBOUNDED PRECEDING (or no frame), a row count for `ROWS n
        PRECEDING`, milliseconds for `RANGE INTERVAL ... PRECEDING`. The upper bound must be CURRENT ROW."""
        if spec is None:
            return None
        end = spec.args.get("end")
        if str(end or "CURRENT ROW").upper() != "CURRENT ROW":
            raise self.convert.error(
                window,
                "OVER RANGE FOLLOWING windows are not supported yet: a streaming OVER window ends at the "
                "CURRENT ROW (ROWS/RANGE BETWEEN ... PRECEDING AND CURRENT ROW)",
            )
        start = spec.args.get("start")
        if str(start).upper() == "UNBOUNDED":
            return None
        if str(start).upper() == "CURRENT ROW":
            return 0
        if str(spec.args.get("start_side") or "").upper() != "PRECEDING":
            raise self.convert.error(window, "an OVER window's frame starts at UNBOUNDED or n PRECEDING")
        if rows_frame:
            if not isinstance(start, exp.Literal) or start.is_string or not str(start.this).isdigit():
                raise self.convert.error(
                    window, "ROWS BETWEEN n PRECEDING takes a non-negative integer literal as n, e.g. 2 PRECEDING"
                )
            return int(str(start.this))
        if not isinstance(start, exp.Interval):
            raise self.convert.error(
                window,
                "a RANGE frame over a time attribute is bounded by a day-time interval, e.g. RANGE BETWEEN "
                "INTERVAL '5' SECOND PRECEDING AND CURRENT ROW",
            )
        return self._interval_millis(start)

    def _window_aggregate(
        self,
        source: _WindowedInput,
        input_node: RelNode,
        group_items: list[Expression],
        items: list[Expression],
        having: Expression | None,
        node: exp.Select,
    ) -> RelNode:
        keys = [g for g in group_items if not (g.kind == "field" and g.name in _WINDOW_COLUMNS)]
        window_keys = {g.name for g in group_items if g.kind == "field" and g.name in _WINDOW_COLUMNS}
        if not {"window_start", "window_end"} <= window_keys:
            raise self.convert.error(
                node,
                "fluvial plans a window table function with an aggregation that groups by window_start and "
                "window_end; add both to GROUP BY (plain window TVF queries are not supported yet)",
            )
        for item in items:
            _check_window_refs(item, window_keys, self.convert)
        spec = source.spec
        if spec.kind is WindowKind.SESSION:
            grouped = {k.name for k in keys if k.kind == "field"}
            if len(grouped) != len(keys) or grouped != {input_node.names[p] for p in spec.partition}:
                # Flink's plan too: sessions per partition key, then a group aggregation over their rows
                sessions = _session_rows(input_node, spec)
                return plan_aggregate(sessions, group_items, items, sql=True, having=having)
        return plan_aggregate(input_node, keys, items, sql=True, having=having, window=spec)

    # -- VALUES -------------------------------------------------------------------------------------------------

    def values(self, node: exp.Values) -> RelNode:
        from fluvial.table.runtime.codegen import compile_expression

        rows = []
        types: list[list[Any]] = []
        for t in node.expressions:
            exprs = [self.convert.expr(e) for e in (t.expressions if isinstance(t, exp.Tuple) else [t])]
            rexes = [Resolver([]).resolve(e) for e in exprs]
            rows.append(tuple(compile_expression(r)([]) for r in rexes))
            types.append([r.type for r in rexes])
        width = len(types[0])
        if any(len(t) != width for t in types):
            raise self.convert.error(
                node,
                "Values passed to VALUES operator must have compatible types: rows have different numbers of columns",
            )
        try:
            column_types = [common_type([t[i] for t in types]) for i in range(width)]
        except TypeError as error:
            raise self.convert.error(
                node, f"Values passed to VALUES operator must have compatible types: {error}"
            ) from None
        from fluvial.table.values import cast_value

        converted = tuple(
            tuple(cast_value(v, ct) if v is not None else None for v, ct in zip(r, column_types)) for r in rows
        )
        columns = tuple(Column(f"EXPR${i}", ct) for i, ct in enumerate(column_types))
        return Values(columns, converted)


def _joined_qualifiers(
    qualifiers: dict[tuple[str, str], int], left: RelNode, alias: str, right: RelNode
) -> tuple[dict[tuple[str, str], int], list[str]]:
    """Where each `alias.column` lands in `left` joined with `right` (aliased `alias`), and the joined names."""
    from fluvial.table.planner.resolve import joined_names

    combined = dict(qualifiers)
    for i, n in enumerate(right.names):
        combined[(alias, n)] = len(left.schema) + i
    return combined, joined_names(left.names, right.names)


def _session_rows(input_node: RelNode, spec: WindowSpec) -> RelNode:
    """SESSION(...) as a table: the input's columns (its rowtime now a plain timestamp), then window_start,
    window_end and window_time, the new rowtime."""
    from dataclasses import replace

    from fluvial.table.planner.logical import WindowTableFunction
    from fluvial.table.types import DataTypes

    columns = [Column(c.name, replace(c.type, time_attribute=None)) for c in input_node.schema]
    bound = DataTypes.TIMESTAMP(3, False)
    rowtime = replace(input_node.schema[spec.time_index].type, nullable=False)
    columns += [Column("window_start", bound), Column("window_end", bound), Column("window_time", rowtime)]
    return WindowTableFunction(tuple(columns), input_node, spec)


def _rank_limit(condition: exp.Expression, rn: str) -> int | None:
    """N of `rn = 1`, `rn <= N`, `rn < N + 1`; None for any other condition."""
    if not (
        isinstance(condition, (exp.EQ, exp.LTE, exp.LT))
        and isinstance(condition.this, exp.Column)
        and condition.this.name == rn
        and isinstance(condition.expression, exp.Literal)
    ):
        return None
    value = int(str(condition.expression.this))
    if isinstance(condition, exp.EQ):
        return 1 if value == 1 else None
    return value if isinstance(condition, exp.LTE) else value - 1


def _selects(node: exp.Select, name: str) -> bool:
    """Whether the outer select list reads column `name` (then the rank number is computed, as Flink's)."""
    return any(
        isinstance(e, exp.Star) or isinstance(c, exp.Column) and c.name == name
        for e in node.expressions
        for c in ([e] if isinstance(e, exp.Star) else e.find_all(exp.Column))
    )


def _check_window_refs(item: Expression, window_keys: set[str], convert: Converter) -> None:
    if (
        item.kind == "field"
        and item.name in _WINDOW_COLUMNS
        and item.name not in window_keys
        and item.name != "window_time"
    ):
        raise ValidationException(f"Expression '{item.name}' is not being grouped")
    for a in item.args:
        _check_window_refs(a, window_keys, convert)


def _comma_join_condition(node: exp.Select, convert: Converter) -> exp.Select:
    """`FROM a, b WHERE cond`: an inner join of a and b ON cond (the WHERE is the join's condition, where its
    equalities key the join's state, as Flink's planner pushes them into the join)."""
    joins = node.args["joins"]
    commas = [
        j
        for j in joins
        if j.args.get("on") is None and not j.args.get("kind") and not j.args.get("side") and not is_lateral(j)
    ]
    if not commas or any(j.args.get("using") for j in commas):
        return node
    where = node.args.get("where")
    if commas != [joins[-1]] or where is None:
        raise convert.error(
            commas[0],
            "a streaming join needs a condition: write FROM a, b WHERE a.k = b.k with one comma-joined table last, "
            "or JOIN ... ON",
        )
    node = node.copy()
    last = node.args["joins"][-1]
    last.set("on", node.args["where"].this)
    node.set("where", None)
    return node
