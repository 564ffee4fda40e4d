"""Fault trials of the PostgreSQL connectors, shared by the fault tests (a few trials) and the soak
(`python -m bench.postgres_soak`, many): a job in process mode runs against a real server while the trial SIGKILLs
one of its TaskManager processes (the job fails over from its latest checkpoint onto a replacement) or restarts
the server; then the per-key sequence oracle judges what the database holds.

- JDBC trial: KeySequenceSource → key_by → SequenceVerifier → JdbcSink into `out(key, seq, verdict)`. Exactly
  once (`exactly_once_sink`, a table without a key: a row written twice shows) or at least once (an upsert on
  (key, seq): nothing may be lost).
- CDC trial: a writer thread inserts `(key, seq)` rows into `events` in small transactions while the job
  captures them (PostgresSource) → key_by → SequenceVerifier → the exactly-once JdbcSink into `out`: every
  change exactly once, in order per key, end to end.

`server` is a `services.postgres.PostgresServer` (anything with `jdbc_url`, `host`, `port`, `connect()` and
`restart()`).
"""

from __future__ import annotations

import enum
import os
import random
import signal
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fluvial.testing.faults import completed_checkpoints


class PgFault(enum.Enum):
    KILL_TASKMANAGER = "kill a TaskManager process"
    RESTART_SERVER = "restart the PostgreSQL server"


@dataclass
class PgTrialResult:
    connector: str
    seed: int
    faults: Counter = field(default_factory=Counter)
    expected: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    restarts: int = 0
    outcome: str = "ok"

    @property
    def passed(self) -> bool:
        return self.outcome == "ok" and self.lost == 0 and self.duplicated == 0 and self.out_of_order == 0


def run_sql(server: Any, *statements: str) -> list:
    """Run statements in autocommit; the rows of the last one that returns rows."""
    connection = server.connect()
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            return cursor.fetchall() if cursor.description else []
    finally:
        connection.close()


def judge(server: Any, table: str, keys: int, per_key: int, result: PgTrialResult) -> None:
    """Lost, duplicated and out-of-order over the `(key, seq, verdict)` rows of `table`."""
    rows = run_sql(server, f"SELECT key, seq, verdict FROM {table}")
    pairs: dict[tuple[int, int], list[str]] = {}
    for key, seq, verdict in rows:
        pairs.setdefault((key, seq), []).append(verdict)
    result.expected = keys * per_key
    present = sum(1 for key, seq in pairs if 0 <= key < keys and 0 <= seq < per_key)
    result.lost = result.expected - present
    result.duplicated = sum(len(v) - 1 + (v == ["duplicated"]) for v in pairs.values())
    result.out_of_order = sum(v.count("out-of-order") for v in pairs.values())


def _environment(checkpoints: Path, parallelism: int) -> Any:
    from fluvial.common import Configuration
    from fluvial.common.restart_strategy import RestartStrategies
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", "process")
    )
    env.set_parallelism(parallelism)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{checkpoints}"))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1000, 200))
    return env


def _verdict_row(line: str) -> Any:
    from fluvial.common import Row

    key, seq, verdict = line.split("|")
    return Row(int(key), int(seq), verdict)


def _sink(server: Any, table: str, exactly_once: bool) -> Any:
    from fluvial.common import Types
    from fluvial.datastream.connectors.jdbc import (
        JdbcConnectionOptions,
        JdbcExactlyOnceOptions,
        JdbcExecutionOptions,
        JdbcSink,
    )

    row = Types.ROW([Types.INT(), Types.INT(), Types.STRING()])
    options = JdbcConnectionOptions(server.jdbc_url, user_name="postgres", connection_check_timeout_seconds=10)
    if exactly_once:
        return JdbcSink.exactly_once_sink(
            f"INSERT INTO {table} VALUES (?, ?, ?)",
            row,
            options,
            JdbcExecutionOptions.builder().with_batch_size(200).with_max_retries(0).build(),
            JdbcExactlyOnceOptions.builder().with_transaction_id_prefix(table).build(),
        )
    return JdbcSink.sink(
        f"INSERT INTO {table} VALUES (?, ?, ?) ON CONFLICT (key, seq) DO UPDATE SET verdict = EXCLUDED.verdict",
        row,
        options,
        JdbcExecutionOptions.builder().with_batch_size(200).with_max_retries(10).build(),
    )


