"""The in-memory catalog (`default_catalog.default_database`): temporary tables, views and functions.

A connector table is kept as declared (schema and options); it is resolved into a Scan when a query reads it,
so its connector's options are checked then, as Flink's are. A view keeps its logical plan.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from fluvial.table.errors import ValidationException, at
from fluvial.table.expression import Expression
from fluvial.table.function_catalog import FunctionCatalog
from fluvial.table.planner.logical import ChangelogNormalize, Column, RelNode, Scan, WatermarkSpec
from fluvial.table.planner.resolve import Resolver
from fluvial.table.planner.rex import InputRef, Rex
from fluvial.table.schema import Schema
from fluvial.table.types import DataType

__all__ = [
    "Catalog",
    "CatalogTable",
    "ConnectorSource",
    "MetadataColumn",
    "metadata_columns",
    "resolve_connector_table",
    "sink_columns",
]


@dataclass(frozen=True)
class CatalogTable:
    """A connector table (`schema` + `options`) or a view (`plan`)."""

    name: str
    schema: Schema | None = None
    options: dict[str, str] | None = None
    plan: RelNode | None = None
    partition_keys: tuple[str, ...] = ()

    @property
    def is_view(self) -> bool:
        return self.plan is not None


@dataclass(frozen=True, slots=True)
class MetadataColumn:
    """`name TYPE METADATA [FROM 'key'] [VIRTUAL]`: a value the connector reads (and, unless virtual, writes)
    besides the row's physical columns."""

    name: str
    key: str
    type: DataType
    virtual: bool = False


def metadata_columns(schema: Schema) -> tuple[MetadataColumn, ...]:
    return tuple(
        MetadataColumn(c.name, c.metadata_key, c.data_type, c.virtual)
        for c in schema.columns
        if c.metadata_key is not None and c.data_type is not None
    )


def sink_columns(schema: Schema) -> list[Column]:
    """The columns an INSERT writes, in declared order: physical and non-virtual metadata columns (Flink's
    persisted columns; computed and VIRTUAL columns are left out)."""
    return [
        Column(c.name, c.data_type)
        for c in schema.columns
        if c.data_type is not None and c.expression is None and not (c.metadata_key is not None and c.virtual)
    ]


