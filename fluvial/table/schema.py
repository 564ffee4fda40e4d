"""`Schema`, `TableSchema`-like resolved schemas, `TableDescriptor` and `FormatDescriptor` (PyFlink's).

A Schema is what a user declares: physical columns, computed columns (`column_by_expression`), metadata
columns, a watermark, a primary key. The catalog resolves it against the connector into the columns a scan
produces (`fluvial.table.catalog`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from fluvial.table.types import DataType

__all__ = ["Schema", "UnresolvedColumn", "TableDescriptor", "FormatDescriptor"]


@dataclass(frozen=True)
class UnresolvedColumn:
    """A declared column: physical (`data_type`), computed (`expression`, SQL text), or metadata
    (`metadata_key`: what the connector reads, and writes unless `virtual`)."""

    name: str
    data_type: DataType | None = None
    expression: Any = None
    metadata_key: str | None = None
    comment: str | None = None
    position: tuple[int, int] | None = None
    virtual: bool = False


@dataclass(frozen=True)
class Schema:
    columns: tuple[UnresolvedColumn, ...] = ()
    watermark_column: str | None = None
    watermark_expression: Any = None
    primary_key: tuple[str, ...] = ()
    watermark_position: tuple[int, int] | None = None

    @staticmethod
    def new_builder() -> Schema.Builder:
        return Schema.Builder()

    def __str__(self) -> str:
        lines = []
        for c in self.columns:
            if c.metadata_key is not None:
                source = "" if c.metadata_key == c.name else f" FROM '{c.metadata_key}'"
                lines.append(f"  `{c.name}` {c.data_type} METADATA{source}{' VIRTUAL' if c.virtual else ''}")
            elif c.data_type is not None:
                lines.append(f"  `{c.name}` {c.data_type}")
            else:
                lines.append(f"  `{c.name}` AS {c.expression}")
        if self.watermark_column:
            lines.append(f"  WATERMARK FOR `{self.watermark_column}` AS {self.watermark_expression}")
        return "(\n" + ",\n".join(lines) + "\n)"

    class Builder:
        """PyFlink's `Schema.Builder`."""

        def __init__(self) -> None:
            self._columns: list[UnresolvedColumn] = []
            self._watermark: tuple[str, Any] | None = None
            self._primary_key: tuple[str, ...] = ()

        def from_schema(self, schema: Schema) -> Schema.Builder:
            self._columns.extend(schema.columns)
            if schema.watermark_column:
                self._watermark = (schema.watermark_column, schema.watermark_expression)
            self._primary_key = schema.primary_key
            return self

        def from_row_data_type(self, data_type: DataType) -> Schema.Builder:
            for f in data_type.fields:
                self._columns.append(UnresolvedColumn(f.name, f.data_type))
            return self

        def from_fields(self, field_names: list[str], field_data_types: list[DataType]) -> Schema.Builder:
            for n, t in zip(field_names, field_data_types):
                self._columns.append(UnresolvedColumn(n, t))
            return self

        def column(self, column_name: str, data_type: DataType | str) -> Schema.Builder:
            if isinstance(data_type, str):
                from fluvial.table.sql.types import parse_type

                data_type = parse_type(data_type)
            self._columns.append(UnresolvedColumn(column_name, data_type))
            return self

        def column_by_expression(self, column_name: str, expr: Any) -> Schema.Builder:
            self._columns.append(UnresolvedColumn(column_name, expression=expr))
            return self

        def column_by_metadata(
            self, column_name: str, data_type: DataType, metadata_key: str | None = None, is_virtual: bool = False
        ) -> Schema.Builder:
            if isinstance(data_type, str):
                from fluvial.table.sql.types import parse_type

                data_type = parse_type(data_type)
            self._columns.append(
                UnresolvedColumn(column_name, data_type, metadata_key=metadata_key or column_name, virtual=is_virtual)
            )
            return self

        def with_comment(self, comment: str) -> Schema.Builder:
            if self._columns:
                last = self._columns[-1]
                self._columns[-1] = replace(last, comment=comment)
            return self

        def watermark(self, column_name: str, watermark_expr: Any) -> Schema.Builder:
            self._watermark = (column_name, watermark_expr)
            return self

        def primary_key(self, *column_names: str) -> Schema.Builder:
            self._primary_key = tuple(column_names)
            return self

        def primary_key_named(self, constraint_name: str, *column_names: str) -> Schema.Builder:
            return self.primary_key(*column_names)

        def build(self) -> Schema:
            watermark = self._watermark or (None, None)
            return Schema(tuple(self._columns), watermark[0], watermark[1], self._primary_key)


@dataclass(frozen=True)
class FormatDescriptor:
    format: str
    options: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def for_format(format: str) -> FormatDescriptor.Builder:
        return FormatDescriptor.Builder(format)

    class Builder:
        def __init__(self, format: str) -> None:
            self._format = format
            self._options: dict[str, str] = {}

        def option(self, key: str, value: Any) -> FormatDescriptor.Builder:
            self._options[key] = str(value)
            return self

        def build(self) -> FormatDescriptor:
            return FormatDescriptor(self._format, dict(self._options))


@dataclass(frozen=True)
class TableDescriptor:
    """A connector table described in Python (`TableDescriptor.for_connector("datagen").schema(...)...`)."""

    schema: Schema | None
    options: dict[str, str]
    partition_keys: tuple[str, ...] = ()
    comment: str | None = None

    @staticmethod
    def for_connector(connector: str) -> TableDescriptor.Builder:
        return TableDescriptor.Builder(connector)

    def get_schema(self) -> Schema | None:
        return self.schema

    def get_options(self) -> dict[str, str]:
        return dict(self.options)

    def __str__(self) -> str:
        options = ",\n".join(f"  '{k}' = '{v}'" for k, v in self.options.items())
        return f"{self.schema or '()'}\nWITH (\n{options}\n)"

    class Builder:
        def __init__(self, connector: str) -> None:
            self._schema: Schema | None = None
            self._options: dict[str, str] = {"connector": connector}
            self._partition_keys: tuple[str, ...] = ()
            self._comment: str | None = None

        def schema(self, schema: Schema) -> TableDescriptor.Builder:
            self._schema = schema
            return self

        def option(self, key: str, value: Any) -> TableDescriptor.Builder:
            self._options[key] = str(value).lower() if isinstance(value, bool) else str(value)
            return self

        def format(self, format: str | FormatDescriptor, format_option: Any = None) -> TableDescriptor.Builder:
            descriptor = FormatDescriptor(format) if isinstance(format, str) else format
            self._options["format"] = descriptor.format
            for k, v in descriptor.options.items():
                self._options[f"{descriptor.format}.{k}"] = v
            return self

        def partitioned_by(self, *partition_keys: str) -> TableDescriptor.Builder:
            self._partition_keys = tuple(partition_keys)
            return self

        def comment(self, comment: str) -> TableDescriptor.Builder:
            self._comment = comment
            return self

        def build(self) -> TableDescriptor:
            return TableDescriptor(self._schema, dict(self._options), self._partition_keys, self._comment)
