"""PostgreSQL change data capture (`PostgresSource`, named after Flink CDC's `PostgreSQLSource` builder): an
initial consistent snapshot of the chosen tables, then every change after it from a logical replication slot
(`pgoutput`), as PyFlink changelog rows — `Row`s named by the table's columns, with RowKind +I, -U/+U, -D.

    source = (PostgresSource.builder()
              .hostname("127.0.0.1").port(5432).database("shop").username("postgres").password("...")
              .table_list("public.orders", "public.customers")
              .slot_name("orders_cdc")
              .build())
    env.enable_checkpointing(1000)
    env.from_source(source, WatermarkStrategy.no_watermarks(), "orders").print()

Guarantees (docs/connectors/postgres.md): the position in the slot (an LSN, plus the changes already emitted of
the transaction in progress) is part of every checkpoint and confirmed to the server (`confirmed_flush_lsn`) only
when that checkpoint completes, so the slot keeps whatever a restore needs: the changes are emitted exactly once
across failures, also during the initial snapshot, which a restore resumes after the last key it emitted
(`postgres_snapshot`; tables without a primary key cannot resume: their snapshot is taken again). A replication slot that disappeared, or moved past the checkpoint's position, fails the job naming it:
the source never silently restarts from "now".
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.postgres_client import DEFAULT_PORT, PostgresAddress
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

__all__ = ["ChangelogMode", "PostgresSource", "PostgresSourceBuilder", "PostgresSplit", "StartupOptions"]


class StartupMode(enum.Enum):
    INITIAL = "initial"  # snapshot the tables, then follow the slot
    LATEST_OFFSET = "latest-offset"  # no snapshot: changes from now on (or from an existing slot's position)


@dataclass(frozen=True)
class StartupOptions:
    """Where a job without a checkpoint starts (Flink CDC's StartupOptions)."""

    startup_mode: StartupMode

    @staticmethod
    def initial() -> StartupOptions:
        return StartupOptions(StartupMode.INITIAL)

    @staticmethod
    def latest() -> StartupOptions:
        return StartupOptions(StartupMode.LATEST_OFFSET)


class ChangelogMode(enum.Enum):
    """Flink CDC's `changelog-mode`: ALL emits -U before +U and whole -D rows, and needs REPLICA IDENTITY FULL on
    every table (PostgreSQL sends old values only then); UPSERT emits +I, +U and -D carrying the key columns."""

    ALL = "all"
    UPSERT = "upsert"


class SnapshotPhase(enum.Enum):
    SNAPSHOT = "snapshot"
    STREAM = "stream"


@dataclass(frozen=True)
class PostgresSplit:
    """The source's one split: the slot and where in it the job is.

    `lsn`: every transaction whose commit ends at or before it was emitted; `xact_lsn`/`skip`: of the transaction
    being emitted at the checkpoint (its final LSN), how many changes were emitted already. `slot_created`: this
    job created the slot (a fresh job finds none; a restore needs it). `passes` and `progress`: the snapshot
    passes so far and, in the SNAPSHOT phase, the table and last key read (`postgres_snapshot`): a restore goes
    on from there, and the stream replays the passes' span without repeating what they read."""

    split_id: str
    phase: SnapshotPhase
    lsn: int = 0
    xact_lsn: int = 0
    skip: int = 0
    slot_created: bool = False
    passes: tuple = ()
    progress: tuple | None = None


@dataclass(frozen=True)
class PostgresSource(Source[PostgresSplit]):
    """A picklable description (module docstring); build it with `PostgresSource.builder()`."""

    address: PostgresAddress
    tables: tuple[str, ...]
    slot_name: str
    publication_name: str
    startup_options: StartupOptions = field(default_factory=StartupOptions.initial)
    changelog_mode: ChangelogMode = ChangelogMode.ALL
    connect_timeout_s: float = 30.0
    fail_on_schema_change: bool = False
    status_interval_s: float = 10.0

    @staticmethod
    def builder() -> PostgresSourceBuilder:
        return PostgresSourceBuilder()

    def get_boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism: int) -> list[PostgresSplit]:
        initial = self.startup_options.startup_mode is StartupMode.INITIAL
        return [
            PostgresSplit(f"postgres:{self.slot_name}", SnapshotPhase.SNAPSHOT if initial else SnapshotPhase.STREAM)
        ]

    def create_reader(self, task_info: TaskInfo) -> SourceReader[PostgresSplit]:
        from fluvial.datastream.connectors.postgres_reader import PostgresChangeReader

        return PostgresChangeReader(self, getattr(task_info, "attempt_number", 0))

    def max_parallelism(self) -> int:
        return 1  # one replication slot is read by one connection

    def default_name(self) -> str:
        return f"PostgreSQL CDC {self.address.address}"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


