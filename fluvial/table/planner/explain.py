"""`explain` as Flink prints it: `== Abstract Syntax Tree ==` (Calcite's logical nodes over `$0` field
references, the plan as written), `== Optimized Physical Plan ==` (the plan as it runs, after push-down, with
the Exchanges that key or gather rows and the Sink), `== Optimized Execution Plan ==` (the same tree, its
expressions in infix form), and with `JSON_EXECUTION_PLAN` the `== Physical Execution Plan ==` JSON.

`CHANGELOG_MODE` adds each physical node's `changelogMode=[I,UB,UA,D]` (what kinds of rows it emits);
`ESTIMATED_COST` adds `rowcount = ..., cumulative cost = {...}` from Calcite's default statistics (fluvial has
no table statistics: a source is 1.0E8 rows, a comparison keeps half, an equality 15%), so the figures compare
plans of one query, as Flink's do without statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fluvial.table.planner.aggregate_phases import GlobalGroupAggregate, LocalGroupAggregate
from fluvial.table.planner.logical import (
    Aggregate,
    Calc,
    ChangelogMode,
    ChangelogNormalize,
    Correlate,
    Deduplicate,
    Join,
    Limit,
    OverAggregate,
    RelNode,
    Scan,
    TableAggregate,
    TemporalSort,
    TopN,
    Union,
    Values,
    WindowAggregate,
    WindowKind,
    WindowSpec,
    WindowTableFunction,
)
from fluvial.table.planner.pushdown import conjunction
from fluvial.table.planner.rex import AggCall, Call, InputRef, Rex
from fluvial.table.planner.rex_text import infix_text, rex_text
from fluvial.table.planner.upsert_materialize import SinkMaterializer
from fluvial.table.types import DataType, DataTypes

__all__ = ["ExplainTree", "SinkSpec", "explain_text", "ast_tree", "physical_tree"]

_SOURCE_ROWS = 1.0e8  # Flink's row count of a table without statistics


@dataclass(frozen=True)
class SinkSpec:
    """An INSERT's target as the plans name it."""

    table: str
    fields: tuple[str, ...]
    upsert_materialize: bool = False  # a SinkUpsertMaterializer runs before the sink
    conflict: str | None = None  # the INSERT's ON CONFLICT strategy


@dataclass
class ExplainTree:
    """One printed node: its physical text, its execution-plan text, its changelog mode and estimated rows."""

    text: str
    children: list[ExplainTree] = field(default_factory=list)
    execution: str | None = None
    mode: str | None = None
    rows: float = _SOURCE_ROWS
    cost: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)  # rows, cpu, io, network, memory
    advice: str | None = None  # what ExplainDetail.PLAN_ADVICE says of this node

    def cumulative(self) -> tuple[float, ...]:
        total = list(self.cost)
        for child in self.children:
            for i, value in enumerate(child.cumulative()):
                total[i] += value
        return tuple(total)


def render(
    tree: ExplainTree, kind: str = "physical", details: frozenset[str] = frozenset(), advice: list[str] | None = None
) -> list[str]:
    """Flink's tree drawing: `+- ` before the last input, `:- ` before the others. With `advice` (a list, with
    PLAN_ADVICE), a node that has some gets its number as its first term, and its text is appended to the list."""
    lines: list[str] = []

    def walk(node: ExplainTree, indent: str, last: bool, top: bool) -> None:
        text = node.execution if kind == "execution" and node.execution is not None else node.text
        if kind == "physical" and advice is not None and node.advice is not None and "(" in text:
            advice.append(node.advice)
            name, terms = text.split("(", 1)
            text = f"{name}(advice=[{len(advice)}], {terms}"
        if kind == "physical" and "CHANGELOG_MODE" in details and node.mode is not None:
            text = f"{text[:-1]}, changelogMode=[{node.mode}])"
        if kind == "physical" and "ESTIMATED_COST" in details:
            rows, cpu, io, network, memory = node.cumulative()
            text += (
                f": rowcount = {_e(node.rows)}, cumulative cost = {{{_e(rows)} rows, {_e(cpu)} cpu, {_e(io)} io, "
                f"{_e(network)} network, {_e(memory)} memory}}"
            )
        lines.append(text if top else indent + ("+- " if last else ":- ") + text)
        child_indent = "" if top else indent + ("   " if last else ":  ")
        for i, child in enumerate(node.children):
            walk(child, child_indent, i == len(node.children) - 1, False)

    walk(tree, "", True, True)
    return lines


