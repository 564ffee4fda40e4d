"""Event-time temporal joins (Flink's TemporalJoin over a versioned table):
`o JOIN rates FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency` joins each row of `o` with the
row of `rates` that was valid at `o.order_time`.

`rates` must be a versioned table, as Flink defines it: it has a primary key and an event-time attribute. The
primary key is declared (`PRIMARY KEY ... NOT ENFORCED` on a connector table, an upsert source's included) or
derived, as Flink derives it, from a view that deduplicates by event time
(`ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) = 1` keeps the last row per `k`, so `k` is its key) or
groups by keys. The join is INNER or LEFT, and its equalities must cover that primary key. Anything else is
refused in one sentence saying what Flink requires. The runtime is runtime/temporal_join.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from fluvial.table.errors import ValidationException, at
from fluvial.table.expression import Expression
from fluvial.table.planner.logical import (
    Aggregate,
    Calc,
    ChangelogMode,
    ChangelogNormalize,
    Column,
    Deduplicate,
    Join,
    RelNode,
    Scan,
)
from fluvial.table.planner.rex import InputRef

__all__ = ["TemporalJoin", "as_of_columns", "plan_temporal_join", "unique_key"]


@dataclass(frozen=True)
class TemporalJoin(Join):
    """`left` joined with the version of `right` valid at `left[left_time]`; `right_time` is right's rowtime."""

    left_time: int = 0
    right_time: int = 0
    primary_key: tuple[int, ...] = ()  # the versioned table's, in its own row

    @property
    def changelog_mode(self) -> ChangelogMode:
        return self.left.changelog_mode  # each joined row keeps its left row's kind, as Flink's

    def explain_terms(self) -> str:
        """As Flink prints it: the equalities, then the temporal condition naming both times and the keys."""
        from fluvial.table.planner.rex_text import rex_text

        kind = "InnerJoin" if self.join_type == "INNER" else "LeftOuterJoin"
        names = self.names
        width = len(self.left.schema)

        def listed(columns: Sequence[int]) -> str:
            return ", ".join(names[c] for c in columns)

        right_keys = [width + k for k in self.right_keys]
        parts = [f"=({names[lk]}, {names[rk]})" for lk, rk in zip(self.left_keys, right_keys)]
        parts.append(
            f"__TEMPORAL_JOIN_CONDITION({names[self.left_time]}, {names[width + self.right_time]}, "
            f"__TEMPORAL_JOIN_CONDITION_PRIMARY_KEY({listed([width + k for k in self.primary_key])}), "
            f"__TEMPORAL_JOIN_LEFT_KEY({listed(self.left_keys)}), __TEMPORAL_JOIN_RIGHT_KEY({listed(right_keys)}))"
        )
        if self.condition is not None:
            parts.append(rex_text(self.condition, names))
        return f"TemporalJoin(joinType=[{kind}], where=[AND({', '.join(parts)})], select=[{', '.join(names)}])"


def unique_key(node: RelNode) -> tuple[int, ...] | None:
    """The columns of `node` that identify its rows (a declared primary key, or what Flink derives through
    deduplication, grouping and projections of the key), or None when it has none."""
    if isinstance(node, Scan):
        key = getattr(node.source, "primary_key", ())
        names = node.names
        return tuple(names.index(k) for k in key) if key and all(k in names for k in key) else None
    if isinstance(node, (ChangelogNormalize, Deduplicate)):
        return node.keys
    if isinstance(node, Aggregate):
        return tuple(range(len(node.group))) if node.group else None
    if isinstance(node, Calc):
        below = unique_key(node.input)
        if below is None or node.projections is None:
            return below
        where = {p.index: i for i, p in reversed(list(enumerate(node.projections))) if isinstance(p, InputRef)}
        return tuple(where[k] for k in below) if all(k in where for k in below) else None
    return None


def as_of_columns(left: RelNode, right: RelNode, join_type: str) -> list[Column]:
    """The columns of `left JOIN right FOR SYSTEM_TIME AS OF ...` (a temporal or a lookup join): left's, then
    right's (renamed as a join renames them), nullable after a LEFT join."""
    from fluvial.table.planner.resolve import joined_names

    names = joined_names(left.names, right.names)[len(left.schema) :]
    outer = join_type == "LEFT"
    return list(left.schema) + [
        Column(n, replace(c.type, nullable=True) if outer else c.type) for n, c in zip(names, right.schema)
    ]


def plan_temporal_join(
    left: RelNode,
    right: RelNode,
    table_name: str,
    join_type: str,
    condition: Expression,
    time: Expression,
    time_index: int,
    position: tuple[int, int] | None,
) -> TemporalJoin:
    """The TemporalJoin of `left` with the versioned table `right` as of `left`'s rowtime column `time_index`
    (`time`, as written), or a ValidationException saying why Flink would not run it. The caller resolves
    `condition`'s qualified names over the joined columns (left's, then right's)."""
    from fluvial.table.planner.resolve import Resolver, resolve_condition, split_equi_join

    if join_type not in ("INNER", "LEFT"):
        raise ValidationException(
            at(
                position,
                f"a temporal join is INNER or LEFT; {join_type} JOIN ... FOR SYSTEM_TIME AS OF is not supported",
            )
        )
    key = unique_key(right)
    if not key:
        raise ValidationException(
            at(
                position,
                f"an event-time temporal join needs a versioned table, but '{table_name}' has no primary key: declare "
                "PRIMARY KEY (...) NOT ENFORCED on it, or deduplicate it by event time in a view",
            )
        )
    right_time = right.rowtime_index()
    if right_time is None:
        raise ValidationException(
            at(
                position,
                f"an event-time temporal join needs a versioned table, but '{table_name}' has no event-time "
                "attribute: declare a WATERMARK on it",
            )
        )
    width = len(left.schema)
    columns = as_of_columns(left, right, join_type)
    names = [c.name for c in columns]
    rex = resolve_condition(condition, Resolver(columns))
    left_keys, right_keys, remainder = split_equi_join(rex, width)
    if not set(key) <= set(right_keys):
        equalities = ", ".join(f"{names[lk]} = {names[width + rk]}" for lk, rk in zip(left_keys, right_keys))
        raise ValidationException(
            at(
                condition.sql_position or position,
                f"versioned table '{table_name}' is joined on its primary key [{', '.join(right.names[k] for k in key)}]"
                f", so the temporal join's ON needs an equality for each of its columns; it has "
                f"{'[' + equalities + ']' if equalities else 'none'}",
            )
        )
    return TemporalJoin(
        tuple(columns),
        left,
        right,
        join_type,
        tuple(left_keys),
        tuple(right_keys),
        remainder,
        rex.describe(),
        time_index,
        right_time,
        key,
    )
