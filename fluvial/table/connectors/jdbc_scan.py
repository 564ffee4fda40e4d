"""The JDBC table's scan source: a bounded read of a PostgreSQL table, split into ranges of a numeric column.

Splits (Flink's JdbcNumericBetweenParametersProvider): `scan.partition.num` contiguous integer ranges from
`scan.partition.lower-bound` to `scan.partition.upper-bound`, sizes differing by at most one, each read as
`WHERE column BETWEEN lo AND hi`; as in Flink, the bounds also filter: rows outside them (and rows whose column
is NULL) are not read. Without partition options the table is one split. Split i goes to subtask
i % parallelism.

Reading (each split, in order, on the task thread):
1. The first split opens the reader's connection and checks the declared columns against the table's catalog
   entry (`pg_attribute`): a missing table, a missing column or a type Flink does not map to the declared one
   fails the job naming it and the type to declare.
2. A split's query runs in a read-only transaction through a server-side cursor; each round trip fetches
   `scan.fetch-size` rows (0: 1000), so neither the reader nor a poll holds a whole table.
3. Its position is the number of rows emitted. A checkpoint records the remaining splits with it, and a restored
   reader re-runs the split's query with `OFFSET n`. The query is ordered by the DDL's PRIMARY KEY when it
   declares one, which makes the resumed read exact on an unchanged table; without one the order is
   PostgreSQL's (Flink's JDBC scan is not resumable at all: it reads the table again).
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from fluvial.common.errors import NonRecoverableError
from fluvial.common.row import RowKind, _create_row
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.postgres_client import PostgresAddress, connect
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader
from fluvial.table.types import DataType
from fluvial.table.values import float32

__all__ = [
    "JdbcScanSource",
    "JdbcScanSplit",
    "ScanPartition",
    "check_columns",
    "close_quietly",
    "converted",
    "partition_ranges",
]

logger = logging.getLogger(__name__)

_DEFAULT_FETCH_SIZE = 1000

# PostgreSQL type (pg_type.typname) → the Flink types a column of it may be declared as; the first is Flink's
# mapping (its PostgreSQL dialect), named in the error when the declaration fits none.
_MAPPING: dict[str, tuple[str, ...]] = {
    "int2": ("SMALLINT", "INT", "BIGINT", "DECIMAL"),
    "int4": ("INT", "BIGINT", "DECIMAL"),
    "int8": ("BIGINT", "DECIMAL"),
    "float4": ("FLOAT", "DOUBLE"),
    "float8": ("DOUBLE", "FLOAT"),
    "numeric": ("DECIMAL", "DOUBLE", "FLOAT"),
    "bool": ("BOOLEAN",),
    "date": ("DATE",),
    "time": ("TIME",),
    "timestamp": ("TIMESTAMP",),
    "timestamptz": ("TIMESTAMP_LTZ",),
    "text": ("VARCHAR", "CHAR"),
    "varchar": ("VARCHAR", "CHAR"),
    "bpchar": ("VARCHAR", "CHAR"),
    "char": ("VARCHAR", "CHAR"),
    "name": ("VARCHAR", "CHAR"),
    "bytea": ("VARBINARY", "BINARY"),
}
_SHOWN = {"VARCHAR": "STRING", "VARBINARY": "BYTES", "DECIMAL": "DECIMAL(p, s)"}


class JdbcScanError(NonRecoverableError):
    """The table does not fit its declaration (missing, a column missing, a type that does not map)."""


@dataclass(frozen=True)
class ScanPartition:
    """`scan.partition.*`: the column (its SQL identifier) and the ranges' bounds."""

    column: str
    num: int
    lower: int
    upper: int


def partition_ranges(partition: ScanPartition) -> list[tuple[int, int]]:
    """Contiguous inclusive ranges covering [lower, upper]: `num` of them (fewer when there are fewer values),
    the first ones one value longer when the values do not divide evenly."""
    count = partition.upper - partition.lower + 1
    num = min(partition.num, count)
    size, longer = divmod(count, num)
    ranges = []
    start = partition.lower
    for i in range(num):
        end = start + size - 1 + (1 if i < longer else 0)
        ranges.append((start, end))
        start = end + 1
    return ranges


@dataclass(frozen=True)
class JdbcScanSplit:
    """One query's rows: `bounds` is the BETWEEN range (None: the whole table); `offset` the rows already
    emitted (a restored reader skips them)."""

    split_id: str
    bounds: tuple[int, int] | None = None
    offset: int = 0


