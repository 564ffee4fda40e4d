"""The PostgreSQL CDC source's reader (see `postgres`): the snapshot phase, then the slot's changes.

Numbered as it runs:
1. Start: check the tables (and, for ChangelogMode.ALL, their REPLICA IDENTITY FULL), create the publication if
   missing. A fresh job in the INITIAL mode creates the slot with `EXPORT_SNAPSHOT` and reads every table inside
   that snapshot (REPEATABLE READ) — exactly the rows as of the slot's consistent point — as +I rows, each table
   in key order; a restore mid-snapshot goes on after the recorded key in a new pass (`postgres_snapshot`).
2. Stream: `START_REPLICATION` from the position (`PostgresSplit`): transactions whose commit ends at or before
   `lsn` are not sent again; of the transaction `xact_lsn` the first `skip` changes were emitted already.
3. A checkpoint records that position; when it completes, its `lsn` is confirmed to the server (`flush_lsn`), which
   then may drop the WAL before it. Nothing is confirmed earlier, so a restore always finds what it needs.
4. A lost connection (a server restart) is reconnected within the connect timeout and resumes at the exact
   position of the last emitted change; a dropped slot fails the job, naming it.
"""

from __future__ import annotations

import logging
import select
import struct
import time
import uuid
from typing import Any

from fluvial.common.errors import NonRecoverableError, ResourceError
from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.connectors import pgoutput
from fluvial.datastream.connectors.pgoutput import UNCHANGED, Begin, Change, Commit, Relation, Truncate
from fluvial.datastream.connectors.postgres import (
    ChangelogMode,
    PostgresSource,
    PostgresSplit,
    SnapshotPhase,
    StartupMode,
)
from fluvial.datastream.connectors.postgres_client import (
    PostgresLoginError,
    connect,
    is_connection_lost,
    psycopg2_module,
)
from fluvial.datastream.connectors.postgres_snapshot import (
    ChangeFilter,
    SnapshotPass,
    TableSnapshot,
    filtered,
    ident,
    primary_keys,
)
from fluvial.datastream.connectors.source import SourceReader

logger = logging.getLogger(__name__)

_OID = struct.Struct("!I").unpack_from
_MAX_RECONNECTS = 5  # in a row without a successful read: the failure is not the connection's


class ChangeConversionError(NonRecoverableError):
    """A value of a change could not be turned into a Python value: names the table, column and LSN."""


class ReplicationSlotError(NonRecoverableError):
    """The replication slot a restore needs is gone, or belongs to someone else."""


