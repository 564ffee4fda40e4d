"""The JDBC sink against a real PostgreSQL server (the session's `postgres` fixture): at least once with an
idempotent upsert (batches by size, by interval and at checkpoints), exactly once through prepared transactions
(a crashed writer's prepared transaction is committed by the restored job when its checkpoint recorded it and
rolled back when not), retries across a server restart, and the errors a user meets: a record the statement
rejects (named), wrong credentials and an unreachable server (named, within the timeout)."""

from __future__ import annotations

import time
import uuid

import pytest

from fluvial.common import Row, Types
from fluvial.common.errors import InvalidJobError, JobExecutionException, ResourceError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExactlyOnceOptions,
    JdbcExecutionOptions,
    JdbcSink,
    to_pyformat,
)
from fluvial.datastream.connectors.jdbc_writer import JdbcStatementError
from fluvial.testing import wait_until
from fluvial.testing.execution import environment
from services.server import refusing_port

ROW = Types.ROW_NAMED(["k", "v"], [Types.INT(), Types.STRING()])


def new_table(postgres, columns: str = "k INT PRIMARY KEY, v TEXT NOT NULL") -> str:
    name = f"t_{uuid.uuid4().hex[:10]}"
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {name} ({columns})")
    return name


def rows_of(postgres, table: str) -> list[tuple]:
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
        return cursor.fetchall()


def prepared(postgres, prefix: str) -> list[str]:
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT gid FROM pg_prepared_xacts WHERE left(gid, %s) = %s", (len(prefix), prefix))
        return [gid for (gid,) in cursor.fetchall()]


def options(postgres, **extra) -> JdbcConnectionOptions:
    builder = (
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(postgres.jdbc_url)
        .with_driver_name("org.postgresql.Driver")
        .with_user_name("postgres")
    )
    for name, value in extra.items():
        getattr(builder, f"with_{name}")(value)
    return builder.build()


def task(subtask: int = 0) -> TaskInfo:
    return TaskInfo("job", "JDBC Sink", subtask, 1, 128)


def test_placeholders_become_pyformat_outside_quotes_and_comments():
    assert to_pyformat("INSERT INTO t VALUES (?, '?%', \"a?\") -- ?\n") == (
        "INSERT INTO t VALUES (%s, '?%%', \"a?\") -- ?\n",
        1,
    )
    with pytest.raises(InvalidJobError, match="2 '\\?' placeholders but the type info has 1"):
        JdbcSink.sink(
            "INSERT INTO t VALUES (?, ?)",
            Types.ROW([Types.INT()]),
            JdbcConnectionOptions("jdbc:postgresql://127.0.0.1/db"),
        )
    with pytest.raises(InvalidJobError, match="not a PostgreSQL URL"):
        JdbcConnectionOptions("jdbc:mysql://127.0.0.1/db")
    with pytest.raises(InvalidJobError, match="with_max_retries\\(0\\)"):
        JdbcSink.exactly_once_sink(
            "INSERT INTO t VALUES (?)",
            Types.ROW([Types.INT()]),
            JdbcConnectionOptions("jdbc:postgresql://127.0.0.1/db"),
            JdbcExecutionOptions.defaults(),
        )


@pytest.mark.timeout(60)
def test_at_least_once_upserts_every_record_of_a_job(postgres):
    table = new_table(postgres)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(50)
    records = [Row(k % 300, f"v{k}") for k in range(1000)]
    env.from_collection(records, type_info=ROW).add_sink(
        JdbcSink.sink(
            f"INSERT INTO {table} (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
            ROW,
            options(postgres),
            JdbcExecutionOptions.builder().with_batch_size(64).with_max_retries(2).build(),
        )
    )
    env.execute("jdbc at least once")
    got = dict(rows_of(postgres, table))
    assert len(got) == 300 and all(got[k].startswith("v") and int(got[k][1:]) % 300 == k for k in got)


@pytest.mark.timeout(60)
def test_exactly_once_commits_each_checkpoints_transaction_and_leaves_none_prepared(postgres, mode):
    table = new_table(postgres, "k INT NOT NULL, v TEXT NOT NULL")  # no key: a duplicate would show
    env = environment(mode)
    env.set_parallelism(2)
    env.enable_checkpointing(30)
    prefix = f"eo{uuid.uuid4().hex[:8]}"
    env.from_collection([(k, f"v{k}") for k in range(2000)], type_info=Types.TUPLE([Types.INT(), Types.STRING()])).map(
        lambda kv: kv, output_type=Types.TUPLE([Types.INT(), Types.STRING()])
    ).add_sink(
        JdbcSink.exactly_once_sink(
            f"INSERT INTO {table} VALUES (?, ?)",
            ROW,
            options(postgres),
            JdbcExecutionOptions.builder().with_batch_size(100).with_max_retries(0).build(),
            JdbcExactlyOnceOptions.builder().with_transaction_id_prefix(prefix).build(),
        )
    )
    env.execute("jdbc exactly once")
    assert rows_of(postgres, table) == sorted((k, f"v{k}") for k in range(2000))
    assert prepared(postgres, prefix) == []