@dataclass(frozen=True)
class ScanColumn:
    """A declared column: its Flink name and type, and its SQL identifier and name in the PostgreSQL table."""

    name: str
    type: DataType
    identifier: str
    pg_name: str


@dataclass(frozen=True)
class JdbcScanSource(Source[JdbcScanSplit]):
    """A picklable description of the scan (module docstring); readers are built on the task thread."""

    address: PostgresAddress
    connect_timeout_s: float
    table: str  # the table's SQL text (identifiers quoted as needed)
    table_name: str  # as the user gave it in 'table-name'
    columns: tuple[ScanColumn, ...]
    partition: ScanPartition | None = None
    fetch_size: int = 0
    order_by: tuple[str, ...] = ()  # SQL identifiers of the declared primary key

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_splits(self, parallelism: int) -> list[JdbcScanSplit]:
        if self.partition is None:
            return [JdbcScanSplit("0")]
        return [JdbcScanSplit(str(i), bounds) for i, bounds in enumerate(partition_ranges(self.partition))]

    def create_reader(self, task_info: TaskInfo) -> SourceReader[JdbcScanSplit]:
        return JdbcScanReader(self)

    def default_name(self) -> str:
        return f"JdbcTableSource({self.table_name})"

    def select_list(self, casts: Sequence[bool]) -> str:
        return ", ".join(f"{c.identifier}::text" if cast else c.identifier for c, cast in zip(self.columns, casts))

    def query(self, split: JdbcScanSplit, casts: Sequence[bool]) -> tuple[str, tuple]:
        """The split's SELECT and its parameters; `casts[i]`: read column i as text."""
        sql = f"SELECT {self.select_list(casts)} FROM {self.table}"
        parameters: tuple = ()
        if split.bounds is not None and self.partition is not None:
            sql += f" WHERE {self.partition.column} BETWEEN %s AND %s"
            parameters = split.bounds
        if self.order_by:
            sql += " ORDER BY " + ", ".join(self.order_by)
        if split.offset:
            sql += " OFFSET %s"
            parameters = (*parameters, split.offset)
        return sql, parameters


class JdbcScanReader(SourceReader[JdbcScanSplit]):
    """Reads its splits one after another (module docstring); `poll` makes at most one round trip."""

    def __init__(self, source: JdbcScanSource) -> None:
        self._source = source
        self._fetch_size = source.fetch_size or _DEFAULT_FETCH_SIZE
        self._pending: list[JdbcScanSplit] = []
        self._current: JdbcScanSplit | None = None
        self._emitted = 0
        self._connection: Any = None
        self._cursor: Any = None
        self._buffer: list = []
        self._names = [c.name for c in source.columns]
        self._casts: list[bool] | None = None
        self._converters: Converters = []

    def add_splits(self, splits: list[JdbcScanSplit]) -> None:
        self._pending.extend(splits)

    def poll(self, max_records: int) -> Sequence | None:
        while not self._buffer:
            if self._cursor is None and not self._open_next():
                return None
            batch = self._cursor.fetchmany(self._fetch_size)
            if not batch:
                self._finish_split()
                continue
            self._buffer = batch
        taken, self._buffer = self._buffer[:max_records], self._buffer[max_records:]
        self._emitted += len(taken)
        return [self._row(values) for values in taken]

    def _row(self, values: tuple) -> Any:
        return _create_row(self._names, converted(values, self._converters), RowKind.INSERT)

    def current_split_id(self) -> Any:
        return self._current.split_id if self._current is not None else None

    def snapshot_state(self) -> list[JdbcScanSplit]:
        current = [replace(self._current, offset=self._emitted)] if self._current is not None else []
        return current + list(self._pending)

    def _open_next(self) -> bool:
        if not self._pending:
            return False
        split = self._pending.pop(0)
        if self._connection is None:
            self._connection = connect(self._source.address, self._source.connect_timeout_s, what="JDBC source")
            self._connection.set_session(readonly=True)
        if self._casts is None:
            self._casts, self._converters = check_columns(self._connection, self._source)
        sql, parameters = self._source.query(split, self._casts)
        self._cursor = self._connection.cursor(name=f"fluvial_scan_{split.split_id}")
        self._cursor.execute(sql, parameters)
        self._current, self._emitted = split, split.offset
        logger.debug(
            "JDBC source: reading split %s of %s from row %d", split.split_id, self._source.table, split.offset
        )
        return True

    def _finish_split(self) -> None:
        self._cursor.close()
        self._cursor = None
        self._connection.commit()
        self._current = None

    def close(self) -> None:
        close_quietly(self._connection)
        self._connection = None


