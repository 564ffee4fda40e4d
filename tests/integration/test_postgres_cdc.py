"""PostgreSQL change capture against a real server (the session's `postgres` fixture): the snapshot and the
changelog through a job in both execution modes, exact resumption from a checkpoint taken inside a transaction,
the slot confirmed only when a checkpoint completes, reconnection across a server restart, schema changes
reported, and the errors a user meets: a value that cannot be converted (table, column and LSN named), a dropped
slot (never a silent restart from now), a slot already taken, tables without REPLICA IDENTITY FULL, wrong
credentials and an unreachable server (address named, within the timeout)."""

from __future__ import annotations

import logging
import time
import uuid

import pytest

from fluvial.common import RowKind
from fluvial.common.errors import NonRecoverableError, ResourceError
from fluvial.datastream.connectors.pgoutput import format_lsn
from fluvial.datastream.connectors.postgres import PostgresSource, PostgresSplit
from fluvial.datastream.connectors.postgres_reader import (
    ChangeConversionError,
    PostgresChangeReader,
    ReplicationSlotError,
)
from fluvial.testing import wait_until
from fluvial.testing.execution import environment
from fluvial.testing.postgres_trials import drop_slot
from fluvial.testing.postgres_trials import run_sql as sql
from services.server import refusing_port


def new_table(postgres, columns: str = "k INT PRIMARY KEY, v TEXT", full: bool = True) -> str:
    name = f"c_{uuid.uuid4().hex[:10]}"
    sql(postgres, f"CREATE TABLE {name} ({columns})")
    if full:
        sql(postgres, f"ALTER TABLE {name} REPLICA IDENTITY FULL")
    return name


def source_for(postgres, table: str, slot: str | None = None, **options) -> PostgresSource:
    builder = (
        PostgresSource.builder()
        .hostname(postgres.host)
        .port(postgres.port)
        .database("postgres")
        .username("postgres")
        .table_list(table)
        .slot_name(slot or f"s_{uuid.uuid4().hex[:10]}")
    )
    for name, value in options.items():
        getattr(builder, name)(*([value] if not isinstance(value, tuple) else value))
    return builder.build()


def reader_for(source: PostgresSource, splits: list[PostgresSplit] | None = None):
    reader = source.create_reader(None)
    reader.add_splits(splits or source.create_splits(1))
    return reader


def read(reader, count: int, max_records: int = 1000, timeout: float = 20) -> list:
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        assert time.monotonic() < deadline, f"read {len(out)} of {count} changes: {out}"
        out.extend(reader.poll(min(max_records, count - len(out))) or [])
    return out


def kinds(rows) -> list[tuple]:
    return [(row.get_row_kind().short_string(), *row) for row in rows]


def confirmed(postgres, slot: str) -> str:
    return sql(postgres, f"SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '{slot}'")[0][0]


