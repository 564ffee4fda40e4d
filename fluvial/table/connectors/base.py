"""The connector contract and the registry of factories by `connector` name."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any, Protocol

from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import ChangelogMode, Column
from fluvial.table.planner.rex import Rex

__all__ = [
    "ConnectorContext",
    "TableSourceFactory",
    "TableSinkFactory",
    "TableLookupFactory",
    "lookup_factory",
    "is_lookup_source",
    "source_factory",
    "sink_factory",
    "check_options",
    "check_metadata",
]


@dataclass(frozen=True)
class ConnectorContext:
    """What a factory is given: the table's name, its physical columns, its WITH options, and the columns of its
    `PRIMARY KEY (...) NOT ENFORCED` (empty: none declared); for a partitioned table its `PARTITIONED BY` columns,
    and for a source the values a query's WHERE clause allows them (`partition_filter`: column -> allowed values,
    from equalities and INs on literals; None: every partition); its metadata columns
    (`fluvial.table.catalog.MetadataColumn`; a source's rows carry their values after the physical columns,
    and so do a sink's, the virtual ones left out); and for a source, what the planner pushed into it
    (`fluvial.table.connectors.abilities`): the columns to produce (`projection`, paths of physical column
    indices; None: all), the filters it accepted, a limit hint."""

    table_name: str
    columns: tuple[Column, ...]
    options: dict[str, str]
    primary_key: tuple[str, ...] = ()
    _: KW_ONLY
    partition_keys: tuple[str, ...] = ()
    partition_filter: tuple[tuple[str, tuple[Any, ...]], ...] | None = None
    metadata: tuple[Any, ...] = ()
    projection: tuple[tuple[int, ...], ...] | None = None
    filters: tuple[Rex, ...] = ()
    limit: int | None = None

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def produced_indices(self) -> list[int]:
        """The physical columns the source emits, in order (top-level paths)."""
        if self.projection is None:
            return list(range(len(self.columns)))
        return [path[0] for path in self.projection]

    @property
    def produced_columns(self) -> tuple[Column, ...]:
        return tuple(self.columns[i] for i in self.produced_indices)

    @property
    def produced_names(self) -> list[str]:
        return [c.name for c in self.produced_columns]


class TableSourceFactory(Protocol):
    """Builds a DataStream of Rows (named, kind +I) in `env`."""

    def create_source(self, env: Any, context: ConnectorContext) -> Any: ...


class TableLookupFactory(Protocol):
    """A lookup source (the dimension side of a lookup join): a picklable LookupFunction
    (`fluvial.table.connectors.lookup`) that finds the rows whose columns `keys` (indexes) equal a key."""

    def create_lookup(self, context: ConnectorContext, keys: tuple[int, ...]) -> Any: ...


class TableSinkFactory(Protocol):
    """Consumes a DataStream of Rows; `mode` is the input's changelog mode (a sink that takes only inserts
    refuses RETRACT with a ValidationException)."""

    def create_sink(self, stream: Any, context: ConnectorContext, mode: ChangelogMode) -> Any: ...


def check_options(
    connector: str,
    options: dict[str, str],
    allowed: set[str],
    prefixes: tuple[str, ...] = (),
    required: tuple[str, ...] = (),
) -> None:
    """Flink's option validation: every key known, every required key present."""
    unknown = sorted(k for k in options if k != "connector" and k not in allowed and not k.startswith(prefixes))
    if unknown:
        raise ValidationException(
            f"Unsupported options found for '{connector}': {', '.join(unknown)}. Supported options: "
            f"{', '.join(sorted(allowed | {'connector'}))}"
        )
    missing = [k for k in required if k not in options]
    if missing:
        raise ValidationException(f"One or more required options are missing for '{connector}': {', '.join(missing)}")


def check_metadata(connector: str, table_name: str, metadata: tuple[Any, ...], factory: Any, role: str) -> None:
    """Every metadata column's key is one the connector reads (`readable_metadata`) or, for a sink's non-virtual
    columns, writes (`writable_metadata`): Flink's check, as a one-sentence error naming the keys there are."""
    if role == "create_sink":
        metadata = tuple(m for m in metadata if not m.virtual)
    if not metadata:
        return
    available = getattr(factory, "readable_metadata" if role == "create_source" else "writable_metadata", None)
    if not available:
        raise ValidationException(
            f"Table '{table_name}' declares metadata column '{metadata[0].name}', but connector '{connector}' "
            "provides no metadata; declare it as a physical or computed column, or use a connector with metadata "
            "(kafka, upsert-kafka)"
        )
    for m in metadata:
        if m.key not in available:
            if role == "create_source":
                fix = f"connector '{connector}' reads the metadata keys {', '.join(sorted(available))}"
            else:
                fix = (
                    f"connector '{connector}' writes the metadata keys {', '.join(sorted(available))}; "
                    "declare the column VIRTUAL to only read it"
                )
            raise ValidationException(
                f"Invalid metadata key '{m.key}' in column '{m.name}' of table '{table_name}': {fix}"
            )


def _factories() -> dict[str, Any]:
    from fluvial.table.connectors import blackhole, datagen, filesystem, jdbc, kafka, nexmark, print_sink, upsert_kafka

    return {
        "kafka": kafka.KafkaFactory(),
        "upsert-kafka": upsert_kafka.UpsertKafkaFactory(),
        "datagen": datagen.DataGenFactory(),
        "jdbc": jdbc.JdbcTableFactory(),
        "print": print_sink.PrintFactory(),
        "blackhole": blackhole.BlackHoleFactory(),
        "filesystem": filesystem.FileSystemFactory(),
        "nexmark": nexmark.NexmarkFactory(),
    }


def _factory(options: dict[str, str], table_name: str, role: str) -> Any:
    name = options.get("connector")
    if name is None:
        raise ValidationException(
            f"Table options do not contain an option key 'connector' for table '{table_name}'; add "
            "WITH ('connector' = '...')"
        )
    factory = _factories().get(name)
    if factory is None or not hasattr(factory, role):
        kinds = sorted(k for k, f in _factories().items() if hasattr(f, role))
        what = {"create_source": "source", "create_sink": "sink"}.get(role, "lookup source")
        raise ValidationException(
            f"Could not find any factory for identifier '{name}' that implements a table {what}; available "
            f"factories: {', '.join(kinds)}"
        )
    return factory


def source_factory(options: dict[str, str], table_name: str, metadata: tuple[Any, ...] = ()) -> TableSourceFactory:
    factory = _factory(options, table_name, "create_source")
    check_metadata(options["connector"], table_name, metadata, factory, "create_source")
    return factory


def sink_factory(options: dict[str, str], table_name: str, metadata: tuple[Any, ...] = ()) -> TableSinkFactory:
    factory = _factory(options, table_name, "create_sink")
    check_metadata(options["connector"], table_name, metadata, factory, "create_sink")
    return factory


def is_lookup_source(options: dict[str, str], table_name: str) -> bool:
    return hasattr(_factory(options, table_name, "create_source"), "create_lookup")


def lookup_factory(options: dict[str, str], table_name: str) -> TableLookupFactory:
    return _factory(options, table_name, "create_lookup")
