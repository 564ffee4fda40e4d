"""Where a sink gets a SinkUpsertMaterializer (`table.exec.sink.upsert-materialize`), and the upsert keys that
decide it (Flink's FlinkRelMdUpsertKeys, the few rules fluvial's plans need).

A sink with a primary key writes each change over its key's last row. That is right when the query's changelog
is itself keyed by (a subset of) that key: each sink key then has one query row alive at a time, whose changes
reach the sink in order. Otherwise (a join written to a sink keyed by another column, a GROUP BY on columns
other than the sink's key, a key that cannot be derived) Flink puts a SinkUpsertMaterializer before the sink:
`fluvial.table.runtime.sink_materializer`. The option:
- `AUTO` (default): materialize when the sink has a primary key, the query updates, and none of the query's
  upsert keys is contained in the primary key;
- `FORCE`: materialize whenever the sink has a primary key and the query updates;
- `NONE`: never (the user vouches for the order).
Batch jobs never materialize: their aggregates emit final rows only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import (
    Aggregate,
    Calc,
    ChangelogMode,
    ChangelogNormalize,
    Deduplicate,
    RelNode,
    Scan,
    SingleRel,
    TopN,
)
from fluvial.table.planner.rex import InputRef

__all__ = ["SinkMaterializer", "UpsertMaterialize", "materialize_for_sink", "upsert_keys", "upsert_materialize_from"]

OPTION = "table.exec.sink.upsert-materialize"


class UpsertMaterialize(Enum):
    AUTO = "AUTO"
    FORCE = "FORCE"
    NONE = "NONE"


def upsert_materialize_from(config: Any) -> UpsertMaterialize:
    """The option's value from a TableConfig; a value that is none of the three raises (checked when a query is
    planned, as Flink's planner does)."""
    text = str(config.get(OPTION, "AUTO") or "AUTO").strip().upper()
    try:
        return UpsertMaterialize(text)
    except ValueError:
        raise ValidationException(
            f"Invalid value for option '{OPTION}': '{config.get(OPTION)}'; use one of AUTO, FORCE or NONE"
        ) from None


@dataclass(frozen=True)
class SinkMaterializer(SingleRel):
    """Keyed by the sink's primary key `pk`, the rows alive per key turned into correct upserts (module
    docstring); `upsert_key` is the input's own upsert key when it has one (rows are matched by it)."""

    pk: tuple[int, ...] = ()
    upsert_key: tuple[int, ...] | None = None

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.RETRACT  # it emits +I, +U and -D: an updating stream as far as sinks are concerned

    def explain_terms(self) -> str:
        return f"SinkMaterializer(pk=[{', '.join(self.names[k] for k in self.pk)}])"


def upsert_keys(node: RelNode) -> list[tuple[int, ...]] | None:
    """The column sets by which `node`'s changelog is keyed (each key's changes come in order from one place):
    a GROUP BY's keys, a deduplication's or Top-1's partition keys, an upsert source's or a source table's
    primary key, carried through projections and filters. None: unknown (a join, a union, anything else)."""
    if isinstance(node, Aggregate):
        return [tuple(node.group)]
    if isinstance(node, (Deduplicate, ChangelogNormalize)):
        return [tuple(node.keys)]
    if isinstance(node, TopN):
        if node.rank_output:
            return [(*node.keys, len(node.schema) - 1)]
        return [tuple(node.keys)] if node.limit == 1 else None
    if isinstance(node, Scan):
        primary_key = tuple(getattr(node.source, "primary_key", ()) or ())
        names = node.names
        if primary_key and all(k in names for k in primary_key):
            return [tuple(names.index(k) for k in primary_key)]
        return None
    if isinstance(node, Calc):
        keys = upsert_keys(node.input)
        if keys is None or node.projections is None:
            return keys
        positions: dict[int, int] = {}
        for i, rex in enumerate(node.projections):
            if isinstance(rex, InputRef):
                positions.setdefault(rex.index, i)
        mapped = [tuple(positions[k] for k in key) for key in keys if all(k in positions for k in key)]
        return mapped or None
    return None


def materialize_for_sink(
    node: RelNode, primary_key: Sequence[str], strategy: UpsertMaterialize, streaming: bool = True
) -> RelNode:
    """`node` with a SinkMaterializer on top when the sink (keyed by `primary_key`, column names of `node`)
    needs one under `strategy`; `node` itself otherwise."""
    if not streaming or not primary_key or strategy is UpsertMaterialize.NONE:
        return node
    if node.changelog_mode is ChangelogMode.INSERT_ONLY:
        return node  # inserts only: each key's rows arrive as written, nothing to reorder
    names = node.names
    missing = [k for k in primary_key if k not in names]
    if missing:
        return node  # the connector names the key columns the table lacks
    pk = tuple(names.index(k) for k in primary_key)
    keys = upsert_keys(node)
    if strategy is UpsertMaterialize.AUTO and keys is not None and any(set(key) <= set(pk) for key in keys):
        return node
    upsert_key = min(keys, key=len) if keys else None
    return SinkMaterializer(node.schema, node, pk, upsert_key)