def _verified(stream: Any) -> Any:
    from fluvial.common import Types
    from fluvial.testing.sequences import SequenceVerifier

    return (
        stream.key_by(lambda record: record[0], key_type=Types.INT())
        .process(SequenceVerifier(), output_type=Types.STRING())
        .uid("verifier")
        .map(_verdict_row, output_type=Types.ROW([Types.INT(), Types.INT(), Types.STRING()]))
        .uid("rows")
    )


class _Trial:
    def __init__(self, server: Any, workdir: Path, seed: int, faults: list[PgFault], connector: str) -> None:
        self.server = server
        self.workdir = Path(workdir)
        self.random = random.Random(seed)
        self.faults = faults
        self.result = PgTrialResult(connector, seed)
        self.checkpoints = self.workdir / "checkpoints"
        self.table = f"out_{uuid.uuid4().hex[:10]}"
        self.client: Any = None

    def latest(self) -> int:
        return max(completed_checkpoints(self.checkpoints), default=0)

    def wait(self, condition: Any, what: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.client is not None and self.client.get_job_execution_result().done():
                self.client.get_job_execution_result().result()  # raises the job's error
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} within {timeout:.0f} s")
            time.sleep(0.01)

    def inject(self) -> None:
        for fault in self.faults:
            if self.client.get_job_execution_result().done():
                return
            before = self.latest()
            self.wait(lambda before=before: self.latest() > before, "checkpoint before the fault")
            time.sleep(self.random.uniform(0, 0.3))
            self.result.faults[fault] += 1
            if fault is PgFault.KILL_TASKMANAGER:
                try:
                    os.kill(self.random.choice(self.client.cluster.processes.pids), signal.SIGKILL)
                except ProcessLookupError:  # the job ended (its TaskManagers with it) just before the kill
                    self.result.faults[fault] -= 1
                    return
            else:
                self.server.restart()
            after = self.latest()
            self.wait(lambda after=after: self.latest() > after, "checkpoint after the fault", timeout=120)


def run_jdbc_trial(
    server: Any,
    workdir: Path,
    seed: int,
    faults: list[PgFault],
    exactly_once: bool = True,
    keys: int = 10,
    per_key: int = 300,
    rate: int = 500,
) -> PgTrialResult:
    from fluvial.testing.sequences import KeySequenceSource

    trial = _Trial(server, workdir, seed, faults, "jdbc " + ("exactly once" if exactly_once else "at least once"))
    key = "" if exactly_once else ", PRIMARY KEY (key, seq)"
    run_sql(server, f"CREATE TABLE {trial.table} (key INT NOT NULL, seq INT NOT NULL, verdict TEXT{key})")
    try:
        env = _environment(trial.checkpoints, 2)
        stream = env.from_source(KeySequenceSource(keys, per_key, rate), source_name="sequences").uid("sequences")
        _verified(stream).add_sink(_sink(server, trial.table, exactly_once)).uid("sink")
        trial.client = env.execute_async("jdbc fault trial")
        trial.inject()
        trial.client.get_job_execution_result().result(timeout=180)
        trial.result.restarts = trial.client._job_master.restarts
    except Exception as error:  # noqa: BLE001 - reported in the result
        trial.result.outcome = f"{type(error).__name__}: {error}"
    finally:
        _finish(trial)
    judge(server, trial.table, keys, per_key, trial.result)
    return trial.result


