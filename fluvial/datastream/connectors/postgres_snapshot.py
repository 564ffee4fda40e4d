"""The CDC source's snapshot phase, resumable after a failure without emitting a row twice (the idea of Netflix's
DBLog and Flink CDC's incremental snapshots, in its simplest form).

A snapshot pass reads the tables, in order, each in primary-key order, inside a snapshot exported by a
replication slot at its consistent point P (an LSN): the rows as of P. The position reached — the table and the
last key emitted of it — is in every checkpoint. A failure mid-snapshot loses the exported snapshot (it lives as
long as its connection), so the restored source starts a new pass at the checkpoint's position with a new
snapshot (a temporary slot's, at P2 > P) and reads the rest. The rows downstream now come from several passes,
each at its own point. Streaming then starts at the first pass's point (the job's slot was never confirmed
further), and a change of a transaction committed at F touches a key whose row came from pass p; downstream
lacks the change exactly when F >= P_p (pass p's snapshot did not include it). `ChangeFilter` decides that for
each effect of a change (a row leaving one key, appearing at another) until the stream passed the last pass's
point; after that every change is emitted.

Keys compare in Python as PostgreSQL orders them here: the snapshot orders collatable key columns by the "C"
collation (code point order, which is Python's order of str), numbers, dates, times and UUIDs by value.
Tables without a primary key cannot be resumed; with one of them a failure mid-snapshot takes the whole
snapshot again (documented: at least once for those rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluvial.common.row import RowKind, _create_row
from fluvial.datastream.connectors.postgres_client import psycopg2_module, quote_literal


@dataclass(frozen=True)
class TableKey:
    """A table's primary key columns, and which of them sort by a collation."""

    table: str
    columns: tuple[str, ...]
    collatable: tuple[bool, ...]


@dataclass(frozen=True)
class SnapshotPass:
    """One snapshot pass: the rows after (`start_table`, `start_key`) — None: from that table's first row — as
    of the LSN `lsn`."""

    start_table: int
    start_key: tuple | None
    lsn: int


def ident(qualified: str) -> str:
    schema, name = qualified.split(".")
    return f'"{schema}"."{name}"'


def primary_keys(cursor: Any, tables: tuple[str, ...]) -> dict[str, TableKey | None]:
    cursor.execute(
        "SELECT n.nspname || '.' || c.relname, a.attname, a.attcollation <> 0 "
        "FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position) ON true "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum "
        "WHERE i.indisprimary AND n.nspname || '.' || c.relname = ANY(%s) ORDER BY 1, k.position",
        (list(tables),),
    )
    found: dict[str, list] = {}
    for table, column, collatable in cursor.fetchall():
        found.setdefault(table, []).append((column, collatable))
    return {
        table: TableKey(table, tuple(c for c, _ in found[table]), tuple(k for _, k in found[table]))
        if table in found
        else None
        for table in tables
    }


def _after(table: int, key: tuple, start_table: int, start_key: tuple | None) -> bool:
    return table > start_table or (table == start_table and (start_key is None or key > start_key))


class ChangeFilter:
    """Which effects of a change downstream lacks while the stream replays what snapshot passes covered."""

    def __init__(self, passes: list[SnapshotPass]) -> None:
        self.passes = passes
        self.until = max(p.lsn for p in passes)

    def lacks(self, table: int, key: tuple, final_lsn: int) -> bool:
        """Whether the change of a transaction committed at `final_lsn` to row `key` of table `table` is missing
        downstream: its row came from the last pass that starts before it, whose snapshot predates the change."""
        lsn = self.passes[0].lsn
        for snapshot_pass in self.passes[1:]:
            if not _after(table, key, snapshot_pass.start_table, snapshot_pass.start_key):
                break
            lsn = snapshot_pass.lsn
        return final_lsn >= lsn


