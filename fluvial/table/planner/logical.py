"""Logical plan nodes (Calcite's RelNodes, the few that fluvial's planner needs): frozen data.

Every node knows its output schema and its changelog mode: whether it emits only inserts (a scan, a window
aggregation) or updates too (a GROUP BY aggregation emits -U/+U pairs and -D). A sink that takes only inserts
(filesystem) refuses an updating input when the plan is built, as Flink's planner does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fluvial.table.planner.rex import AggCall, Rex
from fluvial.table.types import DataType

__all__ = [
    "Column",
    "RelNode",
    "Scan",
    "Calc",
    "Aggregate",
    "WindowAggregate",
    "WindowTableFunction",
    "WindowSpec",
    "WindowKind",
    "Union",
    "Limit",
    "Values",
    "ChangelogMode",
    "WatermarkSpec",
    "Deduplicate",
    "Correlate",
    "Join",
    "TopN",
    "OverAggregate",
    "TableAggregate",
    "TemporalSort",
    "ChangelogNormalize",
]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: DataType


class ChangelogMode(Enum):
    INSERT_ONLY = "[I]"
    RETRACT = "[I,UB,UA,D]"


@dataclass(frozen=True, slots=True)
class WatermarkSpec:
    """`WATERMARK FOR rowtime AS expr`: `rowtime` is a column index; `expression` a rex over the row."""

    rowtime: int
    expression: Rex
    text: str


@dataclass(frozen=True)
class RelNode:
    schema: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.schema]

    @property
    def types(self) -> list[DataType]:
        return [c.type for c in self.schema]

    @property
    def inputs(self) -> tuple[RelNode, ...]:
        return ()

    @property
    def changelog_mode(self) -> ChangelogMode:
        if any(i.changelog_mode is ChangelogMode.RETRACT for i in self.inputs):
            return ChangelogMode.RETRACT
        return ChangelogMode.INSERT_ONLY

    def rowtime_index(self) -> int | None:
        for i, c in enumerate(self.schema):
            if c.type.time_attribute == "ROWTIME":
                return i
        return None

    def explain_terms(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class SingleRel(RelNode):
    """A node with one input."""

    input: RelNode = None  # type: ignore[assignment]

    @property
    def inputs(self) -> tuple[RelNode, ...]:
        return (self.input,)


@dataclass(frozen=True)
class Scan(RelNode):
    """A table's source: a connector's (`source` is a `fluvial.table.connectors` TableSource), a DataStream's,
    or a list of elements. The watermark, if declared, is generated right after the source."""

    table_name: str = ""
    source: Any = None
    watermark: WatermarkSpec | None = None
    computed: tuple[Rex, ...] = ()

    def explain_terms(self) -> str:
        digest = getattr(self.source, "digest", None)
        pushed = "".join(f", {part}" for part in digest()) if digest is not None else ""
        return (
            f"TableSourceScan(table=[[default_catalog, default_database, {self.table_name}{pushed}]], "
            f"fields=[{', '.join(self.source_names)}])"
        )

    @property
    def source_names(self) -> list[str]:
        """The columns the source produces (its computed columns are computed after it)."""
        columns = getattr(self.source, "columns", None)
        if not self.computed or columns is None:
            return self.names
        projection = getattr(self.source, "projection", None)
        names = [c.name for c in columns]
        return names if projection is None else [names[path[0]] for path in projection]


@dataclass(frozen=True)
class ChangelogNormalize(SingleRel):
    """Turns an upsert stream (inserts/updates and deletes by key, as an upsert-kafka source reads them) into a
    full changelog: keyed by `keys`, it keeps each key's last row, emits -U/+U for a changed row, drops a row
    equal to the kept one, and a delete only for a key it knows (Flink's ChangelogNormalize)."""

    keys: tuple[int, ...] = ()

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.RETRACT

    def explain_terms(self) -> str:
        return f"ChangelogNormalize(key=[{', '.join(self.names[k] for k in self.keys)}])"


@dataclass(frozen=True)
class Values(RelNode):
    rows: tuple[tuple[Any, ...], ...] = ()

    def explain_terms(self) -> str:
        return f"Values(tuples=[{len(self.rows)} rows], values=[{', '.join(self.names)}])"


@dataclass(frozen=True)
class Calc(SingleRel):
    projections: tuple[Rex, ...] | None = None
    condition: Rex | None = None

    def explain_terms(self) -> str:
        """The operator's name, as Flink's execution plan prints it: `Calc(select=[a, (b + 1) AS c], where=[...])`."""
        from fluvial.table.planner.rex_text import infix_text

        names = self.input.names
        parts = []
        if self.projections is not None:
            items = []
            for rex, column in zip(self.projections, self.schema):
                text = infix_text(rex, names)
                items.append(text if text == column.name else f"{text} AS {column.name}")
            parts.append(f"select=[{', '.join(items)}]")
        if self.condition is not None:
            parts.append(f"where=[{infix_text(self.condition, names)}]")
        return f"Calc({', '.join(parts)})"


@dataclass(frozen=True)
class Aggregate(SingleRel):
    """GROUP BY aggregation (Flink's GroupAggregate): output is the group keys then the aggregates; with no
    aggregates it is DISTINCT. Emits a changelog."""

    group: tuple[int, ...] = ()
    aggs: tuple[AggCall, ...] = ()
    mini_batch: Any = None  # aggregate_phases.MiniBatch once the physical rewrite chose mini-batch

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.RETRACT

    def explain_terms(self) -> str:
        names = self.input.names
        group = ", ".join(names[g] for g in self.group)
        select = [names[g] for g in self.group] + [f"{a.describe(names)} AS {a.name}" for a in self.aggs]
        return (
            f"GroupAggregate(groupBy=[{group}], select=[{', '.join(select)}])"
            if self.group
            else f"GroupAggregate(select=[{', '.join(select)}])"
        )


class WindowKind(Enum):
    TUMBLE = "TUMBLE"
    HOP = "HOP"
    CUMULATE = "CUMULATE"
    SESSION = "SESSION"


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """An event-time window over input column `time_index` (sizes in milliseconds)."""

    kind: WindowKind
    time_index: int
    size: int
    slide: int = 0
    offset: int = 0
    partition: tuple[int, ...] = ()  # SESSION's PARTITION BY columns

    def describe(self, names: list[str]) -> str:
        time = names[self.time_index]
        if self.kind is WindowKind.TUMBLE:
            return f"TUMBLE(time_col=[{time}], size=[{_interval(self.size)}])"
        if self.kind is WindowKind.HOP:
            return f"HOP(time_col=[{time}], size=[{_interval(self.size)}], slide=[{_interval(self.slide)}])"
        if self.kind is WindowKind.CUMULATE:
            return f"CUMULATE(time_col=[{time}], max_size=[{_interval(self.size)}], step=[{_interval(self.slide)}])"
        partition = f"partition keys=[{', '.join(names[p] for p in self.partition)}], " if self.partition else ""
        return f"SESSION({partition}time_col=[{time}], gap=[{_interval(self.size)}])"


def _interval(millis: int) -> str:
    for unit, size in (("day", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if millis % size == 0:
            return f"{millis // size} {unit}"
    return f"{millis} ms"


@dataclass(frozen=True)
class WindowAggregate(SingleRel):
    """Window aggregation on event time (Flink's WindowAggregate): output is the group keys, the aggregates,
    then window_start, window_end and window_time (the rowtime of the result). Emits inserts only, when the
    watermark passes a window's end."""

    window: WindowSpec = None  # type: ignore[assignment]
    group: tuple[int, ...] = ()
    aggs: tuple[AggCall, ...] = ()

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.INSERT_ONLY

    def explain_terms(self) -> str:
        names = self.input.names
        select = (
            [names[g] for g in self.group]
            + [f"{a.describe(names)} AS {a.name}" for a in self.aggs]
            + ["start('w$) AS window_start", "end('w$) AS window_end", "rowtime('w$) AS window_time"]
        )
        group = f"groupBy=[{', '.join(names[g] for g in self.group)}], " if self.group else ""
        return f"GroupWindowAggregate({group}window=[{self.window.describe(names)}], select=[{', '.join(select)}])"


@dataclass(frozen=True)
class WindowTableFunction(SingleRel):
    """A SESSION window table function on its own (Flink's WindowTableFunction): each input row, once its
    session (per PARTITION BY key, merged as rows arrive) closes at the watermark, with window_start, window_end
    and window_time (the new rowtime) after its columns. Planned when an aggregation over the sessions groups by
    other keys than the partition keys; then a group aggregation follows it."""

    window: WindowSpec = None  # type: ignore[assignment]

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.INSERT_ONLY

    def explain_terms(self) -> str:
        return f"WindowTableFunction(window=[{self.window.describe(self.input.names)}])"


@dataclass(frozen=True)
class Union(RelNode):
    children: tuple[RelNode, ...] = ()

    @property
    def inputs(self) -> tuple[RelNode, ...]:
        return self.children

    def explain_terms(self) -> str:
        return f"Union(all=[true], union=[{', '.join(self.names)}])"


@dataclass(frozen=True)
class Limit(SingleRel):
    """ORDER BY-less FETCH/LIMIT (and OFFSET): the first rows to arrive, on one subtask."""

    offset: int = 0
    fetch: int | None = None

    def explain_terms(self) -> str:
        return f"Limit(offset=[{self.offset}], fetch=[{self.fetch}])"


@dataclass(frozen=True)
class Deduplicate(SingleRel):
    """`ROW_NUMBER() OVER (PARTITION BY k ORDER BY rowtime [DESC]) = 1`: per key, the row with the smallest
    (largest, `keep_last`) event time seen so far; a better row retracts the one kept before (-U, +U). Ordered by a
    processing-time attribute, the first row to arrive is kept (inserts only) or each row replaces the last."""

    keys: tuple[int, ...] = ()
    keep_last: bool = False
    rowtime: int = 0

    @property
    def proctime(self) -> bool:
        return self.input.schema[self.rowtime].type.time_attribute == "PROCTIME"

    @property
    def changelog_mode(self) -> ChangelogMode:
        if self.proctime and not self.keep_last:  # Flink's ProcTimeDeduplicateKeepFirstRowFunction
            return ChangelogMode.INSERT_ONLY
        return ChangelogMode.RETRACT

    def explain_terms(self) -> str:
        keys = ", ".join(self.input.names[k] for k in self.keys)
        return f"Deduplicate(keep=[{'LastRow' if self.keep_last else 'FirstRow'}], key=[{keys}])"


@dataclass(frozen=True)
class Correlate(SingleRel):
    """A table function applied to each row (Flink's Correlate): its rows, after the input's columns when
    `keep_input` (join_lateral), alone otherwise (flat_map). `operands` None passes the whole row."""

    function: Any = None
    operands: tuple[Rex, ...] | None = None
    keep_input: bool = True
    left_outer: bool = False
    condition: Rex | None = None

    def explain_terms(self) -> str:
        name = getattr(self.function, "_name", "udtf")
        return (
            f"Correlate(invocation=[{name}], select=[{', '.join(self.names)}], "
            f"joinType=[{'LEFT' if self.left_outer else 'INNER'}])"
        )


@dataclass(frozen=True)
class Join(RelNode):
    """A regular equi-join (Flink's Join): keyed on `left_keys`/`right_keys`, with the rest of the condition
    over the joined row. Outer joins and any updating input make it emit a changelog."""

    left: RelNode = None  # type: ignore[assignment]
    right: RelNode = None  # type: ignore[assignment]
    join_type: str = "INNER"
    left_keys: tuple[int, ...] = ()
    right_keys: tuple[int, ...] = ()
    condition: Rex | None = None
    condition_text: str = ""

    @property
    def inputs(self) -> tuple[RelNode, ...]:
        return (self.left, self.right)

    @property
    def changelog_mode(self) -> ChangelogMode:
        if self.join_type != "INNER":
            return ChangelogMode.RETRACT
        return super().changelog_mode

    def explain_terms(self) -> str:
        kind = {"INNER": "InnerJoin", "LEFT": "LeftOuterJoin", "RIGHT": "RightOuterJoin", "FULL": "FullOuterJoin"}
        return (
            f"Join(joinType=[{kind[self.join_type]}], where=[{self.condition_text}], select=[{', '.join(self.names)}])"
        )


@dataclass(frozen=True)
class TopN(SingleRel):
    """`ROW_NUMBER() OVER (PARTITION BY k ORDER BY s) <= n`: per key, the first `n` rows by `sort` (column,
    descending); with `rank_output` the rank number is the last column. Over an insert-only input only the top
    N are kept (Flink's AppendFastStrategy); with `retract` the input updates and every row is kept
    (RetractStrategy)."""

    keys: tuple[int, ...] = ()
    sort: tuple[tuple[int, bool], ...] = ()
    limit: int = 1
    rank_output: bool = False
    retract: bool = False

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.RETRACT

    def explain_terms(self) -> str:
        names = self.input.names
        order = ", ".join(f"{names[i]} {'DESC' if d else 'ASC'}" for i, d in self.sort)
        keys = ", ".join(names[k] for k in self.keys)
        return (
            f"Rank(strategy=[{'RetractStrategy' if self.retract else 'AppendFastStrategy'}], rankType=[ROW_NUMBER], "
            f"rankRange=[rankStart=1, rankEnd={self.limit}], "
            f"partitionBy=[{keys}], orderBy=[{order}], select=[{', '.join(self.names)}])"
        )


@dataclass(frozen=True)
class OverAggregate(SingleRel):
    """OVER aggregation ordered by event time from UNBOUNDED or n (ROWS) / an interval (RANGE) PRECEDING to the
    CURRENT ROW (Flink's RowTime{Rows,Range}{Unbounded,Bounded}PrecedingFunction): the input's columns, then the
    aggregates. Rows wait for the watermark and are emitted in time order; late rows are dropped."""

    keys: tuple[int, ...] = ()
    rowtime: int = 0
    rows_frame: bool = True
    aggs: tuple[AggCall, ...] = ()
    preceding: int | None = None  # None: UNBOUNDED; else rows (ROWS) or milliseconds (RANGE) before the row

    def explain_terms(self) -> str:
        names = self.input.names
        keys = ", ".join(names[k] for k in self.keys)
        frame = "ROWS" if self.rows_frame else "RANGE"
        start = "UNBOUNDED" if self.preceding is None else str(self.preceding)
        aggs = ", ".join(f"{a.describe(names)} AS {a.name}" for a in self.aggs)
        return (
            f"OverAggregate(partitionBy=[{keys}], orderBy=[{names[self.rowtime]} ASC], window=[{frame} BETWEEN "
            f"{start} PRECEDING AND CURRENT ROW], select=[{', '.join(names)}, {aggs}])"
        )


@dataclass(frozen=True)
class TableAggregate(SingleRel):
    """`group_by(keys).flat_aggregate(udtaf(args))` (Flink's GroupTableAggregate): per key, an accumulator; each
    input row retracts the rows the group emitted before (-D) and emits what `emit_value` yields now (+I).
    Output: the group keys, then the function's columns."""

    group: tuple[int, ...] = ()
    args: tuple[int, ...] = ()
    function: Any = None

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.RETRACT

    def explain_terms(self) -> str:
        names = self.input.names
        group = ", ".join(names[g] for g in self.group)
        call = f"{self.function._name}({', '.join(names[a] for a in self.args)})"
        return f"GroupTableAggregate(groupBy=[{group}], select=[{', '.join([*(names[g] for g in self.group), call])}])"


@dataclass(frozen=True)
class TemporalSort(SingleRel):
    """Streaming ORDER BY a time attribute ascending, then other columns (Flink's TemporalSort): rows are
    emitted in time order when the watermark passes them; `fields` are the secondary (column, descending)."""

    rowtime: int = 0
    fields: tuple[tuple[int, bool], ...] = ()

    def explain_terms(self) -> str:
        names = self.input.names
        order = [f"{names[self.rowtime]} ASC"] + [f"{names[i]} {'DESC' if d else 'ASC'}" for i, d in self.fields]
        return f"TemporalSort(orderBy=[{', '.join(order)}])"


def explain_tree(node: RelNode, indent: str = "", last: bool = True, top: bool = True) -> list[str]:
    """Flink's tree rendering: `Calc(...)` then `+- Child(...)`, `:- First(...)` for all but the last input."""
    prefix = "" if top else indent + ("+- " if last else ":- ")
    lines = [prefix + node.explain_terms()]
    child_indent = "" if top else indent + ("   " if last else ":  ")
    children = node.inputs
    for i, child in enumerate(children):
        lines.extend(explain_tree(child, child_indent, i == len(children) - 1, False))
    return lines


_ = field  # dataclasses.field is kept for subclasses that add defaults