def test_a_restored_writer_commits_what_its_checkpoint_recorded_and_rolls_back_the_rest(postgres):
    table = new_table(postgres, "k INT NOT NULL, v TEXT NOT NULL")
    prefix = f"rc{uuid.uuid4().hex[:8]}"
    sink = JdbcSink.exactly_once_sink(
        f"INSERT INTO {table} VALUES (?, ?)",
        ROW,
        options(postgres),
        jdbc_exactly_once_options=JdbcExactlyOnceOptions(prefix),
    )
    crashed = sink.create_writer(task())
    crashed.write_batch([Row(1, "a"), Row(2, "b")])
    recorded = crashed.prepare_commit()  # checkpoint 1: completed, but its commit never ran
    state = crashed.snapshot_state()
    crashed.write_batch([Row(3, "c")])
    stray = crashed.prepare_commit()  # checkpoint 2: prepared, never completed
    crashed._session.discard()  # the process died: no commit, no close
    assert sorted(prepared(postgres, prefix)) == sorted(recorded + stray)
    assert rows_of(postgres, table) == []

    restored = sink.create_writer(task(), state)  # rolls back the stray at once, keeps what state recorded
    assert prepared(postgres, prefix) == recorded
    sink.commit(recorded)  # what SinkWriterOperator.open does with the checkpoint's committables
    sink.commit(recorded)  # idempotent
    assert prepared(postgres, prefix) == []
    restored.write_batch([Row(3, "c")])
    sink.commit(restored.prepare_commit())
    restored.close()
    assert rows_of(postgres, table) == [(1, "a"), (2, "b"), (3, "c")]


def test_the_batch_interval_writes_records_without_a_checkpoint(postgres):
    table = new_table(postgres)
    sink = JdbcSink.sink(
        f"INSERT INTO {table} VALUES (?, ?)",
        ROW,
        options(postgres),
        JdbcExecutionOptions.builder().with_batch_interval_ms(50).build(),
    )
    writer = sink.create_writer(task())
    try:
        writer.write_batch([Row(1, "a")])
        wait_until(lambda: rows_of(postgres, table) == [(1, "a")], timeout=10, what="the interval's flush")
    finally:
        writer.close()


@pytest.mark.timeout(60)
def test_a_batch_is_retried_across_a_server_restart(postgres):
    table = new_table(postgres)
    sink = JdbcSink.sink(
        f"INSERT INTO {table} VALUES (?, ?) ON CONFLICT (k) DO NOTHING",
        ROW,
        options(postgres),
        JdbcExecutionOptions.builder().with_max_retries(5).build(),
    )
    writer = sink.create_writer(task())
    try:
        writer.write_batch([Row(1, "a")])
        writer.flush(False)
        postgres.restart()
        writer.write_batch([Row(2, "b")])
        writer.flush(False)  # the old connection is gone: reconnect and retry
    finally:
        writer.close()
    assert rows_of(postgres, table) == [(1, "a"), (2, "b")]


@pytest.mark.timeout(60)
def test_a_record_the_statement_rejects_is_named(postgres):
    table = new_table(postgres)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([Row(1, "a"), Row(2, None), Row(3, "c")], type_info=ROW).add_sink(
        JdbcSink.sink(f"INSERT INTO {table} VALUES (?, ?)", ROW, options(postgres))
    )
    with pytest.raises(JobExecutionException) as info:
        env.execute("bad record")
    cause = info.value.__cause__
    assert isinstance(cause, JdbcStatementError)
    message = str(cause)
    assert "(2, None)" in message and "not-null" in message and postgres.jdbc_url.split("//")[1] in message


@pytest.mark.timeout(30)
def test_wrong_credentials_and_an_unreachable_server_fail_within_the_timeout_naming_the_address(postgres_with_password):
    guarded = postgres_with_password
    sink = JdbcSink.sink(
        "INSERT INTO nowhere VALUES (?, ?)", ROW, options(guarded, password="wrong", connection_check_timeout_seconds=3)
    )
    writer = sink.create_writer(task())
    started = time.monotonic()
    with pytest.raises(ResourceError, match=f"127.0.0.1:{guarded.port}.*password authentication failed"):
        writer.write_batch([Row(1, "a")])
        writer.flush(False)
    assert time.monotonic() - started < 30  # at once (no retries for a refused login), not after a minute
    writer.close()
    with refusing_port() as port:
        sink = JdbcSink.sink(
            "INSERT INTO nowhere VALUES (?, ?)",
            ROW,
            JdbcConnectionOptions(
                f"jdbc:postgresql://127.0.0.1:{port}/postgres", user_name="postgres", connection_check_timeout_seconds=2
            ),
            JdbcExecutionOptions.builder().with_max_retries(1).build(),
        )
        writer = sink.create_writer(task())
        started = time.monotonic()
        with pytest.raises(ResourceError, match=f"127.0.0.1:{port}/postgres.*failed 2 times"):
            writer.write_batch([Row(1, "a")])
            writer.flush(False)
        assert time.monotonic() - started < 30  # within the 2 s timeout and one retry, not the default minute
        writer.close()