def _e(value: float) -> str:
    """Java's Double.toString for the figures: `1.0E8`, `5.0E7`, `0.0`."""
    if value == 0:
        return "0.0"
    text = f"{value:.15E}"
    mantissa, exponent = text.split("E")
    mantissa = mantissa.rstrip("0")
    if mantissa.endswith("."):
        mantissa += "0"
    power = int(exponent)
    if -3 <= power < 7:
        plain = repr(float(value))
        return plain if "e" not in plain else f"{mantissa}E{power}"
    return f"{mantissa}E{power}"


def explain_text(
    roots: Sequence[tuple[RelNode, RelNode, SinkSpec | None]],
    details: frozenset[str],
    job_graph: str,
    json_plan: str | None = None,
    expand: Any = None,
    advise: Any = None,
) -> str:
    """The whole explain text for one or more (plan as written, plan as it runs, sink) statements; `expand`
    gives each node of a plan as it runs (`Translator.physical`: mini-batch and two-phase aggregates), `advise`
    what PLAN_ADVICE says of a node of it (None: nothing)."""
    ast = "\n\n".join("\n".join(render(ast_tree(written, sink))) for written, _, sink in roots)
    physical_trees = [physical_tree(optimized, sink, expand, advise) for _, optimized, sink in roots]
    advice: list[str] | None = [] if "PLAN_ADVICE" in details else None
    physical = "\n\n".join("\n".join(render(t, "physical", details, advice)) for t in physical_trees)
    execution = "\n\n".join("\n".join(render(t, "execution")) for t in physical_trees)
    header = "== Optimized Physical Plan =="
    if advice is not None:
        header = "== Optimized Physical Plan With Advice =="
        listed = [f"advice[{i}]: [ADVICE] {text}" for i, text in enumerate(advice, 1)]
        physical += "\n\n" + ("\n".join(listed) if listed else "No available advice...")
    text = f"== Abstract Syntax Tree ==\n{ast}\n\n{header}\n{physical}\n\n== Optimized Execution Plan ==\n{execution}\n"
    if json_plan is not None:
        text += f"\n== Physical Execution Plan ==\n{json_plan}\n"
    return text + f"\n== fluvial JobGraph ==\n{job_graph}"


# -- the Abstract Syntax Tree: Calcite's logical nodes -----------------------------------------------------------


def _tree(text: str, *children: ExplainTree) -> ExplainTree:
    return ExplainTree(text, list(children))


def ast_tree(node: RelNode, sink: SinkSpec | None = None) -> ExplainTree:
    tree = _ast(node)
    if sink is not None:
        tree = _tree(f"LogicalSink(table=[{sink.table}], fields=[{', '.join(sink.fields)}])", tree)
    return tree


def _project(node: RelNode, rexes: Sequence[Rex], child: ExplainTree) -> ExplainTree:
    items = ", ".join(f"{c.name}=[{rex_text(r)}]" for c, r in zip(node.schema, rexes))
    return _tree(f"LogicalProject({items})", child)


def _agg_text(agg: AggCall) -> str:
    args = ", ".join(f"${a}" for a in agg.args)
    kind = agg.kind if agg.function is None else agg.function._name
    inner = f"DISTINCT {args}" if agg.distinct else args
    return f"{agg.name}=[{kind}({inner})]"


def _group(indices: Sequence[int]) -> str:
    return "{" + ", ".join(str(i) for i in indices) + "}"


def _interval(millis: int) -> str:
    for unit, size in (("DAY", 86_400_000), ("HOUR", 3_600_000), ("MINUTE", 60_000)):
        if millis % size == 0 and millis >= size:
            return f"{millis}:INTERVAL {unit}"
    return f"{millis}:INTERVAL SECOND"


def _calcite_type(t: DataType) -> str:
    text = t.summary(True)
    root = t.summary(False).replace(" NOT NULL", "")
    renamed = {"INT": "INTEGER", "STRING": "VARCHAR(2147483647)", "BYTES": "VARBINARY(2147483647)"}.get(root, root)
    return text.replace(root, renamed, 1)


def _row_type(columns: Sequence[Any]) -> str:
    return f"RecordType({', '.join(f'{_calcite_type(c.type)} {c.name}' for c in columns)})"


def _tvf(spec: WindowSpec, input_node: RelNode, columns: Sequence[Any], child: ExplainTree) -> ExplainTree:
    time = f"DESCRIPTOR(_UTF-16LE'{input_node.names[spec.time_index]}')"
    if spec.kind is WindowKind.TUMBLE:
        args = [_interval(spec.size)]
    elif spec.kind is WindowKind.SESSION:
        args = [_interval(spec.size)]
        if spec.partition:
            time = f"PARTITION BY({', '.join(f'${p}' for p in spec.partition)}), {time}"
    else:
        args = [_interval(spec.slide), _interval(spec.size)]
    if spec.offset:
        args.append(_interval(spec.offset))
    return _tree(
        f"LogicalTableFunctionScan(invocation=[{spec.kind.value}(TABLE(#0), {time}, {', '.join(args)})], "
        f"rowType=[{_row_type(columns)}])",
        child,
    )


def _window_columns(input_node: RelNode) -> list[Any]:
    from fluvial.table.planner.logical import Column

    rowtime = next((c.type for c in input_node.schema if c.type.time_attribute), None)
    start = Column("window_start", rowtime.without_time_attribute()) if rowtime is not None else None
    columns = list(input_node.schema)
    if start is not None and rowtime is not None:
        columns += [start, Column("window_end", start.type), Column("window_time", rowtime)]
    return columns


def _order(fields: Sequence[tuple[int, bool]]) -> str:
    return ", ".join(f"${i} DESC NULLS LAST" if desc else f"${i} NULLS FIRST" for i, desc in fields)


def _ranked(
    node: RelNode, input_node: RelNode, keys: Sequence[int], order: str, name: str, condition: str, child: ExplainTree
) -> ExplainTree:
    width = len(input_node.schema)
    items = [f"{c.name}=[${i}]" for i, c in enumerate(input_node.schema)]
    items.append(f"{name}=[ROW_NUMBER() OVER (PARTITION BY {', '.join(f'${k}' for k in keys)} ORDER BY {order})]")
    ranked = _tree(f"LogicalProject({', '.join(items)})", child)
    filtered = _tree(f"LogicalFilter(condition=[{condition.replace('#', f'${width}')}])", ranked)
    if len(node.schema) == width + 1:
        return filtered
    kept = ", ".join(f"{c.name}=[${i}]" for i, c in enumerate(node.schema))
    return _tree(f"LogicalProject({kept})", filtered)


def _join_condition(node: Join) -> str:
    width = len(node.left.schema)
    parts = [f"=(${lk}, ${rk + width})" for lk, rk in zip(node.left_keys, node.right_keys)]
    if node.condition is not None:
        parts.append(rex_text(node.condition))
    if not parts:
        return "true"
    return parts[0] if len(parts) == 1 else f"AND({', '.join(parts)})"