def close_quietly(connection: Any) -> None:
    """Close a connection that may be broken (or None)."""
    if connection is not None:
        try:
            connection.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass


Converters = list[tuple[int, Callable[[Any], Any]]]


def converted(values: Sequence, converters: Converters) -> list:
    """A fetched row's values as the declared types' Python values."""
    values = list(values)
    for index, convert in converters:
        value = values[index]
        if value is not None:
            values[index] = convert(value)
    return values


def check_columns(connection: Any, source: JdbcScanSource) -> tuple[list[bool], Converters]:
    """Which columns to read as text, and the converters of the rest, from the table's catalog entry."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)::oid", (source.table,))
        (oid,) = cursor.fetchone()
        if oid is None:
            raise JdbcScanError(
                f"JDBC source: table '{source.table_name}' does not exist at {source.address.address}; check "
                f"'table-name' (a schema other than the search path's is written 'schema.table')"
            )
        cursor.execute(
            "SELECT a.attname, t.typname, format_type(a.atttypid, a.atttypmod), t.typcategory, e.typname "
            "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_type e ON e.oid = t.typelem "
            "WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped",
            (oid,),
        )
        catalog = {name: (typname, shown, category, element) for name, typname, shown, category, element in cursor}
    connection.commit()
    casts: list[bool] = []
    converters: Converters = []
    for index, column in enumerate(source.columns):
        found = catalog.get(column.pg_name)
        if found is None:
            raise JdbcScanError(
                f"JDBC source: table '{source.table_name}' has no column '{column.pg_name}' (declared as "
                f"'{column.name}'); its columns are {sorted(catalog)}"
            )
        typname, shown, category, element = found
        cast = column.type.is_string() and category != "S"
        casts.append(cast)
        if cast:
            continue
        converter = _converter(column, typname, shown, category, element, source.table_name)
        if converter is not None:
            converters.append((index, converter))
    return casts, converters


def _converter(
    column: ScanColumn, typname: str, shown: str, category: str, element: str | None, table: str
) -> Callable[[Any], Any] | None:
    declared = column.type
    if category == "A" and element is not None and declared.name == "ARRAY" and declared.element_type is not None:
        inner = _converter(
            ScanColumn(column.name, declared.element_type, column.identifier, column.pg_name),
            element,
            element,
            "",
            None,
            table,
        )
        if inner is None:
            return None
        return lambda values: [None if v is None else inner(v) for v in values]
    allowed = _MAPPING.get(typname, ())
    if declared.name not in allowed:
        mapped = _SHOWN.get(allowed[0], allowed[0]) if allowed else None
        if category == "A" and element in _MAPPING:
            mapped = f"ARRAY<{_SHOWN.get(_MAPPING[element][0], _MAPPING[element][0])}>"
        hint = f"declare it as {mapped} (or STRING)" if mapped else "declare it as STRING"
        raise JdbcScanError(
            f"JDBC source: column '{column.pg_name}' of '{table}' is PostgreSQL {shown}, which does not map to "
            f"the declared {declared.summary()}; {hint}"
        )
    return _VALUE_CONVERTERS.get((typname, declared.name))


def _bytes(value: Any) -> bytes:
    return bytes(value)


def _utc(value: _dt.datetime) -> _dt.datetime:
    return value.astimezone(_dt.UTC)


def _to_float(value: Any) -> float:
    return float32(float(value))


# (PostgreSQL type, declared Flink type) → what turns psycopg2's value into the Flink type's Python value
_VALUE_CONVERTERS: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("bytea", "VARBINARY"): _bytes,
    ("bytea", "BINARY"): _bytes,
    ("timestamptz", "TIMESTAMP_LTZ"): _utc,
    ("float4", "FLOAT"): float32,
    ("float8", "FLOAT"): float32,
    ("numeric", "FLOAT"): _to_float,
    ("numeric", "DOUBLE"): float,
    ("int2", "DECIMAL"): Decimal,
    ("int4", "DECIMAL"): Decimal,
    ("int8", "DECIMAL"): Decimal,
}