@dataclass(frozen=True)
class ConnectorSource:
    """Builds a connector's DataStream at translation time: rows of the physical columns followed by the
    metadata columns' values, with what the planner pushed into it (`fluvial.table.planner.pushdown` asks through
    the `apply_*` methods, which ask the connector's factory for its abilities: `fluvial.table.connectors.abilities`;
    a source with metadata columns takes no projection)."""

    table_name: str
    columns: tuple[Column, ...]
    options: tuple[tuple[str, str], ...]
    primary_key: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    partition_filter: tuple[tuple[str, tuple[Any, ...]], ...] | None = None
    metadata: tuple[MetadataColumn, ...] = ()
    projection: tuple[tuple[int, ...], ...] | None = None
    filters: tuple[Rex, ...] = ()
    limit: int | None = None

    def context(self) -> Any:
        from fluvial.table.connectors.base import ConnectorContext

        return ConnectorContext(
            self.table_name,
            self.columns,
            dict(self.options),
            self.primary_key,
            partition_keys=self.partition_keys,
            partition_filter=self.partition_filter,
            metadata=self.metadata,
            projection=self.projection,
            filters=self.filters,
            limit=self.limit,
        )

    def _factory(self) -> Any:
        from fluvial.table.connectors.base import source_factory

        return source_factory(dict(self.options), self.table_name, self.metadata)

    def create_stream(self, env: Any) -> Any:
        return self._factory().create_source(env, self.context())

    def apply_filters(self, filters: tuple[Rex, ...]) -> tuple[ConnectorSource, tuple[Rex, ...]] | None:
        """(this source with the accepted conjuncts, the remaining ones), or None if it takes no filters."""
        from fluvial.table.connectors.abilities import SupportsFilterPushDown
        from fluvial.table.planner.pushdown import remap

        factory = self._factory()
        if not isinstance(factory, SupportsFilterPushDown):
            return None
        produced = {n: path[0] for n, path in enumerate(self.projection or ())}
        physical = [remap(f, produced) if self.projection is not None else f for f in filters]
        # a conjunct the source took before and still in the Calc is one it left remaining: not offered again; nor
        # is one on a metadata column (after the physical ones)
        width = len(self.columns)
        fresh = [f for f in physical if f not in self.filters and all(i < width for i in _column_refs(f))]
        if not fresh:
            return None
        result = factory.apply_filters(self.context(), fresh)
        if not result.accepted:
            return None
        remaining = [f for f in physical if f not in fresh or f in result.remaining]
        back = {p: n for n, p in produced.items()}
        accepted = replace(self, filters=self.filters + tuple(result.accepted))
        return accepted, tuple(remap(f, back) if self.projection is not None else f for f in remaining)

    def apply_projection(self, indices: tuple[int, ...]) -> ConnectorSource | None:
        """This source producing only physical columns `indices`, or None if it cannot."""
        from fluvial.table.connectors.abilities import SupportsProjectionPushDown

        if self.metadata or not isinstance(self._factory(), SupportsProjectionPushDown):
            return None
        current = [p[0] for p in self.projection] if self.projection is not None else list(range(len(self.columns)))
        return replace(self, projection=tuple((current[i],) for i in indices))

    def apply_limit(self, limit: int) -> ConnectorSource | None:
        from fluvial.table.connectors.abilities import SupportsLimitPushDown

        factory = self._factory()
        if not isinstance(factory, SupportsLimitPushDown) or not factory.supports_limit(self.context()):
            return None
        return replace(self, limit=limit if self.limit is None else min(limit, self.limit))

    def digest(self) -> list[str]:
        """What was pushed, as Flink's scan digest shows it: `filter=[...]`, `project=[...]`, `limit=[...]`."""
        names = [c.name for c in self.columns]
        parts = []
        if self.filters:
            from fluvial.table.planner.rex_text import rex_text

            texts = [rex_text(f, names) for f in self.filters]
            joined = texts[0] if len(texts) == 1 else "and(" + ", ".join(texts) + ")"
            parts.append(f"filter=[{joined}]")
        if self.projection is not None:
            parts.append(f"project=[{', '.join(names[path[0]] for path in self.projection)}]")
            parts.append("metadata=[]")  # no metadata columns are read (Flink prints this beside a projection)
        if self.limit is not None:
            parts.append(f"limit=[{self.limit}]")
        return parts


def _column_refs(rex: Rex) -> set[int]:
    from fluvial.table.connectors.abilities import referenced_columns

    return referenced_columns(rex)


def _expression_of(value: Any) -> Expression:
    if isinstance(value, Expression):
        return value
    from fluvial.table.sql.convert import parse_expression

    return parse_expression(str(value))


def resolve_schema(
    schema: Schema, physical: list[Column] | None = None
) -> tuple[list[Column], list[Column], tuple[Rex, ...], WatermarkSpec | None]:
    """(the columns the source produces, all columns, the projection from produced to all, the watermark).

    A source produces the physical columns followed by the metadata columns (in declared order)."""
    if physical is None:
        physical = [
            Column(c.name, c.data_type)
            for c in schema.columns
            if c.data_type is not None and c.expression is None and c.metadata_key is None
        ] + [Column(m.name, m.type) for m in metadata_columns(schema)]
    resolver = Resolver(physical)
    columns: list[Column] = []
    projection: list[Rex] = []
    physical_names = [c.name for c in physical]
    for c in schema.columns:
        if c.expression is not None:
            expression = _expression_of(c.expression)
            rex = resolver.resolve(expression)
            columns.append(Column(c.name, rex.type))
            projection.append(rex)
        else:
            if c.name not in physical_names:
                raise ValidationException(
                    f"the schema declares column '{c.name}', which the input does not have (it has {physical_names})"
                )
            index = physical_names.index(c.name)
            data_type = c.data_type if c.data_type is not None else physical[index].type
            columns.append(Column(c.name, data_type))
            projection.append(InputRef(index, physical[index].type, c.name))
    if not schema.columns:
        columns = list(physical)
        projection = [InputRef(i, c.type, c.name) for i, c in enumerate(physical)]
    watermark = None
    if schema.watermark_column is not None:
        names = [c.name for c in columns]
        if schema.watermark_column not in names:
            raise ValidationException(
                at(
                    schema.watermark_position,
                    f"Invalid column name '{schema.watermark_column}' "
                    f"for rowtime attribute in watermark declaration. Available columns are: "
                    f"[{', '.join(names)}]",
                )
            )
        index = names.index(schema.watermark_column)
        rowtime_type = columns[index].type
        if rowtime_type.name not in ("TIMESTAMP", "TIMESTAMP_LTZ") or (rowtime_type.precision or 0) > 3:
            raise ValidationException(
                at(
                    schema.watermark_position,
                    f"Invalid data type of time field for watermark definition. The field must "
                    f"be of type TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported precision 'p' "
                    f"is from 0 to 3, but the time field type is {rowtime_type}",
                )
            )
        columns[index] = Column(columns[index].name, replace(rowtime_type, time_attribute="ROWTIME"))
        expression = _expression_of(schema.watermark_expression)
        rex = Resolver(columns).resolve(expression)
        if rex.type.name not in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            raise ValidationException(
                at(
                    schema.watermark_position,
                    f"Watermark strategy {expression.to_string()} must "
                    f"be of type TIMESTAMP or TIMESTAMP_LTZ but is of type '{rex.type}'",
                )
            )
        watermark = WatermarkSpec(index, rex, str(schema.watermark_expression))
    return physical, columns, tuple(projection), watermark