def _ast(node: RelNode) -> ExplainTree:
    children = [_ast(c) for c in node.inputs]
    child = children[0] if children else None
    if isinstance(node, Scan):
        tree = _tree(f"LogicalTableScan(table=[[default_catalog, default_database, {node.table_name}]])")
        if node.computed:
            tree = _project(node, node.computed, tree)
        if node.watermark is not None:
            tree = _tree(
                f"LogicalWatermarkAssigner(rowtime=[{node.names[node.watermark.rowtime]}], "
                f"watermark=[{rex_text(node.watermark.expression)}])",
                tree,
            )
        return tree
    if isinstance(node, ChangelogNormalize):
        assert child is not None
        return child  # a physical node only: the AST shows the upsert source's scan
    if isinstance(node, Values):
        rows = ", ".join("{ " + ", ".join(_value(v) for v in row) + " }" for row in node.rows)
        return _tree(f"LogicalValues(tuples=[[{rows}]])")
    if isinstance(node, Calc):
        assert child is not None
        tree = child
        if node.condition is not None:
            tree = _tree(f"LogicalFilter(condition=[{rex_text(node.condition)}])", tree)
        if node.projections is not None:
            tree = _project(node, node.projections, tree)
        return tree
    if isinstance(node, WindowAggregate):
        assert child is not None
        columns = _window_columns(node.input)
        width = len(node.input.schema)
        group = sorted({width, width + 1, *node.group})
        aggs = ", ".join(_agg_text(a) for a in node.aggs)
        aggregate = _tree(
            f"LogicalAggregate(group=[{_group(group)}]{', ' + aggs if aggs else ''})",
            _tvf(node.window, node.input, columns, child),
        )
        position = {g: i for i, g in enumerate(group)}
        items = [f"{node.schema[i].name}=[${position[g]}]" for i, g in enumerate(node.group)]
        items += [f"{a.name}=[${len(group) + j}]" for j, a in enumerate(node.aggs)]
        items += [f"window_start=[${position[width]}]", f"window_end=[${position[width + 1]}]"]
        return _tree(f"LogicalProject({', '.join(items)})", aggregate)
    if isinstance(node, Aggregate):
        assert child is not None
        aggs = ", ".join(_agg_text(a) for a in node.aggs)
        return _tree(f"LogicalAggregate(group=[{_group(node.group)}]{', ' + aggs if aggs else ''})", child)
    if isinstance(node, WindowTableFunction):
        assert child is not None
        return _tvf(node.window, node.input, node.schema, child)
    if isinstance(node, Join):
        kind = node.join_type.lower()
        return _tree(f"LogicalJoin(condition=[{_join_condition(node)}], joinType=[{kind}])", *children)
    if isinstance(node, Union):
        return _tree("LogicalUnion(all=[true])", *children)
    if isinstance(node, Limit):
        assert child is not None
        parts = ([f"offset=[{node.offset}]"] if node.offset else []) + (
            [f"fetch=[{node.fetch}]"] if node.fetch is not None else []
        )
        return _tree(f"LogicalSort({', '.join(parts)})", child)
    if isinstance(node, TemporalSort):
        assert child is not None
        fields = [(node.rowtime, False), *node.fields]
        parts = [f"sort{i}=[${f}]" for i, (f, _) in enumerate(fields)]
        parts += [f"dir{i}=[{'DESC' if d else 'ASC'}]" for i, (_, d) in enumerate(fields)]
        return _tree(f"LogicalSort({', '.join(parts)})", child)
    if isinstance(node, TopN):
        assert child is not None
        name = node.schema[-1].name if node.rank_output else "w0$o0"
        return _ranked(node, node.input, node.keys, _order(node.sort), name, f"<=(#, {node.limit})", child)
    if isinstance(node, Deduplicate):
        assert child is not None
        order = _order([(node.rowtime, node.keep_last)])
        return _ranked(node, node.input, node.keys, order, "$rownum", "=(#, 1)", child)
    if isinstance(node, OverAggregate):
        assert child is not None
        frame = "ROWS" if node.rows_frame else "RANGE"
        start = "UNBOUNDED" if node.preceding is None else str(node.preceding)
        keys = ", ".join(f"${k}" for k in node.keys)
        over = (
            f"OVER (PARTITION BY {keys} ORDER BY ${node.rowtime} NULLS FIRST {frame} BETWEEN {start} PRECEDING "
            "AND CURRENT ROW)"
            if keys
            else f"OVER (ORDER BY ${node.rowtime} NULLS FIRST {frame} BETWEEN {start} PRECEDING AND CURRENT ROW)"
        )
        items = [f"{c.name}=[${i}]" for i, c in enumerate(node.input.schema)]
        items += [f"{a.name}=[{_agg_text(a).split('=[', 1)[1][:-1]} {over}]" for a in node.aggs]
        return _tree(f"LogicalProject({', '.join(items)})", child)
    if isinstance(node, TableAggregate):
        assert child is not None
        call = f"{node.function._name}({', '.join(f'${a}' for a in node.args)})"
        return _tree(f"LogicalTableAggregate(group=[{_group(node.group)}], tableAggregate=[[{call}]])", child)
    if isinstance(node, Correlate):
        assert child is not None
        name = getattr(node.function, "_name", "udtf")
        operands = "" if node.operands is None else ", ".join(rex_text(o) for o in node.operands)
        produced = node.schema[len(node.input.schema) :] if node.keep_input else node.schema
        function = _tree(f"LogicalTableFunctionScan(invocation=[{name}({operands})], rowType=[{_row_type(produced)}])")
        kind = "left" if node.left_outer else "inner"
        return _tree(
            f"LogicalCorrelate(correlation=[$cor0], joinType=[{kind}], requiredColumns=[{{}}])", child, function
        )
    return _tree(node.explain_terms(), *children)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return "_UTF-16LE'" + value.replace("'", "''") + "'"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- the physical plan: what runs, with its exchanges -----------------------------------------------------------


