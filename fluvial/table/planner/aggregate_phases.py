"""How a GROUP BY runs (Flink's physical aggregate rules): one phase or local-global, with or without
mini-batch, and without the renaming Calcs around it.

`table.exec.mini-batch.enabled` with `allow-latency` and `size` turns a GroupAggregate into a mini-batch one: a
`MiniBatchAssigner` marks where batches start (its interval is the latency), and the aggregate folds a batch per
key before touching state. With mini-batch on, `table.optimizer.agg-phase-strategy` AUTO or TWO_PHASE, and every
aggregate mergeable, it splits into a `LocalGroupAggregate` before the hash exchange (no state: one partial row
per key and batch, which is what makes a skewed key cheap) and a `GlobalGroupAggregate` after it that merges the
partials into keyed state. As in Flink, TWO_PHASE without mini-batch, or with an aggregate that cannot merge (a
udaf without `merge`, DISTINCT, FIRST_VALUE/LAST_VALUE/LISTAGG), plans one phase.

The rewrite is per node (`physical_node`): the translator and `explain` apply it to each Aggregate they reach,
so a plan shared by two sinks stays shared. fluvial's bundle operators each keep the batch's latency timer
themselves, so the MiniBatchAssigner adds no operator of its own to the JobGraph.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Aggregate, Calc, ChangelogMode, Column, RelNode, SingleRel
from fluvial.table.planner.rex import AggCall, InputRef
from fluvial.table.types import DataTypes

__all__ = [
    "AggPhaseStrategy",
    "MiniBatch",
    "MiniBatchAssigner",
    "LocalGroupAggregate",
    "GlobalGroupAggregate",
    "mini_batch_from",
    "physical_node",
]


class AggPhaseStrategy(Enum):
    AUTO = "AUTO"
    ONE_PHASE = "ONE_PHASE"
    TWO_PHASE = "TWO_PHASE"


@dataclass(frozen=True, slots=True)
class MiniBatch:
    """The mini-batch options of one job: a batch is finished after `latency_millis` or `size` rows."""

    latency_millis: int
    size: int
    strategy: AggPhaseStrategy = AggPhaseStrategy.AUTO


def mini_batch_from(config: Any) -> MiniBatch | None:
    """The job's mini-batch options from a TableConfig, None when mini-batch is off; a bad combination raises
    the ValidationException Flink's planner raises (checked when a query is planned, as Flink does, so the
    options can be SET in any order)."""
    from fluvial.table.environment_settings import parse_duration_millis

    if str(config.get("table.exec.mini-batch.enabled", "false")).lower() != "true":
        return None
    latency_text = config.get("table.exec.mini-batch.allow-latency")
    latency = parse_duration_millis(latency_text) if latency_text else 0
    if latency <= 0:
        raise ValidationException(
            "MiniBatch Latency must be greater than 0 ms: table.exec.mini-batch.enabled is true, so set "
            "table.exec.mini-batch.allow-latency as well (e.g. '1 s')"
        )
    size_text = config.get("table.exec.mini-batch.size")
    size = int(size_text) if size_text else -1
    if size <= 0:
        raise ValidationException(
            f"Key: 'table.exec.mini-batch.size' , default: -1 must be > 0 (it is {size}): mini-batch needs "
            "table.exec.mini-batch.size set with allow-latency (e.g. 5000 rows)"
        )
    strategy = AggPhaseStrategy(str(config.get("table.optimizer.agg-phase-strategy", "AUTO")).upper())
    return MiniBatch(latency, size, strategy)


@dataclass(frozen=True)
class MiniBatchAssigner(SingleRel):
    """Where processing-time mini-batches start (Flink's MiniBatchAssigner): passes rows on unchanged."""

    interval_millis: int = 0

    @property
    def changelog_mode(self) -> ChangelogMode:
        return self.input.changelog_mode

    def explain_terms(self) -> str:
        return f"MiniBatchAssigner(interval=[{self.interval_millis}ms], mode=[ProcTime])"


@dataclass(frozen=True)
class LocalGroupAggregate(SingleRel):
    """The local phase: output is the group keys, one accumulator per aggregate, and the batch's row count
    (`count1$n`, what lets the global phase know when a key has no rows left). Insert-only."""

    group: tuple[int, ...] = ()
    aggs: tuple[AggCall, ...] = ()
    mini_batch: MiniBatch = MiniBatch(0, 0)

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.INSERT_ONLY

    def explain_terms(self) -> str:
        names = self.input.names
        keys = [names[g] for g in self.group]
        partials = [f"{a.describe(names)} AS {c.name}" for a, c in zip(self.aggs, self.schema[len(keys) :])]
        return _aggregate_terms("LocalGroupAggregate", keys, [*partials, f"COUNT1(*) AS {self.schema[-1].name}"])


@dataclass(frozen=True)
class GlobalGroupAggregate(SingleRel):
    """The global phase over a LocalGroupAggregate's partial rows: merges them into keyed state; emits the
    changelog of a GroupAggregate. `aggs` are the original calls (their arguments index the local's input)."""

    key_count: int = 0
    aggs: tuple[AggCall, ...] = ()
    mini_batch: MiniBatch = MiniBatch(0, 0)

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.RETRACT

    def explain_terms(self) -> str:
        names = self.input.names
        keys = names[: self.key_count]
        partials = names[self.key_count : -1]
        merged = [
            f"{a.kind if a.function is None else a.function._name}({p}) AS {a.name}"
            for a, p in zip(self.aggs, partials)
        ]
        return _aggregate_terms("GlobalGroupAggregate", keys, merged)


def _aggregate_terms(kind: str, keys: list[str], aggregates: list[str]) -> str:
    group = f"groupBy=[{', '.join(keys)}], " if keys else ""
    return f"{kind}({group}select=[{', '.join(keys + aggregates)}])"


def physical_node(node: RelNode, mini_batch: MiniBatch | None) -> RelNode:
    """`node` as it runs: a GroupAggregate with the renaming Calcs around it absorbed, in mini-batch and two
    phases when the options say so; any other node as it is."""
    while isinstance(node, Calc) and isinstance(node.input, Calc) and _renames_only(node) and _renames_only(node.input):
        node = dataclasses.replace(node, input=node.input.input)  # a rename of a rename (a sink's column names)
    if isinstance(node, Calc) and isinstance(node.input, Aggregate) and _renames_only(node):
        aggregate = node.input
        width = len(aggregate.group)
        aggs = tuple(dataclasses.replace(a, name=c.name) for a, c in zip(aggregate.aggs, node.schema[width:]))
        return physical_node(dataclasses.replace(aggregate, schema=node.schema, aggs=aggs), mini_batch)
    if not isinstance(node, Aggregate):
        return node
    source = node.input
    if isinstance(source, Calc) and _renames_only(source):
        node = dataclasses.replace(node, input=source.input)  # the aggregate reads positions, never names
    if mini_batch is None:
        return node
    assigner = MiniBatchAssigner(node.input.schema, node.input, mini_batch.latency_millis)
    from fluvial.table.runtime.aggregators import mergeable

    two_phase = mini_batch.strategy is not AggPhaseStrategy.ONE_PHASE and all(mergeable(a) for a in node.aggs)
    if not two_phase:
        return dataclasses.replace(node, input=assigner, mini_batch=mini_batch)
    names = assigner.names
    keys = [Column(names[g], assigner.schema[g].type) for g in node.group]
    partials = [Column(f"{a.kind.lower()}${i}", DataTypes.BYTES()) for i, a in enumerate(node.aggs)]
    count1 = Column(f"count1${len(node.aggs)}", DataTypes.BIGINT(False))
    local = LocalGroupAggregate(tuple([*keys, *partials, count1]), assigner, node.group, node.aggs, mini_batch)
    return GlobalGroupAggregate(node.schema, local, len(node.group), node.aggs, mini_batch)


def _renames_only(calc: Calc) -> bool:
    """A Calc that keeps every input column in place (only names change) and filters nothing."""
    projections = calc.projections
    return (
        calc.condition is None
        and projections is not None
        and len(projections) == len(calc.input.schema)
        and all(isinstance(p, InputRef) and p.index == i for i, p in enumerate(projections))
    )


TWO_PHASE_ADVICE = (
    "this aggregation could run in two phases, a local pre-aggregation before the exchange and a global one "
    "after it, which helps skewed keys: set 'table.exec.mini-batch.enabled' to 'true' with "
    "'table.exec.mini-batch.allow-latency' (e.g. '1 s') and 'table.exec.mini-batch.size' (e.g. 5000)."
)


def plan_advice(node: RelNode) -> str | None:
    """What ExplainDetail.PLAN_ADVICE says of a node of a streaming plan as it runs: a one-phase GROUP BY
    without mini-batch whose aggregates all merge is told how to get two phases (Flink's advisor does too)."""
    from fluvial.table.runtime.aggregators import mergeable

    if isinstance(node, Aggregate) and node.group and node.mini_batch is None and all(mergeable(a) for a in node.aggs):
        return TWO_PHASE_ADVICE
    return None