def filtered(
    kind: str,
    before: Any,
    after: Any,
    old_key: tuple | None,
    new_key: tuple | None,
    table: int,
    final_lsn: int,
    change_filter: ChangeFilter,
    upsert: bool,
) -> list:
    """The rows to emit for a change during the replay: `before`/`after` are the change's old and new rows
    (built lazily by the callers: callables), emitted only for the keys downstream lacks the change at."""
    leaves = old_key is not None and change_filter.lacks(table, old_key, final_lsn)
    appears = new_key is not None and change_filter.lacks(table, new_key, final_lsn)
    if kind == "I":
        return [after(RowKind.INSERT)] if appears else []
    if kind == "D":
        return [before(RowKind.DELETE)] if leaves else []
    if leaves and appears:
        return [after(RowKind.UPDATE_AFTER)] if upsert else [before(RowKind.UPDATE_BEFORE), after(RowKind.UPDATE_AFTER)]
    if leaves:
        return [before(RowKind.DELETE)]
    if appears:
        return [after(RowKind.INSERT)]
    return []


class TableSnapshot:
    """Reads the tables from a position on, in an exported snapshot, each in key order, as +I rows;
    `position` is (table index, last key emitted of it)."""

    def __init__(
        self,
        connection: Any,
        snapshot_name: str,
        tables: tuple[str, ...],
        keys: dict[str, TableKey | None],
        start_table: int = 0,
        start_key: tuple | None = None,
    ) -> None:
        psycopg2 = psycopg2_module()
        self._connection = connection
        connection.set_session(isolation_level=psycopg2.extensions.ISOLATION_LEVEL_REPEATABLE_READ, readonly=True)
        with connection.cursor() as cursor:
            cursor.execute(f"SET TRANSACTION SNAPSHOT {quote_literal(snapshot_name)}")
        self._tables = tables
        self._keys = keys
        self.position: tuple[int, tuple | None] = (start_table, start_key)
        self._next_table = start_table
        self._cursor: Any = None
        self._fields: list[str] = []
        self._key_indexes: list[int] = []
        self._read = 0

    def _open_next(self) -> bool:
        if self._next_table >= len(self._tables):
            return False
        index = self._next_table
        self._next_table += 1
        table = self._tables[index]
        key = self._keys.get(table)
        start_key = self.position[1] if self.position[0] == index else None
        self.position = (index, start_key)
        query, parameters = f"SELECT * FROM {ident(table)}", None
        if key is not None:
            columns = [
                f'"{c}"' + (' COLLATE "C"' if collate else "") for c, collate in zip(key.columns, key.collatable)
            ]
            if start_key is not None:
                query += f" WHERE ({', '.join(columns)}) > ({', '.join(['%s'] * len(columns))})"
                parameters = start_key
            query += " ORDER BY " + ", ".join(columns)
        self._cursor = self._connection.cursor(name=f"fluvial_snapshot_{index}")
        self._cursor.itersize = 2000
        self._cursor.execute(query, parameters)
        self._read = 0
        self._key_indexes = []
        return True

    def fetch(self, max_records: int) -> list:
        while True:
            if self._cursor is None and not self._open_next():
                return []
            table = self._tables[self.position[0]]
            try:
                batch = self._cursor.fetchmany(max_records)
            except ValueError as error:
                from fluvial.datastream.connectors.postgres_reader import ChangeConversionError

                raise ChangeConversionError(
                    f"PostgreSQL CDC: cannot convert a row of {table} in the initial snapshot (after {self._read} "
                    f"rows): {error}; change the column's type or the value"
                ) from None
            if batch:
                if not self._key_indexes:
                    self._fields = [column.name for column in self._cursor.description]
                    key = self._keys.get(table)
                    self._key_indexes = [self._fields.index(c) for c in key.columns] if key is not None else []
                self._read += len(batch)
                if self._key_indexes:
                    last = batch[-1]
                    self.position = (self.position[0], tuple(last[i] for i in self._key_indexes))
                fields, insert = self._fields, RowKind.INSERT
                return [_create_row(fields, values, insert) for values in batch]
            self._cursor.close()
            self._cursor = None
            self._fields = []
            self._key_indexes = []

    def close(self) -> None:
        try:
            self._connection.rollback()
            self._connection.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass
