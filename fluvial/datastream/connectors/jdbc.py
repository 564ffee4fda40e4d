"""PyFlink's `pyflink.datastream.connectors.jdbc` for PostgreSQL: `JdbcSink.sink(sql, type_info, connection
options, execution options)` writes each record by a DML statement with `?` placeholders, in batches, with
retries; plus Flink's exactly-once sink (`JdbcSink.exactly_once_sink`, Java's `JdbcSink.exactlyOnceSink`), whose
writes of a checkpoint are one transaction, prepared (`PREPARE TRANSACTION`) at the checkpoint and committed
(`COMMIT PREPARED`) when it completes.

Guarantees (docs/connectors/jdbc.md):
- `sink`: at least once. Every batch is committed before a checkpoint completes; after a failure the records
  since the last checkpoint are written again, so the statement should be an idempotent upsert
  (`INSERT ... ON CONFLICT (key) DO UPDATE`).
- `exactly_once_sink`: exactly once for any statement. A restored job commits the prepared transactions its
  checkpoint recorded and rolls back every other prepared transaction of the sink (prepared for a checkpoint
  that never completed) when its writers are created.

Records are Rows or tuples whose fields match `type_info` (a RowTypeInfo) in order; the sink does not look at
a Row's RowKind (as Flink's DataStream JDBC sink: the statement decides what a record does).
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.postgres_client import PostgresAddress, parse_jdbc_url
from fluvial.datastream.connectors.sink import Sink, SinkWriter

__all__ = ["JdbcConnectionOptions", "JdbcExactlyOnceOptions", "JdbcExecutionOptions", "JdbcSink"]

POSTGRES_DRIVER = "org.postgresql.Driver"


@dataclass(frozen=True)
class JdbcConnectionOptions:
    """Where the database is (PyFlink's JdbcConnectionOptions). Only PostgreSQL URLs are accepted."""

    url: str
    driver_name: str | None = None
    user_name: str | None = None
    password: str | None = None
    connection_check_timeout_seconds: int = 60

    def __post_init__(self) -> None:
        parse_jdbc_url(self.url)
        if self.driver_name not in (None, POSTGRES_DRIVER):
            raise InvalidJobError(
                f"JDBC driver {self.driver_name!r} is not supported: fluvial's JDBC sink speaks "
                f"to PostgreSQL; use {POSTGRES_DRIVER!r} or leave the driver name unset"
            )
        if self.connection_check_timeout_seconds <= 0:
            raise InvalidJobError(
                f"connection check timeout must be positive, got {self.connection_check_timeout_seconds} s"
            )

    def get_db_url(self) -> str:
        return self.url

    def get_driver_name(self) -> str | None:
        return self.driver_name

    def get_user_name(self) -> str | None:
        return self.user_name

    def get_password(self) -> str | None:
        return self.password

    def get_connection_check_timeout_seconds(self) -> int:
        return self.connection_check_timeout_seconds

    def address(self) -> PostgresAddress:
        return parse_jdbc_url(self.url).with_login(self.user_name, self.password)

    class JdbcConnectionOptionsBuilder:
        def __init__(self) -> None:
            self._url: str | None = None
            self._driver: str | None = None
            self._user: str | None = None
            self._password: str | None = None
            self._timeout = 60

        def with_url(self, url: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._url = url
            return self

        def with_driver_name(self, driver_name: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._driver = driver_name
            return self

        def with_user_name(self, user_name: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._user = user_name
            return self

        def with_password(self, password: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._password = password
            return self

        def with_connection_check_timeout_seconds(
            self, seconds: int
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._timeout = seconds
            return self

        def build(self) -> JdbcConnectionOptions:
            if self._url is None:
                raise InvalidJobError("JdbcConnectionOptions need a URL: .with_url('jdbc:postgresql://host:port/db')")
            return JdbcConnectionOptions(self._url, self._driver, self._user, self._password, self._timeout)


@dataclass(frozen=True)
class JdbcExecutionOptions:
    """How the sink writes (PyFlink's JdbcExecutionOptions; Flink's defaults): a batch is executed when it holds
    `batch_size` records, when `batch_interval_ms` passed since the last one (0: only by size and at checkpoints),
    and at every checkpoint; a failed batch is retried `max_retries` times on a new connection."""

    batch_interval_ms: int = 0
    batch_size: int = 5000
    max_retries: int = 3

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise InvalidJobError(f"JDBC batch size must be at least 1, got {self.batch_size}")
        if self.batch_interval_ms < 0 or self.max_retries < 0:
            raise InvalidJobError(
                f"JDBC batch interval and max retries must not be negative, got "
                f"{self.batch_interval_ms} ms and {self.max_retries}"
            )

    def get_batch_interval_ms(self) -> int:
        return self.batch_interval_ms

    def get_batch_size(self) -> int:
        return self.batch_size

    def get_max_retries(self) -> int:
        return self.max_retries

    @staticmethod
    def defaults() -> JdbcExecutionOptions:
        return JdbcExecutionOptions()

    @staticmethod
    def builder() -> JdbcExecutionOptions.Builder:
        return JdbcExecutionOptions.Builder()

    class Builder:
        def __init__(self) -> None:
            self._size, self._interval, self._retries = 5000, 0, 3

        def with_batch_size(self, size: int) -> JdbcExecutionOptions.Builder:
            self._size = size
            return self

        def with_batch_interval_ms(self, interval_ms: int) -> JdbcExecutionOptions.Builder:
            self._interval = interval_ms
            return self

        def with_max_retries(self, max_retries: int) -> JdbcExecutionOptions.Builder:
            self._retries = max_retries
            return self

        def build(self) -> JdbcExecutionOptions:
            return JdbcExecutionOptions(self._interval, self._size, self._retries)


@dataclass(frozen=True)
class JdbcExactlyOnceOptions:
    """The exactly-once sink's options (Flink's JdbcExactlyOnceOptions, for PostgreSQL's prepared transactions).

    `transaction_id_prefix` names the sink's prepared transactions (`PREFIX-SUBTASK-...`); a starting writer rolls
    back every prepared transaction of its prefix and subtask that its checkpoint did not record, so two jobs
    writing to one database at once need different prefixes (default: derived from the statement).
    `recover_and_rollback` (Flink's `recoveredAndRollback`): do that roll-back at all. `max_commit_attempts`:
    how often a commit that lost its connection is tried before the job fails."""

    transaction_id_prefix: str | None = None
    recover_and_rollback: bool = True
    max_commit_attempts: int = 3

    def __post_init__(self) -> None:
        if self.max_commit_attempts < 1:
            raise InvalidJobError(f"max commit attempts must be at least 1, got {self.max_commit_attempts}")
        if self.transaction_id_prefix is not None and not re.fullmatch(
            r"[A-Za-z0-9_.:]{1,100}", self.transaction_id_prefix
        ):
            raise InvalidJobError(
                f"transaction id prefix {self.transaction_id_prefix!r} must be 1-100 letters, digits, '_', '.' or ':'"
            )

    def is_recovered_and_rollback(self) -> bool:
        return self.recover_and_rollback

    def get_max_commit_attempts(self) -> int:
        return self.max_commit_attempts

    @staticmethod
    def defaults() -> JdbcExactlyOnceOptions:
        return JdbcExactlyOnceOptions()

    @staticmethod
    def builder() -> JdbcExactlyOnceOptions.Builder:
        return JdbcExactlyOnceOptions.Builder()

    class Builder:
        def __init__(self) -> None:
            self._prefix: str | None = None
            self._rollback = True
            self._attempts = 3

        def with_transaction_id_prefix(self, prefix: str) -> JdbcExactlyOnceOptions.Builder:
            self._prefix = prefix
            return self

        def with_recovered_and_rollback(self, recovered_and_rollback: bool) -> JdbcExactlyOnceOptions.Builder:
            self._rollback = recovered_and_rollback
            return self

        def with_max_commit_attempts(self, attempts: int) -> JdbcExactlyOnceOptions.Builder:
            self._attempts = attempts
            return self

        def build(self) -> JdbcExactlyOnceOptions:
            return JdbcExactlyOnceOptions(self._prefix, self._rollback, self._attempts)


def to_pyformat(sql: str) -> tuple[str, int]:
    """A JDBC statement's `?` placeholders as psycopg2's `%s` (and a literal `%` as `%%`), with the number of
    placeholders; `?` inside quoted literals, quoted identifiers and comments stays as it is."""
    out: list[str] = []
    count = 0
    for token in re.finditer(
        r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\?|%|[^'\"?%/-]+|.", sql, re.DOTALL
    ):
        text = token.group(0)
        if text == "?":
            out.append("%s")
            count += 1
        else:
            out.append(text.replace("%", "%%"))
    return "".join(out), count


class JdbcSink(Sink):
    """A PostgreSQL sink (module docstring); build it with `JdbcSink.sink(...)` or `JdbcSink.exactly_once_sink(...)`
    and attach it with `add_sink` (as in PyFlink) or `sink_to`."""

    def __init__(
        self,
        sql: str,
        type_info: Any,
        connection_options: JdbcConnectionOptions,
        execution_options: JdbcExecutionOptions,
        guarantee: DeliveryGuarantee,
        exactly_once_options: JdbcExactlyOnceOptions | None = None,
    ) -> None:
        from fluvial.common.typeinfo import RowTypeInfo

        if not isinstance(connection_options, JdbcConnectionOptions):
            raise InvalidJobError(
                f"JdbcSink needs JdbcConnectionOptions (JdbcConnectionOptions."
                f"JdbcConnectionOptionsBuilder().with_url(...).build()), got {connection_options!r}"
            )
        if not isinstance(execution_options, JdbcExecutionOptions):
            raise InvalidJobError(
                f"JdbcSink's execution options must be JdbcExecutionOptions, got {execution_options!r}"
            )
        if not isinstance(type_info, RowTypeInfo):
            raise InvalidJobError(
                f"JdbcSink needs the statement's field types as a RowTypeInfo (Types.ROW([...])), got {type_info!r}"
            )
        statement, placeholders = to_pyformat(sql)
        if placeholders != type_info.get_arity():
            raise InvalidJobError(
                f"the JDBC statement has {placeholders} '?' placeholders but the type info has "
                f"{type_info.get_arity()} fields; give one field per placeholder: {sql!r}"
            )
        self.sql = sql
        self.statement = statement
        self.type_info = type_info
        self.connection_options = connection_options
        self.execution_options = execution_options
        self.guarantee = guarantee
        self.exactly_once_options = exactly_once_options or JdbcExactlyOnceOptions()
        self._committers = threading.local()

    # -- PyFlink's factory methods ---------------------------------------------------------------------------------

    @staticmethod
    def sink(
        sql: str,
        type_info: Any,
        jdbc_connection_options: JdbcConnectionOptions,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
    ) -> JdbcSink:
        """At-least-once: batches committed at least at every checkpoint (PyFlink's `JdbcSink.sink`)."""
        return JdbcSink(
            sql,
            type_info,
            jdbc_connection_options,
            jdbc_execution_options or JdbcExecutionOptions.defaults(),
            DeliveryGuarantee.AT_LEAST_ONCE,
        )

    @staticmethod
    def exactly_once_sink(
        sql: str,
        type_info: Any,
        jdbc_connection_options: JdbcConnectionOptions,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
        jdbc_exactly_once_options: JdbcExactlyOnceOptions | None = None,
    ) -> JdbcSink:
        """Exactly-once: one transaction per checkpoint, prepared at the checkpoint and committed when it
        completes (Flink's `JdbcSink.exactlyOnceSink`). As in Flink, `max_retries` must be 0: a statement that
        failed aborted the checkpoint's transaction, so the job fails over and writes it again instead."""
        options = jdbc_execution_options or JdbcExecutionOptions(max_retries=0)
        if options.max_retries != 0:
            raise InvalidJobError(
                f"the exactly-once JDBC sink cannot retry a statement inside its checkpoint's "
                f"transaction (max_retries={options.max_retries}); set "
                f"JdbcExecutionOptions.builder().with_max_retries(0): a failure makes the job "
                f"fail over and write the checkpoint's records again"
            )
        return JdbcSink(
            sql, type_info, jdbc_connection_options, options, DeliveryGuarantee.EXACTLY_ONCE, jdbc_exactly_once_options
        )

    # -- the Sink contract -----------------------------------------------------------------------------------------

    def transaction_prefix(self) -> str:
        prefix = self.exactly_once_options.transaction_id_prefix
        if prefix is None:
            prefix = "fluvial-" + hashlib.sha1(self.sql.encode()).hexdigest()[:12]
        return prefix

    def create_writer(self, task_info: TaskInfo, restored_state: list[Any] | None = None) -> SinkWriter:
        from fluvial.datastream.connectors import jdbc_writer

        if self.guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            return jdbc_writer.TransactionalJdbcWriter(self, task_info, restored_state)
        return jdbc_writer.BatchingJdbcWriter(self, task_info)

    def commit(self, committables: list[Any]) -> None:
        """`COMMIT PREPARED` each recorded transaction; one no longer prepared was committed before (idempotent)."""
        if not committables:
            return
        from fluvial.datastream.connectors import jdbc_writer

        committer = getattr(self._committers, "committer", None)
        if committer is None:
            committer = self._committers.committer = jdbc_writer.PreparedTransactions(self)
        committer.commit(committables)
        jdbc_writer.committed(self, committables)

    def default_name(self) -> str:
        return "JDBC Sink"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_committers"]  # connections stay in the process that opened them
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._committers = threading.local()

    def __repr__(self) -> str:
        return f"JdbcSink({self.sql!r}, {self.guarantee.name}, {self.connection_options.address().address})"
