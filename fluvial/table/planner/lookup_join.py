"""Lookup joins: `JOIN dim FOR SYSTEM_TIME AS OF o.proc_time AS d ON o.k = d.id` (Flink's processing-time
temporal join against a lookup source). Each input row asks the dimension table for the rows whose key columns
equal its own, at the moment it is processed; nothing of the dimension table is kept in state (a connector may
cache, as `lookup.cache` says).

Planned only where Flink plans a LookupJoin: the table's connector is a lookup source (its factory has
`create_lookup`), the time is a processing-time attribute of the input, the join is INNER or LEFT, and the
condition has an equality between an input column and a dimension column. Anything else is refused in one
sentence saying what is supported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluvial.table.errors import ValidationException, at
from fluvial.table.expression import Expression
from fluvial.table.planner.logical import RelNode, Scan, SingleRel
from fluvial.table.planner.rex import Rex

__all__ = ["LookupJoin", "plan_lookup_join"]


@dataclass(frozen=True)
class LookupJoin(SingleRel):
    """`input` joined with the rows of lookup table `table_name` (its `source`: a catalog ConnectorSource) whose
    columns `lookup_keys` equal the input's `input_keys`; `condition` is the rest of the ON clause over the
    joined row. Each output row keeps its input row's kind."""

    table_name: str = ""
    source: Any = None
    input_keys: tuple[int, ...] = ()
    lookup_keys: tuple[int, ...] = ()
    join_type: str = "INNER"
    condition: Rex | None = None
    condition_text: str = ""

    @property
    def lookup_width(self) -> int:
        return len(self.schema) - len(self.input.schema)

    def explain_terms(self) -> str:
        names = self.names
        width = len(self.input.schema)
        keys = ", ".join(f"{names[width + d]}={names[i]}" for i, d in zip(self.input_keys, self.lookup_keys))
        kind = "InnerJoin" if self.join_type == "INNER" else "LeftOuterJoin"
        where = f", where=[{self.condition_text}]" if self.condition is not None else ""
        return (
            f"LookupJoin(table=[default_catalog.default_database.{self.table_name}], joinType=[{kind}], "
            f"lookup=[{keys}]{where}, select=[{', '.join(names)}])"
        )


def plan_lookup_join(
    left: RelNode,
    lookup: RelNode,
    table_name: str,
    join_type: str,
    condition: Expression,
    time: Expression,
    period: Rex,
    position: tuple[int, int] | None,
) -> LookupJoin:
    """The LookupJoin of `left` with the lookup table `lookup` (its Scan) as of `time` (`period`: it resolved
    over `left`), or a ValidationException saying why this temporal join is not one fluvial runs. The caller
    resolves `condition`'s qualified names over the joined columns (left's, then the lookup table's)."""
    from fluvial.table.connectors.base import is_lookup_source
    from fluvial.table.planner.resolve import Resolver, resolve_condition, split_equi_join

    if period.type.time_attribute != "PROCTIME":
        what = "an event-time attribute" if period.type.time_attribute == "ROWTIME" else "not a time attribute"
        raise ValidationException(
            at(
                time.sql_position,
                f"FOR SYSTEM_TIME AS OF {time.to_string()} is {what}: a temporal join is as of the input's "
                "processing-time attribute (a lookup join) or of its event-time attribute column itself (a join "
                "of a versioned table)",
            )
        )
    if not isinstance(lookup, Scan) or lookup.source is None or not hasattr(lookup.source, "options"):
        raise ValidationException(
            at(
                position,
                f"a processing-time temporal join needs a lookup table, and '{table_name}' is a view: join a "
                "versioned view as of the input's event-time attribute instead, as Flink does",
            )
        )
    options = dict(lookup.source.options)
    if not is_lookup_source(options, table_name):
        raise ValidationException(
            at(
                position,
                f"table '{table_name}' (connector '{options.get('connector')}') is not a lookup source: a temporal "
                "join FOR SYSTEM_TIME AS OF a processing time needs a connector that looks rows up by key (jdbc); "
                "join it with a regular JOIN instead",
            )
        )
    if lookup.computed or lookup.watermark is not None:
        raise ValidationException(
            at(position, f"lookup table '{table_name}' has computed columns or a watermark, which a lookup cannot fill")
        )
    if join_type not in ("INNER", "LEFT"):
        raise ValidationException(
            at(position, f"a lookup join is INNER or LEFT; {join_type} JOIN ... FOR SYSTEM_TIME AS OF is not supported")
        )
    from fluvial.table.planner.temporal_join import as_of_columns

    width = len(left.schema)
    columns = as_of_columns(left, lookup, join_type)
    rex = resolve_condition(condition, Resolver(columns))
    input_keys, lookup_keys, remainder = split_equi_join(rex, width)
    if not input_keys:
        raise ValidationException(
            at(
                condition.sql_position,
                f"a lookup join needs an equality between an input column and a column of '{table_name}' "
                "(ON o.k = d.id) to look rows up by",
            )
        )
    return LookupJoin(
        tuple(columns),
        left,
        table_name,
        lookup.source,
        tuple(input_keys),
        tuple(lookup_keys),
        join_type,
        remainder,
        rex.describe(),
    )
