"""Split DISTINCT aggregation in two levels (`table.optimizer.distinct-agg.split.enabled`, Flink's
SplitAggregateRule), for GROUP BYs whose distinct values are skewed.

`SELECT a, COUNT(DISTINCT b) FROM t GROUP BY a` keeps, per `a`, every distinct `b` in one subtask: a hot `a`
holds all of its `b`s in one place. Split, it runs as
- a bucketing Calc: the input's columns and `MOD(HASH_CODE(b), buckets)` (`table.optimizer.distinct-agg.
  split.bucket-num`, default 1024), a hash the same in every process;
- a PARTIAL GroupAggregate keyed by `(a, bucket)`: the distinct aggregates as written (each `b` lands in one
  bucket, so per-bucket distinct counts add up), the other aggregates as partial aggregates;
- a FINAL GroupAggregate keyed by `a` over the partial changelog: SUM0 of the counts, SUM of the sums, MIN of
  the minimums, MAX of the maximums.
The distinct values of a hot key spread over `buckets` keys of the partial level.

Split when every distinct aggregate is COUNT, SUM, MIN or MAX over the same one column, and every other
aggregate is COUNT, SUM, SUM0, MIN or MAX; anything else (AVG, two distinct columns, udafs) keeps one level
(Flink also splits those, through an Expand node fluvial does not have). Streaming only, as in Flink.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Aggregate, Calc, Column, RelNode, SingleRel
from fluvial.table.planner.rex import AggCall
from fluvial.table.types import DataTypes

__all__ = ["DistinctBucket", "SplitAggregate", "distinct_split_from", "split_distinct"]

ENABLED = "table.optimizer.distinct-agg.split.enabled"
BUCKETS = "table.optimizer.distinct-agg.split.bucket-num"

_DISTINCT_KINDS = frozenset({"COUNT", "SUM", "MIN", "MAX"})
_PLAIN_KINDS = frozenset({"COUNT", "SUM", "SUM0", "MIN", "MAX"})
_FINAL_KIND = {"COUNT": "SUM0", "SUM": "SUM", "SUM0": "SUM0", "MIN": "MIN", "MAX": "MAX"}


def distinct_split_from(config: Any) -> int | None:
    """The number of buckets when splitting is on, None when it is off."""
    if str(config.get(ENABLED, "false")).strip().lower() != "true":
        return None
    text = str(config.get(BUCKETS, "1024")).strip()
    if not text.isdigit() or int(text) <= 0:
        raise ValidationException(f"'{BUCKETS}' must be a number of buckets above 0 (it is '{text}'), e.g. 1024")
    return int(text)


@dataclass(frozen=True)
class DistinctBucket(SingleRel):
    """The input's columns, then the bucket of column `column`: MOD(HASH_CODE(column), buckets)."""

    column: int = 0
    buckets: int = 1024

    def explain_terms(self) -> str:
        names = self.input.names
        bucket = f"MOD(HASH_CODE({names[self.column]}), {self.buckets}) AS {self.names[-1]}"
        return f"Calc(select=[{', '.join([*names, bucket])}])"


@dataclass(frozen=True)
class SplitAggregate(Aggregate):
    """A GroupAggregate of a split (PARTIAL: keyed by the groups and the bucket; FINAL: by the groups)."""

    phase: str = "PARTIAL"

    def explain_terms(self) -> str:
        text = super().explain_terms()
        at = text.index("select=[")
        return f"{text[:at]}partialFinalType=[{self.phase}], {text[at:]}"


def _splittable(node: Aggregate) -> int | None:
    """The distinct column when `node` can be split, else None."""
    if isinstance(node, SplitAggregate) or node.mini_batch is not None:
        return None
    distinct = [a for a in node.aggs if a.distinct]
    if not distinct:
        return None
    if any(len(a.args) != 1 for a in distinct):
        return None
    projections = node.input.projections if isinstance(node.input, Calc) else None
    # the planner gives each aggregate its own argument column: two that project the same value are one
    values = {a.args[0] if projections is None else projections[a.args[0]] for a in distinct}
    if len(values) != 1:
        return None
    if any(a.function is not None for a in node.aggs):
        return None
    if any(a.kind not in (_DISTINCT_KINDS if a.distinct else _PLAIN_KINDS) for a in node.aggs):
        return None
    return distinct[0].args[0]


def split_distinct(node: RelNode, buckets: int) -> RelNode | None:
    """`node` split in two levels (module docstring) when it is a GROUP BY that can be; None otherwise."""
    if not isinstance(node, Aggregate):
        return None
    column = _splittable(node)
    if column is None:
        return None
    source = node.input
    bucket_name = f"$f{len(source.schema)}"
    bucketed = DistinctBucket((*source.schema, Column(bucket_name, DataTypes.INT(False))), source, column, buckets)
    bucket_index = len(source.schema)
    group = (*node.group, bucket_index)
    partial_aggs = tuple(dataclasses.replace(a, name=f"$p{i}") for i, a in enumerate(node.aggs))
    keys = [bucketed.schema[g] for g in group]
    partial_columns = [Column(a.name, a.type) for a in partial_aggs]
    partial = SplitAggregate(tuple([*keys, *partial_columns]), bucketed, group, partial_aggs, phase="PARTIAL")
    width = len(group)
    final_aggs = tuple(
        AggCall(
            _FINAL_KIND[a.kind],
            (width + i,),
            a.type,
            a.name,
            arg_types=(partial_columns[i].type,),
        )
        for i, a in enumerate(node.aggs)
    )
    return SplitAggregate(node.schema, partial, tuple(range(len(node.group))), final_aggs, phase="FINAL")
