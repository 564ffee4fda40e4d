"""`'connector' = 'jdbc'`: a PostgreSQL table, as Flink's JDBC SQL connector with its PostgreSQL dialect.

- Scan source (bounded): the whole table, or `scan.partition.*` ranges of a numeric column read in parallel
  (`jdbc_scan`), with Flink's mapping from PostgreSQL types.
- Sink: append mode (INSERT) when the DDL declares no primary key — the input must then be insert-only; upsert
  mode when it declares `PRIMARY KEY (...) NOT ENFORCED`: `INSERT ... ON CONFLICT (key) DO UPDATE` for +I/+U,
  `DELETE ... WHERE key` for -D and -U, so a GROUP BY's changelog lands as its final table. Rows are buffered
  and written by the DataStream JDBC sink's writer (`sink.buffer-flush.max-rows`, `sink.buffer-flush.interval`,
  `sink.max-retries`) and flushed at every checkpoint: at least once, idempotent with a key. In upsert mode a
  buffer is first reduced to the last change per key (Flink's TableBufferReducedStatementExecutor): a -U whose
  +U is in the same buffer is overwritten by it; a -U whose +U a filter dropped (HAVING) deletes the row.

Identifiers are written as Flink's PostgreSQL dialect leaves them, so PostgreSQL resolves them the same way:
a name with capitals is folded to lower case (`userId` is the column `userid`); an all-lower-case name is
quoted, which changes nothing but lets it be a reserved word (`user`, `order`).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.row import Row, RowKind
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.jdbc import JdbcConnectionOptions, JdbcExecutionOptions, JdbcSink
from fluvial.datastream.connectors.jdbc_writer import BatchingJdbcWriter, execute_statement
from fluvial.datastream.connectors.sink import SinkWriter
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.connectors.jdbc_scan import JdbcScanSource, ScanColumn, ScanPartition
from fluvial.table.connectors.lookup import LOOKUP_CACHE_OPTIONS, LookupCacheSpec, lookup_cache_spec
from fluvial.table.environment_settings import parse_duration_millis
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import ChangelogMode
from fluvial.table.type_mapping import to_type_info

__all__ = ["JdbcTableFactory", "JdbcTableOptions", "UpsertJdbcSink", "quote_identifier"]

_PARTITION_OPTIONS = (
    "scan.partition.column",
    "scan.partition.num",
    "scan.partition.lower-bound",
    "scan.partition.upper-bound",
)
_OPTIONS = {
    "url",
    "table-name",
    "driver",
    "username",
    "password",
    "connection.max-retry-timeout",
    *_PARTITION_OPTIONS,
    "scan.fetch-size",
    "scan.auto-commit",
    "sink.buffer-flush.max-rows",
    "sink.buffer-flush.interval",
    "sink.max-retries",
    "sink.parallelism",
    "lookup.max-retries",
    *LOOKUP_CACHE_OPTIONS,
}
_UPSERTS = (RowKind.INSERT, RowKind.UPDATE_AFTER)
_UNWRITABLE = ("MAP", "MULTISET", "ROW", "RAW", "STRUCTURED_TYPE")
_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def quote_identifier(name: str) -> str:
    """The identifier as Flink's PostgreSQL dialect writes it (module docstring)."""
    if _PLAIN_IDENTIFIER.fullmatch(name) and name != name.lower():
        return name  # unquoted: PostgreSQL folds it to lower case
    return '"' + name.replace('"', '""') + '"'


def pg_name(name: str) -> str:
    """The name PostgreSQL resolves `quote_identifier(name)` to."""
    return name.lower() if _PLAIN_IDENTIFIER.fullmatch(name) else name


def table_identifier(table_name: str) -> str:
    """`table` or `schema.table`, each part as `quote_identifier`; a name with quotes of its own is taken as is."""
    if '"' in table_name:
        return table_name
    return ".".join(quote_identifier(part) for part in table_name.split("."))


def _integer(options: dict[str, str], key: str, default: int, minimum: int = 0) -> int:
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ValidationException(f"Could not parse value '{text}' for key '{key}': it must be an integer") from None
    if value < minimum:
        raise ValidationException(f"The value of '{key}' must be at least {minimum}, but is {value}")
    return value


