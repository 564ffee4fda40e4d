"""Where a sink gets a SinkUpsertMaterializer (`table.exec.sink.upsert-materialize`), and the upsert keys that
decide it (Flink's FlinkRelMdUpsertKeys, the few rules fluvial's plans need).

A sink with a primary key writes each change over its key's last row. That is right when the query's changelog
is itself keyed by (a subset of) that key: each sink key then has one query row alive at a time, whose changes
reach the sink in order. Otherwise (a join written to a sink keyed by another column, a GROUP BY on columns
other than the sink's key, a key that cannot be derived) Flink puts a SinkUpsertMaterializer before the sink:
`fluvial.table.runtime.sink_materializer`. The option:
- `AUTO` (default): when the sink has a primary key, the query updates, and none of the query's upsert keys is
  contained in the primary key, the INSERT must say how conflicts resolve, as Flink 2.3 asks (FLIP-558):
  `ON CONFLICT DO DEDUPLICATE` (the last row alive shows: the SinkUpsertMaterializer), `DO ERROR` (two rows
  alive for a key fail the job) or `DO NOTHING` (the first row alive shows); the last two judge each key when
  the watermark passes (`fluvial.table.runtime.conflict_materializer`), so every source table must declare a
  watermark. Without a clause planning fails saying so;
- `FORCE`: materialize whenever the sink has a primary key and the query updates;
- `NONE`: never (the user vouches for the order).
Batch jobs never materialize: their aggregates emit final rows only.
"""

from __future__ import annotations

import re
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

__all__ = [
    "ConflictStrategy",
    "ConflictTarget",
    "SinkMaterializer",
    "UpsertMaterialize",
    "materialize_for_sink",
    "split_on_conflict",
    "upsert_keys",
    "upsert_materialize_from",
]

OPTION = "table.exec.sink.upsert-materialize"


class UpsertMaterialize(Enum):
    AUTO = "AUTO"
    FORCE = "FORCE"
    NONE = "NONE"


class ConflictStrategy(Enum):
    """An INSERT's `ON CONFLICT DO ...` clause."""

    DEDUPLICATE = "DEDUPLICATE"
    ERROR = "ERROR"
    NOTHING = "NOTHING"


@dataclass(frozen=True)
class ConflictTarget:
    """An INSERT's target (a table path or descriptor) with its ON CONFLICT clause."""

    path: Any
    conflict: ConflictStrategy

    def __str__(self) -> str:
        return str(self.path)


_ON_CONFLICT = re.compile(r"\s+ON\s+CONFLICT\s+DO\s+([A-Za-z_]+)\s*$", re.IGNORECASE)


def split_on_conflict(text: str) -> tuple[str, ConflictStrategy | None]:
    """An INSERT's text without its trailing `ON CONFLICT DO ...` clause, and the clause's strategy."""
    match = _ON_CONFLICT.search(text)
    if match is None:
        return text, None
    word = match.group(1).upper()
    try:
        return text[: match.start()], ConflictStrategy(word)
    except ValueError:
        raise ValidationException(
            f"ON CONFLICT DO {word} is not supported; use ON CONFLICT DO DEDUPLICATE, DO ERROR or DO NOTHING"
        ) from None


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
    conflict: ConflictStrategy | None = None
    table: str = ""

    @property
    def changelog_mode(self) -> ChangelogMode:
        return ChangelogMode.RETRACT  # it emits +I, +U and -D: an updating stream as far as sinks are concerned

    def explain_terms(self) -> str:
        conflict = f", conflictStrategy=[{self.conflict.value}]" if self.conflict is not None else ""
        return f"SinkMaterializer(pk=[{', '.join(self.names[k] for k in self.pk)}]{conflict})"


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


def _sources_without_watermark(node: RelNode) -> list[str]:
    if isinstance(node, Scan):
        return [] if node.watermark is not None else [f"default_catalog.default_database.{node.table_name}"]
    return [name for child in node.inputs for name in _sources_without_watermark(child)]


def materialize_for_sink(
    node: RelNode,
    primary_key: Sequence[str],
    strategy: UpsertMaterialize,
    streaming: bool = True,
    conflict: ConflictStrategy | None = None,
    table: str = "",
) -> RelNode:
    """`node` with a SinkMaterializer on top when the sink `table` (keyed by `primary_key`, column names of
    `node`) needs one under `strategy` and the INSERT's `conflict` clause; `node` itself otherwise. Raises when
    AUTO finds the query keyed otherwise and no clause says how conflicts resolve, when a clause is given for a
    query that only inserts, and when DO ERROR / DO NOTHING would run over a source without a watermark."""
    if not streaming or not primary_key:
        return node
    if node.changelog_mode is ChangelogMode.INSERT_ONLY:
        if conflict is not None:
            raise ValidationException(
                f"ON CONFLICT clause is only allowed for upsert sinks, and sink table '{table}' only receives "
                "inserts from this query; remove the clause"
            )
        return node  # inserts only: each key's rows arrive as written, nothing to reorder
    if strategy is UpsertMaterialize.NONE:
        return node  # as Flink does, a clause then has no effect: NONE means the user vouches for the order
    names = node.names
    missing = [k for k in primary_key if k not in names]
    if missing:
        return node  # the connector names the key columns the table lacks
    pk = tuple(names.index(k) for k in primary_key)
    keys = upsert_keys(node)
    if strategy is UpsertMaterialize.AUTO and keys is not None and any(set(key) <= set(pk) for key in keys):
        return node
    upsert_key = min(keys, key=len) if keys else None
    if strategy is UpsertMaterialize.AUTO and conflict is None:
        shown = ", ".join(names[k] for k in upsert_key or ())
        raise ValidationException(
            f"The query has an upsert key that differs from the primary key of sink table '{table}' (primary key: "
            f"[{', '.join(primary_key)}], upsert key: [{shown}]), which can give non-deterministic results; end "
            "the INSERT with ON CONFLICT DO DEDUPLICATE (keep the last row), ON CONFLICT DO ERROR (fail on a "
            "conflict) or ON CONFLICT DO NOTHING (keep the first row)"
        )
    if conflict in (ConflictStrategy.ERROR, ConflictStrategy.NOTHING):
        lacking = sorted(set(_sources_without_watermark(node)))
        if lacking:
            raise ValidationException(
                f"ON CONFLICT DO {conflict.value} needs every source table to declare a watermark, but "
                f"{', '.join(lacking)} does not; add a WATERMARK declaration to it"
            )
    return SinkMaterializer(node.schema, node, pk, upsert_key, conflict, table)