@pytest.mark.timeout(60)
def test_a_job_emits_the_snapshot_then_the_changelog(postgres, mode):
    table = new_table(postgres)
    sql(postgres, f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    source = source_for(postgres, table)
    env = environment(mode)
    env.set_parallelism(1)  # a changelog keeps its order through forward connections only
    env.enable_checkpointing(100)
    try:
        with env.from_source(source, source_name="cdc").map(lambda row: row).execute_and_collect() as results:
            snapshot = [next(results), next(results)]
            sql(
                postgres,
                f"UPDATE {table} SET v = 'bb' WHERE k = 2",
                f"DELETE FROM {table} WHERE k = 1",
                f"INSERT INTO {table} VALUES (3, 'c')",
            )
            changes = [next(results) for _ in range(4)]
    finally:
        drop_slot(postgres, source.slot_name)
    assert sorted(kinds(snapshot)) == [("+I", 1, "a"), ("+I", 2, "b")]
    assert kinds(changes) == [("-U", 2, "b"), ("+U", 2, "bb"), ("-D", 1, "a"), ("+I", 3, "c")]
    assert changes[0]._fields == ["k", "v"]


def test_a_restore_inside_a_transaction_resumes_exactly_and_the_slot_moves_only_when_a_checkpoint_completes(postgres):
    table = new_table(postgres)
    source = source_for(postgres, table)
    first = reader_for(source)
    try:
        assert read(first, 0) == [] and first.poll(10) == []  # the (empty) snapshot, then streaming
        sql(
            postgres,
            f"INSERT INTO {table} SELECT g, 'v' || g FROM generate_series(1, 10) g",
            f"INSERT INTO {table} SELECT g, 'w' || g FROM generate_series(11, 20) g",
        )
        head = read(first, 14, max_records=7)  # the first transaction and 4 changes of the second
        before = confirmed(postgres, source.slot_name)
        state = first.snapshot_state()
        first.on_snapshot(1)
        assert state[0].skip == 4 and state[0].xact_lsn > 0
        read(first, 6)  # emitted after the checkpoint: a restore must emit them again
        time.sleep(0.3)
        assert confirmed(postgres, source.slot_name) == before  # nothing confirmed before the checkpoint completes
        first.notify_checkpoint_complete(1)
        wait_until(
            lambda: confirmed(postgres, source.slot_name) == format_lsn(state[0].lsn),
            timeout=10,
            what="the checkpoint's LSN confirmed",
        )
    finally:
        first.close()
    second = reader_for(source, state)
    try:
        tail = read(second, 6)
        sql(postgres, f"DELETE FROM {table} WHERE k = 1")
        assert kinds(read(second, 1)) == [("-D", 1, "v1")]
        assert second.poll(100) == []
    finally:
        second.close()
        drop_slot(postgres, source.slot_name)
    assert [row[0] for row in head + tail] == list(range(1, 21))


def test_a_server_restart_mid_stream_is_reconnected_without_losing_or_repeating_a_change(postgres):
    table = new_table(postgres)
    source = source_for(postgres, table)
    reader = reader_for(source)
    try:
        reader.poll(10)
        sql(postgres, f"INSERT INTO {table} VALUES (1, 'a')")
        got = read(reader, 1)
        postgres.restart()
        sql(postgres, f"INSERT INTO {table} VALUES (2, 'b')")
        got += read(reader, 1, timeout=40)
        assert reader.poll(10) == []
    finally:
        reader.close()
        drop_slot(postgres, source.slot_name)
    assert kinds(got) == [("+I", 1, "a"), ("+I", 2, "b")]


def test_a_dropped_slot_is_an_error_never_a_restart_from_now(postgres):
    table = new_table(postgres)
    source = source_for(postgres, table)
    reader = reader_for(source)
    reader.poll(10)
    state = reader.snapshot_state()
    reader.close()
    drop_slot(postgres, source.slot_name)
    restored = reader_for(source, state)
    with pytest.raises(ReplicationSlotError, match=f"slot '{source.slot_name}' .* no longer exists"):
        restored.poll(10)
    restored.close()


def test_a_fresh_job_refuses_a_slot_that_exists_already_and_a_later_attempt_takes_it_over(postgres):
    table = new_table(postgres)
    source = source_for(postgres, table)
    first = reader_for(source)
    first.poll(10)
    first.close()
    second = reader_for(source)
    with pytest.raises(ReplicationSlotError, match="already exists.*pg_drop_replication_slot"):
        second.poll(10)
    second.close()
    sql(postgres, f"INSERT INTO {table} VALUES (1, 'a')")
    # a later attempt of the job whose first attempt made the slot after its last checkpoint: snapshot again
    retry = PostgresChangeReader(source, attempt_number=1)
    retry.add_splits(source.create_splits(1))
    try:
        assert kinds(read(retry, 1)) == [("+I", 1, "a")]
    finally:
        retry.close()
        drop_slot(postgres, source.slot_name)


def test_a_value_that_cannot_be_converted_names_the_table_column_and_lsn(postgres):
    table = new_table(postgres, "k INT PRIMARY KEY, d DATE")
    source = source_for(postgres, table)
    reader = reader_for(source)
    try:
        reader.poll(10)
        sql(postgres, f"INSERT INTO {table} VALUES (1, '10000-01-01')")
        with pytest.raises(ChangeConversionError, match=f"column 'd' of public.{table} .* at LSN [0-9A-F]+/"):
            read(reader, 1)
    finally:
        reader.close()
        drop_slot(postgres, source.slot_name)


def test_a_schema_change_is_reported_and_can_fail_the_job(postgres, caplog):
    table = new_table(postgres)
    lenient = source_for(postgres, table)
    strict = source_for(postgres, table, slot=None, fail_on_schema_change=True, publication_name=f"p_{table}")
    readers = [reader_for(lenient), reader_for(strict)]
    try:
        for reader in readers:
            reader.poll(10)
        sql(postgres, f"INSERT INTO {table} VALUES (1, 'a')")
        for reader in readers:
            read(reader, 1)
        sql(postgres, f"ALTER TABLE {table} ADD COLUMN extra INT", f"INSERT INTO {table} VALUES (2, 'b', 7)")
        with caplog.at_level(logging.WARNING):
            row = read(readers[0], 1)[0]
        assert row._fields == ["k", "v", "extra"] and tuple(row) == (2, "b", 7)
        assert f"schema of public.{table} changed at LSN" in caplog.text and "added ['extra']" in caplog.text
        with pytest.raises(NonRecoverableError, match="added \\['extra'\\].*fail_on_schema_change"):
            read(readers[1], 1)
    finally:
        for reader, source in zip(readers, (lenient, strict)):
            reader.close()
            drop_slot(postgres, source.slot_name)


def test_without_replica_identity_full_the_all_mode_refuses_and_the_upsert_mode_emits_keys(postgres):
    table = new_table(postgres, full=False)
    with pytest.raises(ResourceError, match="REPLICA IDENTITY FULL.*changelog_mode\\('upsert'\\)"):
        reader_for(source_for(postgres, table)).poll(10)
    source = source_for(postgres, table, changelog_mode="upsert")
    reader = reader_for(source)
    try:
        reader.poll(10)
        sql(postgres, f"INSERT INTO {table} VALUES (1, 'a')", f"UPDATE {table} SET v = 'b'", f"DELETE FROM {table}")
        assert kinds(read(reader, 3)) == [("+I", 1, "a"), ("+U", 1, "b"), ("-D", 1, None)]
    finally:
        reader.close()
        drop_slot(postgres, source.slot_name)


@pytest.mark.timeout(30)
def test_wrong_credentials_and_an_unreachable_server_fail_within_the_timeout_naming_the_address(postgres_with_password):
    guarded = postgres_with_password
    source = (
        PostgresSource.builder()
        .hostname(guarded.host)
        .port(guarded.port)
        .database("postgres")
        .username("postgres")
        .password("wrong")
        .table_list("t")
        .connect_timeout(3)
        .build()
    )
    with pytest.raises(ResourceError, match=f"at 127.0.0.1:{guarded.port}/postgres: .*password authentication"):
        reader_for(source).poll(10)
    with refusing_port() as port:
        source = (
            PostgresSource.builder()
            .hostname("127.0.0.1")
            .port(port)
            .database("postgres")
            .username("postgres")
            .table_list("t")
            .connect_timeout(2)
            .build()
        )
        started = time.monotonic()
        with pytest.raises(ResourceError, match=f"at 127.0.0.1:{port}/postgres"):
            reader_for(source).poll(10)
        assert time.monotonic() - started < 25  # within the 2 s timeout, not the default 30 s


@pytest.mark.timeout(90)
def test_the_mirror_example_runs_against_a_server_as_the_docs_say(postgres):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "examples" / "postgres_mirror.py"), "--seconds", "4"],
        env={**os.environ, "FLUVIAL_POSTGRES": f"{postgres.host}:{postgres.port}"},
        capture_output=True,
        text=True,
        timeout=80,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["1 apples 5 False", "2 pears 1 True", "3 plums 12 False", "4 figs 7 False"]