def resolve_connector_table(table: CatalogTable) -> RelNode:
    assert table.schema is not None and table.options is not None
    produced, columns, projection, watermark = resolve_schema(table.schema)
    identity = all(isinstance(r, InputRef) and r.index == i for i, r in enumerate(projection)) and len(
        projection
    ) == len(produced)
    metadata = metadata_columns(table.schema)
    physical = produced[: len(produced) - len(metadata)]
    key = table.schema.primary_key
    source = ConnectorSource(
        table.name,
        tuple(physical),
        tuple(table.options.items()),
        key,
        partition_keys=table.partition_keys,
        metadata=metadata,
    )
    scan = Scan(tuple(columns), table.name, source, watermark, () if identity else projection)
    from fluvial.table.connectors.base import source_factory

    factory: Any = source_factory(table.options, table.name, metadata)
    if getattr(factory, "produces_upserts", False):
        # an upsert source's rows are upserts and deletes by key: normalised to a full changelog (Flink's rule)
        factory.check_primary_key(table.name, key)
        names = scan.names
        return ChangelogNormalize(scan.schema, scan, tuple(names.index(k) for k in key))
    return scan


class Catalog:
    """Temporary objects by name; names are case-sensitive, as Flink's."""

    def __init__(self) -> None:
        self.tables: dict[str, CatalogTable] = {}
        self.current_catalog = "default_catalog"
        self.current_database = "default_database"
        self.function_catalog = FunctionCatalog(self.current_catalog, self.current_database)
        self.functions: dict[str, Any] = self.function_catalog.lookup  # name → function, what the planner reads

    @staticmethod
    def _short(path: str) -> str:
        parts = [p.strip("`") for p in path.split(".")]
        return parts[-1]

    def add(self, table: CatalogTable, if_not_exists: bool = False) -> None:
        name = self._short(table.name)
        if name in self.tables:
            if if_not_exists:
                return
            raise ValidationException(
                f"Temporary table '{self.current_catalog}.{self.current_database}.{name}' already exists"
            )
        self.tables[name] = replace(table, name=name)

    def get(self, path: str, position: tuple[int, int] | None = None) -> CatalogTable:
        name = self._short(path)
        table = self.tables.get(name)
        if table is None:
            raise ValidationException(
                at(position, f"Object '{name}' not found within '{self.current_catalog}.{self.current_database}'")
            )
        return table

    def drop(self, path: str, if_exists: bool = False) -> bool:
        name = self._short(path)
        if name not in self.tables:
            if if_exists:
                return False
            raise ValidationException(
                f"Temporary table with identifier '`{self.current_catalog}`."
                f"`{self.current_database}`.`{name}`' does not exist."
            )
        del self.tables[name]
        return True

    def scan(self, path: str, position: tuple[int, int] | None = None) -> RelNode:
        table = self.get(path, position)
        if table.plan is not None:
            return table.plan
        return resolve_connector_table(table)
