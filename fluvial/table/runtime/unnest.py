"""UNNEST, Flink's built-in table function: the rows of an ARRAY, MAP or MULTISET value, run by the same
Correlate operator as a udtf (it has the udtf wrapper's `_invoke`, `_name`, `_kind` and `_result_types`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.types import DataType, DataTypes

__all__ = ["UnnestFunction", "unnest_columns"]


def unnest_columns(collection: DataType, ordinality: bool) -> list[tuple[str, DataType]]:
    """UNNEST's output columns for a collection type (Flink's, which are Calcite's, names): an ARRAY's element as `EXPR$0` (a ROW element's
    fields under their own names), a MAP's `KEY` and `VALUE`, then `ORDINALITY` (INT NOT NULL) if asked."""
    if collection.name in ("ARRAY", "MULTISET") and collection.element_type is not None:
        element = collection.element_type
        if element.name == "ROW" and element.fields:
            columns = [
                (f.name, f.data_type if not element.nullable else replace(f.data_type, nullable=True))
                for f in element.fields
            ]
        else:
            columns = [("EXPR$0", element)]
    elif collection.name == "MAP" and collection.key_type is not None and collection.element_type is not None:
        columns = [("KEY", collection.key_type), ("VALUE", collection.element_type)]
    else:
        raise ValidationException(
            f"Cannot apply 'UNNEST' to arguments of type 'UNNEST(<{collection.summary(False)}>)': UNNEST takes "
            "an ARRAY, MAP or MULTISET (build one with ARRAY[...] or MAP[...])"
        )
    if ordinality:
        columns.append(("ORDINALITY", DataTypes.INT(False)))
    return columns


class UnnestFunction:
    """The table function UNNEST(collection) [WITH ORDINALITY]: one row per element (a MULTISET's element as many
    times as it occurs), none for a NULL or empty collection."""

    _kind = "table"
    _name = "UNNEST"
    _alias_names: tuple[str, ...] = ()

    def __init__(self, collection: DataType, ordinality: bool, columns: list[tuple[str, DataType]]) -> None:
        self.kind = collection.name
        self.ordinality = ordinality
        self.spread = (
            self.kind != "MAP" and collection.element_type is not None and collection.element_type.name == "ROW"
        )
        self.width = len(columns) - (1 if ordinality else 0)
        self._result_types = [t for _, t in columns]

    def _invoke(self, value: Any) -> Iterator[tuple[Any, ...]]:
        if value is None:
            return
        if self.kind == "MAP":
            items: Any = ((k, v) for k, v in value.items())
        elif self.kind == "MULTISET" and isinstance(value, dict):
            items = ((k,) for k, n in value.items() for _ in range(n))
        elif self.spread:
            items = (tuple(e) if e is not None else (None,) * self.width for e in value)
        else:
            items = ((e,) for e in value)
        for position, row in enumerate(items, 1):
            yield (*row, position) if self.ordinality else row
