"""The JDBC sink's writers (see `jdbc`): `BatchingJdbcWriter` (at least once: batches committed, retried on a new
connection) and `TransactionalJdbcWriter` (exactly once: a transaction per checkpoint, prepared at the barrier),
and `PreparedTransactions`, which commits and rolls back prepared transactions by their ids.

Batches go to the server with psycopg2's `execute_batch` (many statements per round trip). `write_batch` only
appends to the buffer; records become parameter tuples when their batch is executed.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import FluvialError, ResourceError
from fluvial.common.row import Row
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.postgres_client import (
    PostgresLoginError,
    connect,
    is_connection_lost,
    psycopg2_module,
    quote_literal,
)
from fluvial.datastream.connectors.sink import SinkWriter

logger = logging.getLogger(__name__)

_PAGE_SIZE = 500  # statements per round trip of execute_batch
_UNDEFINED_OBJECT = "42704"  # COMMIT/ROLLBACK PREPARED of an id that is not prepared (any more)


class JdbcStatementError(FluvialError):
    """The sink's statement failed for a record: the message names the record, the statement and the server."""


def _parameters(values: list) -> list:
    return [v._values if type(v) is Row else v for v in values]


def _is_transient(error: BaseException) -> bool:
    """Worth a retry: the connection broke, or the server asked for one (serialization failure, deadlock)."""
    return is_connection_lost(error) or str(getattr(error, "pgcode", "") or "").startswith("40")


class _Session:
    """One connection of a writer to the sink's server, opened on first use and again after it broke."""

    def __init__(self, sink: Any, autocommit: bool) -> None:
        self._sink = sink
        self._address = sink.connection_options.address()
        self._timeout = sink.connection_options.connection_check_timeout_seconds
        self._autocommit = autocommit
        self.connection: Any = None

    @property
    def address(self) -> str:
        return self._address.address

    def cursor(self) -> Any:
        if self.connection is None or self.connection.closed:
            self.connection = connect(self._address, self._timeout, what="JDBC sink")
            self.connection.autocommit = self._autocommit
        return self.connection.cursor()

    def discard(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is dropped either way
                pass
        self.connection = None


def execute_statement(session: _Session, sink: Any, rows: list) -> None:
    """Run the statement for every row; a statement error names the first failing record."""
    psycopg2 = psycopg2_module()
    cursor = session.cursor()
    try:
        psycopg2.extras.execute_batch(cursor, sink.statement, rows, page_size=_PAGE_SIZE)
    except psycopg2.Error as error:
        if _is_transient(error):
            raise
        raise _statement_error(session, sink, rows, error) from None


def _statement_error(session: _Session, sink: Any, rows: list, error: Exception) -> JdbcStatementError:
    """Which record failed: execute_batch says only that its page did, so find it one row at a time in a
    transaction that is rolled back."""
    culprit = None
    connection = session.connection
    try:
        cursor = connection.cursor()
        _roll_back(connection, cursor)
        if connection.autocommit:
            cursor.execute("BEGIN")
        for row in rows:
            try:
                cursor.execute(sink.statement, row)
            except Exception:  # noqa: BLE001 - the probe looks for the failing row
                culprit = row
                break
        _roll_back(connection, cursor)
    except Exception:  # noqa: BLE001 - the original error is what matters; the probe is best effort
        pass
    record = f"record {tuple(culprit)!r}" if culprit is not None else f"a record of a batch of {len(rows)}"
    detail = str(error).strip().splitlines()[0]
    return JdbcStatementError(
        f"JDBC sink: {sink.sql!r} failed for {record} at {session.address}: {detail}; fix "
        f"the record upstream or the statement (its '?' fields are {sink.type_info!r})"
    )


def _roll_back(connection: Any, cursor: Any) -> None:
    if connection.autocommit:
        cursor.execute("ROLLBACK")
    else:
        connection.rollback()


class BatchingJdbcWriter(SinkWriter):
    """At least once: a batch is executed and committed when it is full, when the batch interval passed (a timer
    thread), and at every checkpoint; a transient failure is retried `max_retries` times on a new connection."""

    def __init__(self, sink: Any, task_info: TaskInfo) -> None:
        self._sink = sink
        options = sink.execution_options
        self._batch_size = options.batch_size
        self._max_retries = options.max_retries
        self._session = _Session(sink, autocommit=False)
        self._buffer: list = []
        self._lock = threading.Lock()
        self._timer_error: BaseException | None = None
        self._closed = threading.Event()
        self._timer: threading.Thread | None = None
        if options.batch_interval_ms > 0:
            self._timer = threading.Thread(
                target=self._flush_periodically,
                args=(options.batch_interval_ms / 1000,),
                name=f"jdbc-flush-{task_info.subtask_index}",
                daemon=True,
            )
            self._timer.start()

    def write_batch(self, values: list) -> None:
        if self._timer_error is not None:
            raise self._timer_error
        with self._lock:
            self._buffer.extend(values)
            if len(self._buffer) >= self._batch_size:
                self._flush_locked()

    def flush(self, end_of_input: bool) -> None:
        if self._timer_error is not None:
            raise self._timer_error
        with self._lock:
            self._flush_locked()

    def _flush_periodically(self, interval: float) -> None:
        while not self._closed.wait(interval):
            try:
                with self._lock:
                    self._flush_locked()
            except BaseException as error:  # noqa: BLE001 - handed to the task thread, which fails the task
                self._timer_error = error
                return

    def _flush_locked(self) -> None:
        if not self._buffer:
            return
        attempt = 0
        while True:
            try:
                self._write(self._buffer)
                self._session.connection.commit()
                break
            except JdbcStatementError:
                raise
            except Exception as error:  # noqa: BLE001 - transient errors are retried, others re-raised
                if isinstance(error, PostgresLoginError) or not (
                    isinstance(error, ResourceError) or _is_transient(error)
                ):
                    raise
                if attempt >= self._max_retries:
                    raise ResourceError(
                        f"JDBC sink: writing a batch of {len(self._buffer)} records to "
                        f"{self._session.address} failed {attempt + 1} times, last with: "
                        f"{str(error).strip()}; check the server (max_retries="
                        f"{self._max_retries})"
                    ) from error
                attempt += 1
                logger.warning(
                    "JDBC sink: batch to %s failed (%s); retry %d of %d",
                    self._session.address,
                    str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__,
                    attempt,
                    self._max_retries,
                )
                self._session.discard()
                time.sleep(min(attempt, 5))
        self._buffer.clear()

    def _write(self, records: list) -> None:
        """Execute the buffered records in the session's open transaction (the caller commits or retries)."""
        execute_statement(self._session, self._sink, _parameters(records))

    def close(self) -> None:
        self._closed.set()
        if self._timer is not None:
            self._timer.join(10)
        self._session.discard()
        close_committer(self._sink)


@dataclass(frozen=True)
class TransactionalWriterState:
    """The prepared transactions a checkpoint recorded as not yet committed (its committables, by id)."""

    pending: tuple[str, ...]


class TransactionalJdbcWriter(SinkWriter):
    """Exactly once: the records between two checkpoints go into one transaction (`BEGIN` at the first batch),
    prepared at the checkpoint as `PREFIX-SUBTASK-RUN-N` and returned as the committable.

    When it is created the writer rolls back every prepared transaction of its prefix and subtask that its
    checkpoint did not record as pending (the operator commits those next): the rest were prepared for checkpoints
    that never completed. At once, not at the first record: a prepared transaction holds its rows' locks, and
    creating a replication slot in the database (a CDC source's restart) waits for it to end. Its first
    checkpoint looks again, for what an earlier attempt still being cancelled prepared late."""

    def __init__(self, sink: Any, task_info: TaskInfo, restored_state: list[Any] | None = None) -> None:
        self._sink = sink
        self._batch_size = sink.execution_options.batch_size
        self._session = _Session(sink, autocommit=True)
        self._prefix = f"{sink.transaction_prefix()}-{task_info.subtask_index}-"
        self._run = uuid.uuid4().hex[:12]
        self._counter = 0
        self._buffer: list = []
        self._in_transaction = False
        self._keep = {gid for state in restored_state or () for gid in state.pending}
        self._pending: set[str] = set()  # prepared here, not yet committed
        self._recovered = False
        self._roll_back_strays()
        self._recovered = False
        register_writer(sink, self)

    def write_batch(self, values: list) -> None:
        self._buffer.extend(values)
        if len(self._buffer) >= self._batch_size:
            self._execute_buffer()

    def _execute_buffer(self) -> None:
        if not self._buffer:
            return
        try:
            if not self._in_transaction:
                self._session.cursor().execute("BEGIN")
                self._in_transaction = True
            execute_statement(self._session, self._sink, _parameters(self._buffer))
        except JdbcStatementError:
            self._session.discard()
            self._in_transaction = False
            raise
        except Exception as error:
            self._session.discard()
            self._in_transaction = False
            raise ResourceError(
                f"JDBC sink (exactly once): writing to {self._session.address} failed: "
                f"{str(error).strip()}; the checkpoint's transaction is rolled back and the job "
                f"fails over to write it again"
            ) from error
        self._buffer.clear()

    def flush(self, end_of_input: bool) -> None:
        self._execute_buffer()

    def prepare_commit(self) -> list[Any]:
        if not self._recovered:
            self._roll_back_strays()
        self._execute_buffer()
        if not self._in_transaction:
            return []
        self._counter += 1
        gid = f"{self._prefix}{self._run}-{self._counter}"
        try:
            self._session.cursor().execute(f"PREPARE TRANSACTION {quote_literal(gid)}")
        except Exception as error:
            self._session.discard()
            raise ResourceError(
                f"JDBC sink (exactly once): preparing transaction {gid!r} at "
                f"{self._session.address} failed: {str(error).strip()}; the server needs "
                f"max_prepared_transactions > 0"
            ) from error
        finally:
            self._in_transaction = False
        self._pending.add(gid)
        return [gid]

    def snapshot_state(self) -> list[Any]:
        return [TransactionalWriterState(tuple(sorted(self._pending | self._keep)))]

    def committed(self, gids: list[str]) -> None:
        """The sink committed these (the operator's commit, on this task's thread)."""
        self._pending.difference_update(gids)
        self._keep.difference_update(gids)

    def _roll_back_strays(self) -> None:
        self._recovered = True
        if not self._sink.exactly_once_options.recover_and_rollback:
            return
        cursor = self._session.cursor()
        cursor.execute(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND left(gid, %s) = %s",
            (len(self._prefix), self._prefix),
        )
        strays = [gid for (gid,) in cursor.fetchall() if gid not in self._keep and gid not in self._pending]
        for gid in strays:
            PreparedTransactions.finish(cursor, gid, "ROLLBACK")
        if strays:
            logger.info(
                "JDBC sink: rolled back %d prepared transactions of checkpoints that never completed: %s",
                len(strays),
                strays,
            )

    def close(self) -> None:
        self._session.discard()  # an open (unprepared) transaction is rolled back by the server
        register_writer(self._sink, None)
        close_committer(self._sink)


class PreparedTransactions:
    """Commits prepared transactions by id on a connection of its own (COMMIT PREPARED cannot run inside the
    writer's open transaction); an id no longer prepared was committed before."""

    def __init__(self, sink: Any) -> None:
        self._sink = sink
        self._session = _Session(sink, autocommit=True)
        self._attempts = sink.exactly_once_options.max_commit_attempts

    def commit(self, gids: list[str]) -> None:
        for gid in gids:
            for attempt in range(1, self._attempts + 1):
                try:
                    self.finish(self._session.cursor(), gid, "COMMIT")
                    break
                except Exception as error:  # noqa: BLE001 - a lost connection is retried, others raised
                    self._session.discard()
                    lost = (
                        isinstance(error, ResourceError) and not isinstance(error, PostgresLoginError)
                    ) or is_connection_lost(error)
                    if not lost or attempt == self._attempts:
                        raise ResourceError(
                            f"JDBC sink (exactly once): committing prepared transaction {gid!r} at "
                            f"{self._session.address} failed: {str(error).strip()}; it stays "
                            f"prepared and a restored job commits it"
                        ) from error
                    time.sleep(attempt)

    @staticmethod
    def finish(cursor: Any, gid: str, verb: str) -> None:
        psycopg2 = psycopg2_module()
        try:
            cursor.execute(f"{verb} PREPARED {quote_literal(gid)}")
        except psycopg2.Error as error:
            if getattr(error, "pgcode", None) != _UNDEFINED_OBJECT:
                raise
            logger.debug("prepared transaction %s was already finished", gid)

    def close(self) -> None:
        self._session.discard()


def register_writer(sink: Any, writer: TransactionalJdbcWriter | None) -> None:
    """The writer of this task thread, told what the sink committed (commit runs on the writer's thread)."""
    sink._committers.writer = writer


def committed(sink: Any, gids: list[str]) -> None:
    writer = getattr(sink._committers, "writer", None)
    if writer is not None:
        writer.committed(gids)


def close_committer(sink: Any) -> None:
    committer = getattr(sink._committers, "committer", None)
    if committer is not None:
        committer.close()
        sink._committers.committer = None