class PostgresChangeReader(SourceReader[PostgresSplit]):
    def __init__(self, source: PostgresSource, attempt_number: int = 0) -> None:
        self._source = source
        # a later attempt of this job: a slot its position does not know was made by an earlier attempt after the
        # checkpoint it restarts from (or, without one, before the failure), so nothing of it was emitted for good
        self._later_attempt = attempt_number > 0
        self._split: PostgresSplit | None = None
        self._started = False
        self._replication: Any = None
        self._cursor: Any = None
        self._snapshot: TableSnapshot | None = None
        self._relations: dict[int, Relation] = {}
        self._known_shapes: dict[str, tuple] = {}
        # the position: see PostgresSplit
        self._lsn = 0
        self._xact_lsn = 0
        self._emitted_in_xact = 0
        self._skip_xact, self._skip = 0, 0  # from a restore: the transaction and how many changes to skip
        self._in_xact = False
        self._skipping_xact = False
        self._slot_owned = False
        self._pending_confirm: dict[int, int] = {}
        self._confirmed = 0
        self._last_feedback = 0.0
        self._upsert = source.changelog_mode is ChangelogMode.UPSERT
        self._keys: dict = {}
        self._table_index = {table: i for i, table in enumerate(source.tables)}
        self._passes: list[SnapshotPass] = []
        self._filter: ChangeFilter | None = None
        self._filtering = False
        self._temporary_pass = False
        self._reconnects = 0

    # -- the SourceReader contract --------------------------------------------------------------------------------

    def add_splits(self, splits: list[PostgresSplit]) -> None:
        for split in splits:
            self._split = split
            self._lsn = split.lsn
            self._skip_xact, self._skip = split.xact_lsn, split.skip
            self._slot_owned = split.slot_created
            self._passes = list(split.passes)
            if split.phase is SnapshotPhase.STREAM and len(self._passes) > 1:
                self._filter = ChangeFilter(self._passes)

    def poll(self, max_records: int) -> list | None:
        if self._split is None:
            return None
        if not self._started:
            self._start()
        if self._snapshot is not None:
            rows = self._snapshot.fetch(max_records)
            if rows:
                return rows
            self._snapshot.close()
            self._snapshot = None
            if self._temporary_pass:  # its connection held the pass's temporary slot: closing drops it
                self._replication.close()
                self._replication = self._cursor = None
            if len(self._passes) > 1:
                self._filter = ChangeFilter(self._passes)
            logger.info(
                "PostgreSQL CDC: snapshot of %s done; following slot %s from %s",
                list(self._source.tables),
                self._source.slot_name,
                pgoutput.format_lsn(self._lsn),
            )
            self._start_streaming()
            return []
        try:
            out = self._read_changes(max_records)
            self._reconnects = 0  # the connection works
            return out
        except psycopg2_module().Error as error:  # the stream runs no statements: any error is the connection's
            self._reconnects += 1
            if self._reconnects > _MAX_RECONNECTS:
                raise ResourceError(
                    f"PostgreSQL CDC: replication from {self._source.address.address} failed "
                    f"{self._reconnects} times in a row without a successful read in between, last with: "
                    f"{str(error).strip()}; check the server's log"
                ) from error
            self._reconnect(error)
            return []

    def snapshot_state(self) -> list[PostgresSplit]:
        if self._split is None:
            return []
        if not self._started:
            return [self._split]
        if self._snapshot is not None:
            return [
                PostgresSplit(
                    self._split.split_id,
                    SnapshotPhase.SNAPSHOT,
                    self._lsn,
                    slot_created=True,
                    passes=tuple(self._passes),
                    progress=self._snapshot.position,
                )
            ]
        xact, skip = (self._xact_lsn, self._emitted_in_xact) if self._in_xact else (0, 0)
        passes = tuple(self._passes) if self._filter is not None else ()
        return [PostgresSplit(self._split.split_id, SnapshotPhase.STREAM, self._lsn, xact, skip, True, passes)]

    def on_snapshot(self, checkpoint_id: int) -> None:
        if self._started and self._snapshot is None:
            self._pending_confirm[checkpoint_id] = self._lsn

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        done = [cid for cid in self._pending_confirm if cid <= checkpoint_id]
        if not done:
            return
        lsn = max(self._pending_confirm.pop(cid) for cid in done)
        if lsn > self._confirmed and self._cursor is not None:
            try:
                self._cursor.send_feedback(flush_lsn=lsn, force=True)
                self._confirmed = lsn
            except Exception as error:  # noqa: BLE001 - confirmed again with the next checkpoint after reconnecting
                logger.warning(
                    "PostgreSQL CDC: confirming LSN %s failed (%s); the next checkpoint confirms it",
                    pgoutput.format_lsn(lsn),
                    error,
                )

    def close(self) -> None:
        if self._snapshot is not None:
            self._snapshot.close()
        if self._replication is not None:
            try:
                self._replication.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass

    # -- starting ---------------------------------------------------------------------------------------------------

    def _connect(self, replication: bool = False) -> Any:
        return connect(
            self._source.address,
            self._source.connect_timeout_s,
            replication=replication,
            what=f"PostgreSQL CDC source (slot {self._source.slot_name!r})",
        )

    def _start(self) -> None:
        self._started = True
        source = self._source
        with self._connect() as meta:
            meta.autocommit = True
            with meta.cursor() as cursor:
                self._check_tables(cursor)
                self._keys = primary_keys(cursor, source.tables)
                self._ensure_publication(cursor)
                cursor.execute(
                    "SELECT confirmed_flush_lsn, plugin, database FROM pg_replication_slots WHERE slot_name = %s",
                    (source.slot_name,),
                )
                slot = cursor.fetchone()
        meta.close()
        snapshot_phase = self._split.phase is SnapshotPhase.SNAPSHOT
        if snapshot_phase:
            self._start_snapshot(slot)
        else:
            self._resume(slot)
            self._start_streaming()

    def _check_tables(self, cursor: Any) -> None:
        source = self._source
        cursor.execute(
            "SELECT n.nspname || '.' || c.relname, c.relreplident FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND n.nspname || '.' || c.relname "
            "= ANY(%s)",
            (list(source.tables),),
        )
        found = dict(cursor.fetchall())
        missing = [t for t in source.tables if t not in found]
        if missing:
            raise ResourceError(
                f"PostgreSQL CDC: tables {missing} do not exist in {source.address.address}; check "
                f"table_list (schema.table)"
            )
        if source.changelog_mode is ChangelogMode.ALL:
            partial = [t for t in source.tables if found[t] != "f"]
            if partial:
                raise ResourceError(
                    f"PostgreSQL CDC: tables {partial} do not have REPLICA IDENTITY FULL, so PostgreSQL does not send "
                    f"their old values and -U/-D rows cannot be whole; run ALTER TABLE ... REPLICA IDENTITY FULL for "
                    f"each, or use .changelog_mode('upsert') (+U and -D by key)"
                )

    def _ensure_publication(self, cursor: Any) -> None:
        source = self._source
        cursor.execute(
            "SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = %s",
            (source.publication_name,),
        )
        published = {name for (name,) in cursor.fetchall()}
        cursor.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (source.publication_name,))
        if cursor.fetchone() is None:
            cursor.execute(
                f"CREATE PUBLICATION {source.publication_name} FOR TABLE " + ", ".join(ident(t) for t in source.tables)
            )
            logger.info("PostgreSQL CDC: created publication %s for %s", source.publication_name, list(source.tables))
            return
        missing = [t for t in source.tables if t not in published]
        if missing:
            raise ResourceError(
                f"PostgreSQL CDC: publication {source.publication_name!r} does not publish {missing}; "
                f"ALTER PUBLICATION {source.publication_name} ADD TABLE ... or choose another "
                f"publication_name"
            )

    def _start_snapshot(self, slot: Any) -> None:
        source = self._source
        if slot is not None and not self._slot_owned and self._later_attempt:
            logger.info(
                "PostgreSQL CDC: slot %s was created by an earlier attempt after this attempt's starting "
                "point; taking the snapshot again with a new slot",
                source.slot_name,
            )
            self._passes = []
            self._slot_owned = True  # dropped below
        elif slot is not None and not self._slot_owned:
            raise ReplicationSlotError(
                f"PostgreSQL CDC: replication slot {source.slot_name!r} already exists on "
                f"{source.address.address}: another job reads it, or an earlier run left it without a "
                f"checkpoint to restore from. Restore that job from its checkpoint, or drop the slot "
                f"(SELECT pg_drop_replication_slot('{source.slot_name}')) to take a new snapshot"
            )
        resumable = all(self._keys.get(table) is not None for table in source.tables)
        self._replication = self._connect(replication=True)
        self._cursor = self._replication.cursor()
        if self._slot_owned and self._passes and resumable:
            if slot is None:
                raise self._slot_gone()
            # a restore mid-snapshot: a new pass from the checkpoint's position, in a snapshot of its own
            temporary = f"{source.slot_name[:40]}_pass_{uuid.uuid4().hex[:8]}"
            self._cursor.execute(f"CREATE_REPLICATION_SLOT {temporary} TEMPORARY LOGICAL pgoutput EXPORT_SNAPSHOT")
            _, point, snapshot_name, _ = self._cursor.fetchone()
            start_table, start_key = self._split.progress
            self._passes.append(SnapshotPass(start_table, start_key, pgoutput.parse_lsn(point)))
            self._temporary_pass = True
            logger.info(
                "PostgreSQL CDC: resuming the snapshot at %s after key %s (pass %d at %s)",
                source.tables[start_table],
                start_key,
                len(self._passes),
                point,
            )
        else:
            if slot is not None and not resumable:  # a restore mid-snapshot that cannot resume it
                logger.warning(
                    "PostgreSQL CDC: the job failed during the initial snapshot and a table without a "
                    "primary key cannot resume it; dropping slot %s and taking the snapshot again (its "
                    "rows are emitted again)",
                    source.slot_name,
                )
            if slot is not None:
                self._cursor.drop_replication_slot(source.slot_name)
            self._cursor.execute(f"CREATE_REPLICATION_SLOT {source.slot_name} LOGICAL pgoutput EXPORT_SNAPSHOT")
            _, point, snapshot_name, _ = self._cursor.fetchone()
            self._passes = [SnapshotPass(0, None, pgoutput.parse_lsn(point))]
            start_table, start_key = 0, None
            logger.info(
                "PostgreSQL CDC: created slot %s at %s; reading the snapshot of %s",
                source.slot_name,
                point,
                list(source.tables),
            )
        self._slot_owned = True
        self._lsn = self._passes[0].lsn
        self._snapshot = TableSnapshot(
            self._connect(), snapshot_name, source.tables, self._keys, start_table, start_key
        )

    def _slot_gone(self) -> ReplicationSlotError:
        source = self._source
        return ReplicationSlotError(
            f"PostgreSQL CDC: replication slot {source.slot_name!r} on {source.address.address} no longer exists, "
            f"so the changes after LSN {pgoutput.format_lsn(self._lsn)} that this checkpoint needs are gone; "
            f"the source will not silently start from now. Start the job without its checkpoint to take a new "
            f"snapshot"
        )

    def _resume(self, slot: Any) -> None:
        source = self._source
        if slot is None:
            if not self._slot_owned and source.startup_options.startup_mode is StartupMode.LATEST_OFFSET:
                replication = self._connect(replication=True)
                with replication.cursor() as cursor:
                    cursor.execute(f"CREATE_REPLICATION_SLOT {source.slot_name} LOGICAL pgoutput NOEXPORT_SNAPSHOT")
                    self._lsn = pgoutput.parse_lsn(cursor.fetchone()[1])
                replication.close()
                logger.info("PostgreSQL CDC: created slot %s at %s", source.slot_name, pgoutput.format_lsn(self._lsn))
                self._slot_owned = True
                return
            raise self._slot_gone()
        confirmed, plugin, database = slot
        if plugin != "pgoutput" or database != source.address.database:
            raise ReplicationSlotError(
                f"PostgreSQL CDC: replication slot {source.slot_name!r} decodes {database!r} "
                f"with {plugin!r}; the source needs a pgoutput slot of "
                f"{source.address.database!r}: choose another slot_name"
            )
        confirmed_lsn = pgoutput.parse_lsn(confirmed) if confirmed else 0
        self._slot_owned = True
        if self._lsn == 0:
            self._lsn = confirmed_lsn  # LATEST_OFFSET on an existing slot: go on from where it was confirmed
        elif confirmed_lsn > self._lsn:
            logger.warning(
                "PostgreSQL CDC: slot %s was confirmed up to %s, past this checkpoint's %s (by a later "
                "checkpoint, or while idle); the server sends changes after %s only",
                source.slot_name,
                confirmed,
                pgoutput.format_lsn(self._lsn),
                confirmed,
            )
        self._confirmed = confirmed_lsn

    def _start_streaming(self) -> None:
        source = self._source
        if self._replication is None or self._replication.closed:
            self._replication = self._connect(replication=True)
            self._cursor = self._replication.cursor()
        self._cursor.start_replication(
            slot_name=source.slot_name,
            decode=False,
            start_lsn=self._lsn,
            options={"proto_version": "1", "publication_names": source.publication_name},
            status_interval=source.status_interval_s,
        )
        self._relations.clear()
        self._in_xact = False

    def _reconnect(self, error: BaseException) -> None:
        source = self._source
        logger.warning(
            "PostgreSQL CDC: lost the replication connection to %s (%s); reconnecting for up to %.0f s",
            source.address.address,
            str(error).strip().splitlines()[0] if str(error).strip() else error,
            source.connect_timeout_s,
        )
        self.close()
        self._replication = self._cursor = None
        if self._in_xact:  # resume inside the transaction: skip what was emitted of it
            self._skip_xact, self._skip = self._xact_lsn, self._emitted_in_xact
        deadline = time.monotonic() + source.connect_timeout_s
        while True:
            try:
                with self._connect() as meta, meta.cursor() as cursor:
                    cursor.execute(
                        "SELECT confirmed_flush_lsn, plugin, database FROM pg_replication_slots WHERE slot_name = %s",
                        (source.slot_name,),
                    )
                    slot = cursor.fetchone()
                meta.close()
                if slot is None:
                    self._resume(None)
                self._start_streaming()
                return
            except ResourceError as failure:
                if isinstance(failure, (PostgresLoginError, ReplicationSlotError)) or time.monotonic() > deadline:
                    raise
            except Exception as failure:  # noqa: BLE001 - the server may still be starting
                if not is_connection_lost(failure) or time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    # -- streaming --------------------------------------------------------------------------------------------------

    def _read_changes(self, max_records: int) -> list:
        out: list = []
        append = out.append
        cursor = self._cursor
        read = cursor.read_message
        decode = pgoutput.decode
        insert_values = pgoutput.insert_values
        relations = self._relations
        new_row = object.__new__
        set_field = object.__setattr__
        insert = RowKind.INSERT
        slow = self._skipping_xact or self._skip or self._filtering  # skipped or filtered: the general way
        emitted = 0  # inserts of the hot path, added to _emitted_in_xact before anything else reads it
        remaining = max_records
        while remaining > 0:
            message = read()
            if message is None:
                if not out:
                    self._idle(cursor)
                break
            data = message.payload
            if data[0] == 73 and not slow:  # an insert to emit: the hot path
                relation = relations[_OID(data, 1)[0]]
                try:
                    values = insert_values(data, relation.casters)
                except Exception:  # noqa: BLE001 - the general path names what failed
                    self._emitted_in_xact += emitted
                    emitted = 0
                    self._emit(decode(data), out, message.data_start)
                    continue
                emitted += 1
                remaining -= 1
                row = new_row(Row)
                set_field(row, "_values", values)
                set_field(row, "_fields", relation.columns)
                set_field(row, "_row_kind", insert)
                append(row)
                continue
            self._emitted_in_xact += emitted
            emitted = 0
            self._general(decode(data), out, message.data_start)
            slow = self._skipping_xact or self._skip or self._filtering
            remaining = max_records - len(out)
        self._emitted_in_xact += emitted
        return out

    def _general(self, event: Any, out: list, lsn: int) -> None:
        """Every message but an insert on the hot path: transaction bounds, relations, skipped changes."""
        kind = type(event)
        if kind is Change:
            if self._skipping_xact:
                return
            if self._skip:
                self._skip -= 1
                self._emitted_in_xact += 1
                return
            if self._filtering:
                self._emitted_in_xact += 1
                out.extend(self._replayed(event, lsn))
                return
            self._emit(event, out, lsn)
        elif kind is Begin:
            self._begin(event)
        elif kind is Commit:
            if not self._skipping_xact:
                self._lsn = max(self._lsn, event.end_lsn)
            self._in_xact = self._skipping_xact = False
            self._skip = 0
        elif kind is Relation:
            self._relation(event, lsn)
        elif kind is Truncate:
            names = [self._relations[oid].qualified_name for oid in event.relation_oids if oid in self._relations]
            logger.warning(
                "PostgreSQL CDC: TRUNCATE of %s at %s is not emitted: a changelog has no row for it",
                names,
                pgoutput.format_lsn(lsn),
            )

    def _begin(self, event: Begin) -> None:
        self._in_xact = True
        self._xact_lsn = event.final_lsn
        self._emitted_in_xact = 0
        # a transaction whose commit lies before the position was emitted whole already
        self._skipping_xact = event.final_lsn < self._lsn
        if self._filter is not None and event.final_lsn >= self._filter.until:
            self._filter = None  # past every snapshot pass: all changes from here on are new downstream
            self._passes = []
        self._filtering = self._filter is not None
        if self._skip and event.final_lsn != self._skip_xact:
            self._skip = 0  # the transaction the checkpoint stood in is not the first one sent: nothing to skip
        self._skip_xact = 0

    def _idle(self, cursor: Any) -> None:
        """Nothing to read: wait briefly for the socket, keep the status updates flowing."""
        now = time.monotonic()
        if now - self._last_feedback > self._source.status_interval_s:
            cursor.send_feedback()
            self._last_feedback = now
        select.select([cursor.connection], [], [], 0.01)

    def _relation(self, relation: Relation, lsn: int) -> None:
        psycopg2 = psycopg2_module()
        string_types = psycopg2.extensions.string_types
        relation.casters = [string_types.get(type_oid) for type_oid in relation.type_oids]
        key = self._keys.get(relation.qualified_name)
        if key is not None and all(column in relation.columns for column in key.columns):
            relation.key_indexes = [relation.columns.index(column) for column in key.columns]
        self._relations[relation.oid] = relation
        shape = tuple(zip(relation.columns, relation.type_oids))
        before = self._known_shapes.get(relation.qualified_name)
        self._known_shapes[relation.qualified_name] = shape
        if before is not None and before != shape:
            old, new = dict(before), dict(shape)
            message = (
                f"PostgreSQL CDC: the schema of {relation.qualified_name} changed at LSN "
                f"{pgoutput.format_lsn(lsn)}: added {[c for c in new if c not in old]}, dropped "
                f"{[c for c in old if c not in new]}, retyped "
                f"{[c for c in new if c in old and old[c] != new[c]]}; rows from here on have columns "
                f"{relation.columns}"
            )
            if self._source.fail_on_schema_change:
                raise NonRecoverableError(message + " (fail_on_schema_change is set)")
            logger.warning(message)

    def _emit(self, change: Change, out: list, lsn: int) -> None:
        self._emitted_in_xact += 1
        relation = self._relations[change.relation_oid]
        kind = change.kind
        if kind == "I":
            out.append(self._row(relation, change.new, RowKind.INSERT, lsn))
        elif kind == "U":
            new = change.new
            if UNCHANGED in new:
                new = self._fill_unchanged(relation, change, lsn)
            if not self._upsert:
                out.append(self._row(relation, change.old, RowKind.UPDATE_BEFORE, lsn))
            out.append(self._row(relation, new, RowKind.UPDATE_AFTER, lsn))
        else:
            out.append(self._row(relation, change.old, RowKind.DELETE, lsn))

    def _replayed(self, change: Change, lsn: int) -> list:
        """A change while the stream replays the snapshot passes' span: only the effects downstream lacks."""
        relation = self._relations[change.relation_oid]
        table = self._table_index.get(relation.qualified_name)
        if table is None or not relation.key_indexes:
            out: list = []
            self._emit(change, out, lsn)
            self._emitted_in_xact -= 1  # counted by the caller already
            return out

        def key_of(texts: list | None) -> tuple | None:
            if texts is None:
                return None
            values = self._row(
                relation,
                [texts[i] for i in relation.key_indexes],
                RowKind.INSERT,
                lsn,
                [relation.casters[i] for i in relation.key_indexes],
                [relation.columns[i] for i in relation.key_indexes],
            )
            return tuple(values)

        new_key = key_of(change.new)
        old_key = key_of(change.old) if change.old is not None else new_key if change.kind == "U" else None
        new = change.new
        if new is not None and UNCHANGED in new:
            new = self._fill_unchanged(relation, change, lsn)
        old = change.old if change.old is not None else new
        return filtered(
            change.kind,
            lambda kind: self._row(relation, old, kind, lsn),
            lambda kind: self._row(relation, new, kind, lsn),
            old_key,
            new_key,
            table,
            self._xact_lsn,
            self._filter,
            self._upsert,
        )

    def _fill_unchanged(self, relation: Relation, change: Change, lsn: int) -> list:
        if change.old is None or change.old_is_key_only:
            column = relation.columns[change.new.index(UNCHANGED)]
            raise ChangeConversionError(
                f"PostgreSQL CDC: an update of {relation.qualified_name} at LSN {pgoutput.format_lsn(lsn)} left the "
                f"large (TOASTed) column {column!r} unchanged, and PostgreSQL sends its value only with REPLICA "
                f"IDENTITY FULL; run ALTER TABLE {relation.qualified_name} REPLICA IDENTITY FULL"
            )
        return [o if n is UNCHANGED else n for o, n in zip(change.old, change.new)]

    def _row(
        self,
        relation: Relation,
        texts: list,
        kind: RowKind,
        lsn: int,
        casters: list | None = None,
        columns: list | None = None,
    ) -> Any:
        values = []
        append = values.append
        columns = relation.columns if columns is None else columns
        for text, caster, column in zip(texts, relation.casters if casters is None else casters, columns):
            if text is None or caster is None:
                append(text)
                continue
            try:
                append(caster(text, None))
            except Exception as error:  # noqa: BLE001 - named with its table, column and position
                raise ChangeConversionError(
                    f"PostgreSQL CDC: cannot convert column {column!r} of {relation.qualified_name} (value "
                    f"{text[:80]!r}) at LSN {pgoutput.format_lsn(lsn)}: {error}; change the column's type or the "
                    f"value"
                ) from None
        return _create_row(columns, values, kind)