def physical_tree(node: RelNode, sink: SinkSpec | None = None, expand: Any = None, advise: Any = None) -> ExplainTree:
    tree = _Physical(expand, advise).tree(node)
    if sink is not None:
        text = f"Sink(table=[{sink.table}], fields=[{', '.join(sink.fields)}]"
        text += ", upsertMaterialize=[true]" if sink.upsert_materialize else ""
        text += f", conflictStrategy=[{sink.conflict}])" if sink.conflict else ")"
        tree = ExplainTree(text, [tree], mode="NONE", rows=tree.rows, cost=(tree.rows, tree.rows, 0.0, 0.0, 0.0))
    return tree


_KINDS = ("I", "UB", "UA", "D")


def _mode(node: RelNode, children: Sequence[ExplainTree] = ()) -> str:
    if node.changelog_mode is ChangelogMode.INSERT_ONLY:
        return "I"
    if type(node).changelog_mode is RelNode.changelog_mode and children:  # passes its inputs' row kinds on
        kinds = {k for c in children for k in (c.mode or "I").split(",")}
        return ",".join(k for k in _KINDS if k in kinds)
    if isinstance(node, GlobalGroupAggregate):
        node = node.input  # the local phase: its input's kinds are the aggregate's input's
    if isinstance(node, (Aggregate, Deduplicate, LocalGroupAggregate)) and all(
        i.changelog_mode is ChangelogMode.INSERT_ONLY for i in node.inputs
    ):
        return "I,UB,UA"  # an aggregate or a deduplication over inserts only updates, it never deletes
    return "I,UB,UA,D"


def _row_bytes(node: RelNode) -> float:
    sizes = {"TINYINT": 1, "SMALLINT": 2, "INT": 4, "BIGINT": 8, "FLOAT": 4, "DOUBLE": 8, "BOOLEAN": 1, "DATE": 4}
    return float(sum(sizes.get(c.type.name, 12) for c in node.schema))


def _selectivity(condition: Rex | None) -> float:
    """Calcite's default selectivities: `=` 0.15, a comparison 0.5, IS NOT NULL 0.9, anything else 0.25."""
    if condition is None:
        return 1.0
    if isinstance(condition, Call):
        if condition.op == "and":
            return _selectivity(condition.operands[0]) * _selectivity(condition.operands[1])
        if condition.op == "or":
            return min(1.0, _selectivity(condition.operands[0]) + _selectivity(condition.operands[1]))
        if condition.op == "equals":
            return 0.15
        if condition.op in ("less_than", "less_than_or_equal", "greater_than", "greater_than_or_equal"):
            return 0.5
        if condition.op == "is_not_null":
            return 0.9
    return 0.25