@dataclass(frozen=True)
class JdbcTableOptions:
    """The WITH options of a JDBC table, checked (Flink's JdbcDynamicTableFactory validation)."""

    connection: JdbcConnectionOptions
    table_name: str
    partition: ScanPartition | None
    fetch_size: int
    flush_max_rows: int
    flush_interval_ms: int
    max_retries: int
    sink_parallelism: int | None
    lookup_max_retries: int
    lookup_cache: LookupCacheSpec | None

    @staticmethod
    def of(context: ConnectorContext) -> JdbcTableOptions:
        options = context.options
        check_options("jdbc", options, _OPTIONS, required=("url", "table-name"))
        timeout_ms = parse_duration_millis(options.get("connection.max-retry-timeout", "60 s"))
        if timeout_ms < 1000:
            raise ValidationException(
                f"The value of 'connection.max-retry-timeout' must be in second granularity and shouldn't be "
                f"smaller than 1 second, but is {options['connection.max-retry-timeout']}"
            )
        try:
            connection = JdbcConnectionOptions(
                options["url"],
                options.get("driver"),
                options.get("username"),
                options.get("password"),
                timeout_ms // 1000,
            )
        except InvalidJobError as error:
            raise ValidationException(f"JDBC table '{context.table_name}': {error}") from None
        if options.get("scan.auto-commit", "false").lower() != "false":
            raise ValidationException(
                f"JDBC table '{context.table_name}': 'scan.auto-commit' = '{options['scan.auto-commit']}' is not "
                "supported: fluvial reads PostgreSQL through a server-side cursor in a read-only transaction (what "
                "pgJDBC does with auto-commit off); remove the option or set it to 'false'"
            )
        interval = parse_duration_millis(options.get("sink.buffer-flush.interval", "1 s"))
        parallelism = options.get("sink.parallelism")
        return JdbcTableOptions(
            connection,
            options["table-name"],
            _partition(context),
            _integer(options, "scan.fetch-size", 0),
            _integer(options, "sink.buffer-flush.max-rows", 100),
            interval,
            _integer(options, "sink.max-retries", 3),
            _integer(options, "sink.parallelism", 1, minimum=1) if parallelism is not None else None,
            _integer(options, "lookup.max-retries", 3),
            lookup_cache_spec(options, "jdbc"),
        )

    def execution_options(self) -> JdbcExecutionOptions:
        """Flink's flush rules: by size (0: never), by interval (0: never), and at every checkpoint."""
        size = self.flush_max_rows if self.flush_max_rows > 0 else sys.maxsize
        return JdbcExecutionOptions(self.flush_interval_ms, size, self.max_retries)


def _partition(context: ConnectorContext) -> ScanPartition | None:
    options = context.options
    given = [k for k in _PARTITION_OPTIONS if k in options]
    if not given:
        return None
    if len(given) != len(_PARTITION_OPTIONS):
        raise ValidationException(
            "Either all or none of the following options should be provided:\n" + "\n".join(_PARTITION_OPTIONS)
        )
    lower = _integer(options, "scan.partition.lower-bound", 0, minimum=-(2**63))
    upper = _integer(options, "scan.partition.upper-bound", 0, minimum=-(2**63))
    if lower > upper:
        raise ValidationException(
            f"'scan.partition.lower-bound'='{lower}' must not be larger than 'scan.partition.upper-bound'='{upper}'."
        )
    column = options["scan.partition.column"]
    declared = {c.name: c.type for c in context.columns}
    if column not in declared:
        raise ValidationException(
            f"'scan.partition.column' = '{column}' is not a column of table '{context.table_name}'; its columns "
            f"are {context.names}"
        )
    if not (declared[column].is_integral() or declared[column].name == "DECIMAL"):
        raise ValidationException(
            f"'scan.partition.column' = '{column}' is {declared[column].summary()}; the partitioned scan splits "
            "integer ranges of a numeric column (TINYINT, SMALLINT, INT, BIGINT or DECIMAL)"
        )
    return ScanPartition(quote_identifier(column), _integer(options, "scan.partition.num", 1, minimum=1), lower, upper)


def _scan_source(context: ConnectorContext, options: JdbcTableOptions) -> JdbcScanSource:
    return JdbcScanSource(
        options.connection.address(),
        float(options.connection.connection_check_timeout_seconds),
        table_identifier(options.table_name),
        options.table_name,
        tuple(ScanColumn(c.name, c.type, quote_identifier(c.name), pg_name(c.name)) for c in context.columns),
        options.partition,
        options.fetch_size,
        tuple(quote_identifier(k) for k in context.primary_key),
    )


class JdbcTableFactory:
    def create_source(self, env: Any, context: ConnectorContext) -> Any:
        source = _scan_source(context, JdbcTableOptions.of(context))
        return env.from_source(source, source_name=context.table_name)

    def create_lookup(self, context: ConnectorContext, keys: tuple[int, ...]) -> Any:
        """The lookup function of a lookup join by the columns `keys` (jdbc_lookup)."""
        from fluvial.table.connectors.jdbc_lookup import JdbcLookupFunction

        options = JdbcTableOptions.of(context)
        return JdbcLookupFunction(
            _scan_source(context, options), tuple(keys), options.lookup_max_retries, options.lookup_cache
        )

    def create_sink(self, stream: Any, context: ConnectorContext, mode: ChangelogMode) -> Any:
        options = JdbcTableOptions.of(context)
        for column in context.columns:
            if column.type.name in _UNWRITABLE:
                raise ValidationException(
                    f"JDBC sink '{context.table_name}': column '{column.name}' is {column.type.summary()}, which "
                    "the PostgreSQL dialect cannot write; flatten it into columns or cast it to STRING"
                )
        if not context.primary_key and mode is not ChangelogMode.INSERT_ONLY:
            raise ValidationException(
                f"Table sink '{context.table_name}' doesn't support consuming update and delete changes without a "
                "primary key: declare PRIMARY KEY (...) NOT ENFORCED on the JDBC table (the sink then upserts "
                "by it) or write an insert-only query"
            )
        missing = [k for k in context.primary_key if k not in context.names]
        if missing:
            raise ValidationException(
                f"JDBC sink '{context.table_name}': primary key column(s) {missing} are not physical columns of "
                "the table; the key must name written columns"
            )
        sink: JdbcSink
        if context.primary_key:
            sink = UpsertJdbcSink.of(context, options)
            indexes = [context.names.index(k) for k in context.primary_key]
            if options.sink_parallelism is not None:
                # every change of a key goes to one writer, in order (Flink's keyed shuffle for upsert sinks)
                stream = stream.key_by(_KeyOf(indexes))
        else:
            sink = JdbcSink(
                _insert_sql(context, options),
                _type_info(context),
                options.connection,
                options.execution_options(),
                DeliveryGuarantee.AT_LEAST_ONCE,
            )
        result = stream.sink_to(sink).name(f"Sink: {context.table_name}")
        if options.sink_parallelism is not None:
            result.set_parallelism(options.sink_parallelism)
        return result