class _Writer(threading.Thread):
    """Inserts (key, seq) for every key round-robin, in transactions of 1-5 rows, pausing now and then; a server
    restart makes it retry the transaction it was in (never twice: it reconnects and checks)."""

    def __init__(self, server: Any, table: str, keys: int, per_key: int, seed: int) -> None:
        super().__init__(daemon=True, name="cdc-writer")
        self.server, self.table, self.keys, self.per_key = server, table, keys, per_key
        self.random = random.Random(seed)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            records = [(k, s) for s in range(self.per_key) for k in range(self.keys)]
            i = 0
            connection = None
            while i < len(records):
                size = self.random.randint(1, 5)
                chunk = records[i : i + size]
                try:
                    if connection is None or connection.closed:
                        connection = self.server.connect()
                    with connection.cursor() as cursor:
                        cursor.executemany(f"INSERT INTO {self.table} (key, seq) VALUES (%s, %s)", chunk)
                    connection.commit()
                    i += len(chunk)
                except Exception:  # noqa: BLE001 - the server restarted: did the commit land?
                    connection = None
                    time.sleep(0.2)
                    try:
                        landed = run_sql(self.server, f"SELECT count(*) FROM {self.table}")[0][0]
                        i = landed  # rows are inserted in order, one writer: the count is the position
                    except Exception:  # noqa: BLE001 - still down; try again
                        pass
                    continue
                if self.random.random() < 0.2:
                    time.sleep(0.005)
            if connection is not None:
                connection.close()
        except BaseException as error:  # noqa: BLE001 - reported by the trial
            self.error = error


def run_cdc_trial(
    server: Any, workdir: Path, seed: int, faults: list[PgFault], keys: int = 10, per_key: int = 300
) -> PgTrialResult:
    from fluvial.common import Types
    from fluvial.datastream.connectors.postgres import PostgresSource

    trial = _Trial(server, workdir, seed, faults, "postgres cdc")
    events = f"ev_{uuid.uuid4().hex[:10]}"
    run_sql(
        server,
        f"CREATE TABLE {events} (id BIGSERIAL PRIMARY KEY, key INT NOT NULL, seq INT NOT NULL)",
        f"ALTER TABLE {events} REPLICA IDENTITY FULL",
        f"CREATE TABLE {trial.table} (key INT NOT NULL, seq INT NOT NULL, verdict TEXT)",
    )
    slot = f"s_{events}"
    source = (
        PostgresSource.builder()
        .hostname(server.host)
        .port(server.port)
        .database("postgres")
        .username("postgres")
        .table_list(events)
        .slot_name(slot)
        .connect_timeout(20)
        .build()
    )
    writer = _Writer(server, events, keys, per_key, seed)
    expected = keys * per_key
    try:
        env = _environment(trial.checkpoints, 2)
        stream = (
            env.from_source(source, source_name="cdc")
            .uid("cdc")
            .set_parallelism(1)
            .map(lambda row: (row[1], row[2]), output_type=Types.TUPLE([Types.INT(), Types.INT()]))
            .uid("pairs")
        )
        _verified(stream).add_sink(_sink(server, trial.table, True)).uid("sink")
        trial.client = env.execute_async("cdc fault trial")
        writer.start()
        trial.inject()
        writer.join(120)
        if writer.error is not None:
            raise writer.error
        trial.wait(
            lambda: run_sql(server, f"SELECT count(*) FROM {trial.table}")[0][0] >= expected,
            "complete copy",
            timeout=120,
        )
        last = trial.latest()
        trial.wait(lambda: trial.latest() > last + 1, "two more checkpoints")  # anything late would show
        trial.result.restarts = trial.client._job_master.restarts
    except Exception as error:  # noqa: BLE001 - reported in the result
        trial.result.outcome = f"{type(error).__name__}: {error}"
    finally:
        _finish(trial)
        drop_slot(server, slot)
    judge(server, trial.table, keys, per_key, trial.result)
    return trial.result


def _finish(trial: _Trial) -> None:
    client = trial.client
    if client is not None and not client.get_job_execution_result().done():
        client.cancel()
        try:
            client.get_job_execution_result().result(timeout=60)
        except Exception:  # noqa: BLE001 - a cancelled job ends with its cancellation
            pass


def drop_slot(server: Any, slot: str) -> None:
    """Once no reader holds it (a cancelled job closes its reader a moment later)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            run_sql(
                server,
                f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                f"WHERE slot_name = '{slot}' AND NOT active",
            )
            if not run_sql(server, f"SELECT 1 FROM pg_replication_slots WHERE slot_name = '{slot}'"):
                return
        except Exception:  # noqa: BLE001 - the server may be restarting
            pass
        time.sleep(0.1)