_BOOLEAN = DataTypes.BOOLEAN()


def _ref(node: Join, index: int) -> InputRef:
    column = node.schema[index]
    return InputRef(index, column.type, column.name)


def _hash(keys: Sequence[int], node: RelNode) -> str:
    if not keys:
        return "single"
    return f"hash[{', '.join(node.names[k] for k in keys)}]"


class _Physical:
    def __init__(self, expand: Any = None, advise: Any = None) -> None:
        self._done: dict[int, tuple[RelNode, ExplainTree]] = {}  # the node is kept so its id is never reused
        self._expand = expand
        self._advise = advise

    def tree(self, node: RelNode) -> ExplainTree:
        key = id(node)
        if key not in self._done:
            self._done[key] = (node, self._tree(node if self._expand is None else self._expand(node)))
        return self._done[key][1]

    def _node(
        self,
        node: RelNode,
        children: list[ExplainTree],
        text: str | None = None,
        rows: float | None = None,
        execution: str | None = None,
        memory: bool = False,
    ) -> ExplainTree:
        count = rows if rows is not None else (children[0].rows if children else _SOURCE_ROWS)
        consumed = sum(c.rows for c in children)
        cost = (count, consumed, 0.0, 0.0, count * _row_bytes(node) if memory else 0.0)
        advice = self._advise(node) if self._advise is not None else None
        mode = _mode(node, children)
        return ExplainTree(text or node.explain_terms(), children, execution, mode, count, cost, advice)

    def _exchange(self, distribution: str, child: ExplainTree, node: RelNode) -> ExplainTree:
        text = f"Exchange(distribution=[{distribution}])"
        cost = (child.rows, 0.0, 0.0, child.rows * _row_bytes(node), 0.0)
        return ExplainTree(text, [child], None, child.mode, child.rows, cost)

    def _tree(self, node: RelNode) -> ExplainTree:
        if isinstance(node, Scan):
            return self._scan(node)
        inputs = [self.tree(c) for c in node.inputs]
        if isinstance(node, Calc):
            names = node.input.names
            items = []
            exec_items = []
            for rex, column in zip(node.projections or (), node.schema):
                text, infix = rex_text(rex, names), infix_text(rex, names)
                items.append(text if text == column.name else f"{text} AS {column.name}")
                exec_items.append(infix if infix == column.name else f"{infix} AS {column.name}")
            if node.projections is None:
                items = exec_items = list(node.names)
            parts, exec_parts = [f"select=[{', '.join(items)}]"], [f"select=[{', '.join(exec_items)}]"]
            if node.condition is not None:
                parts.append(f"where=[{rex_text(node.condition, names)}]")
                exec_parts.append(f"where=[{infix_text(node.condition, names)}]")
            kept = inputs[0].rows * _selectivity(node.condition)
            return self._node(node, inputs, f"Calc({', '.join(parts)})", kept, f"Calc({', '.join(exec_parts)})")
        if isinstance(node, Join):
            text: str | None = None
            execution: str | None = None
            if type(node) is Join:  # the regular join; window and interval joins print their own terms
                kind = {
                    "INNER": "InnerJoin",
                    "LEFT": "LeftOuterJoin",
                    "RIGHT": "RightOuterJoin",
                    "FULL": "FullOuterJoin",
                }
                names = node.names
                width = len(node.left.schema)
                equal = [
                    Call("equals", (_ref(node, lk), _ref(node, rk + width)), _BOOLEAN)
                    for lk, rk in zip(node.left_keys, node.right_keys)
                ]
                condition = conjunction([*equal, *([node.condition] if node.condition is not None else [])])
                head = f"Join(joinType=[{kind[node.join_type]}], where=["
                tail = f"], select=[{', '.join(names)}], leftInputSpec=[NoUniqueKey], rightInputSpec=[NoUniqueKey])"
                where = rex_text(condition, names) if condition is not None else "true"
                text = head + where + tail
                execution = head + (infix_text(condition, names) if condition is not None else "true") + tail
            sides = [
                self._exchange(_hash(keys, side), tree, side)
                for keys, side, tree in (
                    (node.left_keys, node.left, inputs[0]),
                    (node.right_keys, node.right, inputs[1]),
                )
            ]
            return self._node(node, sides, text, max(t.rows for t in inputs), execution, memory=True)
        keys: tuple[int, ...] | None = None
        rows: float | None = None
        if isinstance(node, (Aggregate, TableAggregate)):
            keys, rows = node.group, inputs[0].rows * 0.1 if node.group else 1.0
        elif isinstance(node, GlobalGroupAggregate):  # over its LocalGroupAggregate's partial rows
            keys, rows = tuple(range(node.key_count)), inputs[0].rows
        elif isinstance(node, WindowAggregate):
            keys, rows = node.group, inputs[0].rows * 0.01
        elif isinstance(node, ChangelogNormalize):
            keys = node.keys
        elif isinstance(node, SinkMaterializer):
            keys = node.pk
        elif isinstance(node, (TopN, Deduplicate, OverAggregate)):
            keys = node.keys
            rows = inputs[0].rows * 0.1 if not isinstance(node, OverAggregate) else None
        elif isinstance(node, WindowTableFunction):
            keys = node.window.partition
        elif isinstance(node, (Limit, TemporalSort)):
            keys = ()
            if isinstance(node, Limit) and node.fetch is not None:
                rows = float(node.offset + node.fetch)
        elif isinstance(node, Union):
            rows = sum(t.rows for t in inputs)
        if keys is not None:
            inputs = [self._exchange(_hash(keys, node.inputs[0]), inputs[0], node.inputs[0])]
        text = node.explain_terms()
        if isinstance(node, WindowAggregate) and text.startswith("GroupWindowAggregate("):
            text = text[len("Group") :]  # a window table function's aggregation is Flink's WindowAggregate
        tree = self._node(node, inputs, text, rows, memory=keys is not None)
        if isinstance(node, SinkMaterializer):
            tree.mode = "I,UA,D"  # upserts: the sink's rows by its key, never an update's before-image
        return tree

    def _scan(self, node: Scan) -> ExplainTree:
        tree = ExplainTree(
            node.explain_terms(),
            [],
            None,
            "I",
            _SOURCE_ROWS,
            (_SOURCE_ROWS, _SOURCE_ROWS, _SOURCE_ROWS * _row_bytes(node), 0.0, 0.0),
        )
        if node.computed:
            names = node.source_names
            items = [rex_text(r, names) for r in node.computed]
            exec_items = [infix_text(r, names) for r in node.computed]
            select = [t if t == c.name else f"{t} AS {c.name}" for t, c in zip(items, node.schema)]
            exec_select = [t if t == c.name else f"{t} AS {c.name}" for t, c in zip(exec_items, node.schema)]
            tree = ExplainTree(
                f"Calc(select=[{', '.join(select)}])",
                [tree],
                f"Calc(select=[{', '.join(exec_select)}])",
                "I",
                tree.rows,
                (tree.rows, tree.rows, 0.0, 0.0, 0.0),
            )
        if node.watermark is not None:
            names = node.names
            rowtime = names[node.watermark.rowtime]
            text = f"WatermarkAssigner(rowtime=[{rowtime}], watermark=[{rex_text(node.watermark.expression, names)}])"
            execution = (
                f"WatermarkAssigner(rowtime=[{rowtime}], watermark=[{infix_text(node.watermark.expression, names)}])"
            )
            tree = ExplainTree(text, [tree], execution, "I", tree.rows, (tree.rows, tree.rows, 0.0, 0.0, 0.0))
        return tree