class Changelog:
    """Applies changelog rows to tables held in dicts, refusing what exactly-once never emits: an insert of a
    key that is there, a retraction of a row that is not there as retracted."""

    def __init__(self) -> None:
        self.tables: dict[str, dict] = {}

    def apply(self, table: str, rows) -> None:
        state = self.tables.setdefault(table, {})
        for row in rows:
            kind, values = row.get_row_kind(), tuple(row)
            if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
                assert kind is RowKind.UPDATE_AFTER or values[0] not in state, f"{table}: +I of present {values}"
                state[values[0]] = values
            else:
                assert state.get(values[0]) == values, f"{table}: retraction {values} of {state.get(values[0])}"
                del state[values[0]]


def test_a_restore_mid_snapshot_resumes_it_without_repeating_or_losing_a_row(postgres):
    first_table, second_table = new_table(postgres), new_table(postgres)
    sql(
        postgres,
        f"INSERT INTO {first_table} SELECT g, 'a' || g FROM generate_series(1, 50) g",
        f"INSERT INTO {second_table} SELECT g, 'b' || g FROM generate_series(1, 30) g",
    )
    source = source_for(postgres, first_table, table_list=(first_table, second_table))
    changelog = Changelog()
    first = reader_for(source)
    try:
        changelog.apply(first_table, read(first, 20, max_records=20))
        state = first.snapshot_state()
        assert state[0].progress == (0, (20,))
        first.on_snapshot(1)
        first.notify_checkpoint_complete(1)  # nothing to confirm during the snapshot
        sql(
            postgres,  # changes to rows emitted and not yet emitted, keys moving in and out of the emitted range
            f"UPDATE {first_table} SET v = 'x5' WHERE k = 5",
            f"UPDATE {first_table} SET v = 'x30' WHERE k = 30",
            f"DELETE FROM {first_table} WHERE k = 10",
            f"DELETE FROM {first_table} WHERE k = 40",
            f"INSERT INTO {first_table} VALUES (60, 'new'), (0, 'zero')",
            f"UPDATE {first_table} SET k = 145 WHERE k = 15",
            f"UPDATE {first_table} SET k = -1 WHERE k = 35",
            f"UPDATE {second_table} SET v = 'y1' WHERE k = 1",
            f"DELETE FROM {second_table} WHERE k = 2",
        )
        read(first, 5)  # emitted after the checkpoint: lost with the crash, read again by the restore
    finally:
        first.close()
    second = reader_for(source, state)
    try:
        rows = []
        deadline = time.monotonic() + 20
        while second._snapshot is not None or not second._started or len(rows) == 0:
            assert time.monotonic() < deadline
            rows.extend(second.poll(1000) or [])
        sql(
            postgres,
            f"UPDATE {second_table} SET v = 'after' WHERE k = 3",
            f"INSERT INTO {first_table} VALUES (99, 'last')",
        )
        deadline = time.monotonic() + 20
        while not any(tuple(row) == (99, "last") for row in rows):
            assert time.monotonic() < deadline, rows
            rows.extend(second.poll(1000) or [])
        assert second.poll(1000) == []
    finally:
        second.close()
        drop_slot(postgres, source.slot_name)
    for row in rows:  # the second table's values start with b or y, or are 'after'
        changelog.apply(second_table if row[1][0] in "by" or row[1] == "after" else first_table, [row])
    for table in (first_table, second_table):
        assert changelog.tables[table] == {k: (k, v) for k, v in sql(postgres, f"SELECT k, v FROM {table}")}, table