class _KeyOf:
    """The primary key of a row (picklable key selector)."""

    def __init__(self, indexes: list[int]) -> None:
        self.indexes = indexes

    def __call__(self, row: Row) -> tuple:
        values = row._values
        return tuple(values[i] for i in self.indexes)


def _type_info(context: ConnectorContext, names: list[str] | None = None) -> Any:
    from fluvial.common.typeinfo import Types

    columns = [c for c in context.columns if names is None or c.name in names]
    if names is not None:
        columns.sort(key=lambda c: names.index(c.name))
    return Types.ROW_NAMED([c.name for c in columns], [to_type_info(c.type) for c in columns])


def _insert_sql(context: ConnectorContext, options: JdbcTableOptions) -> str:
    columns = ", ".join(quote_identifier(n) for n in context.names)
    placeholders = ", ".join("?" for _ in context.names)
    return f"INSERT INTO {table_identifier(options.table_name)} ({columns}) VALUES ({placeholders})"


def _upsert_sql(context: ConnectorContext, options: JdbcTableOptions) -> str:
    """Flink's PostgreSQL dialect's upsert: INSERT ... ON CONFLICT (key) DO UPDATE SET the other columns."""
    keys = ", ".join(quote_identifier(k) for k in context.primary_key)
    others = [quote_identifier(n) for n in context.names if n not in context.primary_key]
    action = "DO UPDATE SET " + ", ".join(f"{c}=EXCLUDED.{c}" for c in others) if others else "DO NOTHING"
    return f"{_insert_sql(context, options)} ON CONFLICT ({keys}) {action}"


def _delete_sql(context: ConnectorContext, options: JdbcTableOptions) -> str:
    condition = " AND ".join(f"{quote_identifier(k)} = ?" for k in context.primary_key)
    return f"DELETE FROM {table_identifier(options.table_name)} WHERE {condition}"


class UpsertJdbcSink(JdbcSink):
    """The upsert-mode table sink: its statement is the upsert, `delete` the DELETE by key; its writer
    applies a buffer of changelog rows reduced to the last change per key."""

    def __init__(self, *args: Any, delete: JdbcSink, key_indexes: tuple[int, ...]) -> None:
        super().__init__(*args)
        self.delete = delete
        self.key_indexes = key_indexes

    @staticmethod
    def of(context: ConnectorContext, options: JdbcTableOptions) -> UpsertJdbcSink:
        execution = options.execution_options()
        delete = JdbcSink(
            _delete_sql(context, options),
            _type_info(context, list(context.primary_key)),
            options.connection,
            execution,
            DeliveryGuarantee.AT_LEAST_ONCE,
        )
        return UpsertJdbcSink(
            _upsert_sql(context, options),
            _type_info(context),
            options.connection,
            execution,
            DeliveryGuarantee.AT_LEAST_ONCE,
            delete=delete,
            key_indexes=tuple(context.names.index(k) for k in context.primary_key),
        )

    def create_writer(self, task_info: TaskInfo, restored_state: list[Any] | None = None) -> SinkWriter:
        return UpsertJdbcWriter(self, task_info)


class UpsertJdbcWriter(BatchingJdbcWriter):
    """BatchingJdbcWriter (flushes, retries, commits) whose batch is a changelog: the last change of each key
    wins (+I/+U: upsert; -D/-U: delete), written as upserts and deletes in one transaction."""

    def __init__(self, sink: UpsertJdbcSink, task_info: TaskInfo) -> None:
        super().__init__(sink, task_info)
        self._upsert = sink
        self._keys = sink.key_indexes

    def _write(self, records: list) -> None:
        last: dict[tuple, Row] = {}
        keys = self._keys
        for row in records:
            values = row._values
            last[tuple(values[i] for i in keys)] = row
        upserts = [row._values for row in last.values() if row._row_kind in _UPSERTS]
        deletes = [key for key, row in last.items() if row._row_kind not in _UPSERTS]
        if upserts:
            execute_statement(self._session, self._upsert, upserts)
        if deletes:
            execute_statement(self._session, self._upsert.delete, deletes)