class PostgresSourceBuilder:
    """Flink CDC's builder names, in snake case; `table_list` entries are `schema.table` (`public` if no schema)."""

    def __init__(self) -> None:
        self._host = "127.0.0.1"
        self._port = DEFAULT_PORT
        self._database: str | None = None
        self._user: str | None = None
        self._password: str | None = None
        self._schemas: list[str] = []
        self._tables: list[str] = []
        self._slot = "flink"
        self._publication: str | None = None
        self._startup = StartupOptions.initial()
        self._changelog_mode = ChangelogMode.ALL
        self._timeout = 30.0
        self._fail_on_schema_change = False
        self._plugin = "pgoutput"

    def hostname(self, hostname: str) -> PostgresSourceBuilder:
        self._host = hostname
        return self

    def port(self, port: int) -> PostgresSourceBuilder:
        self._port = port
        return self

    def database(self, database: str) -> PostgresSourceBuilder:
        self._database = database
        return self

    def username(self, username: str) -> PostgresSourceBuilder:
        self._user = username
        return self

    def password(self, password: str) -> PostgresSourceBuilder:
        self._password = password
        return self

    def schema_list(self, *schemas: str) -> PostgresSourceBuilder:
        """The schema of `table_list` entries given without one (default `public`)."""
        self._schemas = list(schemas)
        return self

    def table_list(self, *tables: str) -> PostgresSourceBuilder:
        self._tables = list(tables)
        return self

    def slot_name(self, slot_name: str) -> PostgresSourceBuilder:
        self._slot = slot_name
        return self

    def publication_name(self, publication_name: str) -> PostgresSourceBuilder:
        """The publication the slot streams (created for the tables if missing; default `<slot>_publication`)."""
        self._publication = publication_name
        return self

    def decoding_plugin_name(self, name: str) -> PostgresSourceBuilder:
        self._plugin = name
        return self

    def startup_options(self, options: StartupOptions) -> PostgresSourceBuilder:
        self._startup = options
        return self

    def changelog_mode(self, mode: ChangelogMode | str) -> PostgresSourceBuilder:
        try:
            self._changelog_mode = ChangelogMode(mode.value if isinstance(mode, ChangelogMode) else mode)
        except ValueError:
            raise InvalidJobError(f"changelog mode {mode!r} is unknown; use 'all' or 'upsert'") from None
        return self

    def connect_timeout(self, seconds: float) -> PostgresSourceBuilder:
        self._timeout = seconds
        return self

    def fail_on_schema_change(self, fail: bool = True) -> PostgresSourceBuilder:
        """Fail the job at a table's schema change instead of logging it and emitting rows of the new shape."""
        self._fail_on_schema_change = fail
        return self

    def build(self) -> PostgresSource:
        if self._plugin != "pgoutput":
            raise InvalidJobError(
                f"decoding plugin {self._plugin!r} is not supported; the source reads 'pgoutput', "
                f"PostgreSQL's built-in plugin"
            )
        if not self._database:
            raise InvalidJobError("PostgresSource needs a database: .database('name')")
        if not self._tables:
            raise InvalidJobError("PostgresSource needs the tables to capture: .table_list('public.orders', ...)")
        default_schema = self._schemas[0] if len(self._schemas) == 1 else "public"
        tables = []
        for table in self._tables:
            schema, _, name = table.rpartition(".")
            schema = schema or default_schema
            if not (_IDENTIFIER.fullmatch(schema) and _IDENTIFIER.fullmatch(name)):
                raise InvalidJobError(f"table {table!r} is not a plain schema.table name (letters, digits, '_')")
            tables.append(f"{schema}.{name}")
        for what, name in (("slot", self._slot), ("publication", self._publication or self._slot)):
            if not re.fullmatch(r"[a-z0-9_]{1,63}", name):
                raise InvalidJobError(
                    f"{what} name {name!r} must be 1-63 lower-case letters, digits or '_' "
                    f"(PostgreSQL's rule for replication slots)"
                )
        if self._timeout <= 0:
            raise InvalidJobError(f"connect timeout must be positive, got {self._timeout}")
        address = PostgresAddress(self._host, int(self._port), self._database, self._user, self._password)
        return PostgresSource(
            address,
            tuple(tables),
            self._slot,
            self._publication or f"{self._slot}_publication",
            self._startup,
            self._changelog_mode,
            float(self._timeout),
            self._fail_on_schema_change,
        )
