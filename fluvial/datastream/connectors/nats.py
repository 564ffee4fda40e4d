"""NATS JetStream: a source that reads a stream through durable pull consumers and a sink that publishes to it
(`fluvial.datastream.connectors.nats`; client nats-py, which `pip install 'fluvial[nats]'` brings).

    source = NatsSource.builder() \\
        .set_servers("nats://127.0.0.1:4222") \\
        .set_stream("ORDERS").set_subjects("orders.eu", "orders.us") \\
        .set_consumer_name("order-totals") \\
        .set_starting_position(NatsStartingPosition.earliest()) \\
        .set_deserialization_schema(SimpleStringSchema()) \\
        .build()
    env.from_source(source, WatermarkStrategy.no_watermarks(), "orders")

    sink = NatsSink.builder().set_servers("nats://127.0.0.1:4222").set_subject("totals") \\
        .set_serialization_schema(SimpleStringSchema()) \\
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE).build()
    stream.sink_to(sink)

Guarantees (docs/connectors/nats.md has the whole story):
- Source: exactly-once into the job. One split per subject filter, each read by its own durable pull consumer
  (`<consumer name>-<split index>`, AckPolicy.ALL; EXPLICIT on a workqueue stream). A checkpoint records each split's last emitted stream
  sequence; a restored reader recreates the consumer at the next sequence. A message is acknowledged only when
  the checkpoint covering it completes, so a WorkQueue stream never drops what a restore still needs.
- Sink, EXACTLY_ONCE: the records of a checkpoint are published when it completes, each with a `Nats-Msg-Id`
  made of the job, subtask, checkpoint number and position; a publish repeated after a restore is dropped by
  the stream's duplicate window (default 2 minutes: restoring later than that after a checkpoint completed can
  duplicate its records). AT_LEAST_ONCE publishes at once and waits for every acknowledgement at each
  checkpoint; NONE publishes without waiting.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.serialization import DeserializationSchema, SerializationSchema
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.nats_connection import NatsConnectError, NatsConnectionOptions
from fluvial.datastream.connectors.sink import Sink, SinkWriter
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

__all__ = [
    "DeliveryGuarantee",
    "NatsConnectError",
    "NatsConnectionOptions",
    "NatsDeserializationError",
    "NatsSink",
    "NatsSinkBuilder",
    "NatsSource",
    "NatsSourceBuilder",
    "NatsSplit",
    "NatsStartingPosition",
]

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")  # JetStream stream and consumer names: no '.', '*', '>', spaces


class NatsDeserializationError(InvalidJobError):
    """A message's payload could not be deserialized; the message names the subject and stream sequence."""


class StartingKind(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    SEQUENCE = "sequence"
    TIMESTAMP = "timestamp"
    COMMITTED = "committed"


@dataclass(frozen=True, slots=True)
class NatsStartingPosition:
    """Where a split starts when no checkpoint says (Kafka's OffsetsInitializer, for stream sequences)."""

    kind: StartingKind
    value: int = 0
    fallback: NatsStartingPosition | None = None

    @staticmethod
    def earliest() -> NatsStartingPosition:
        """The first message the stream still holds."""
        return NatsStartingPosition(StartingKind.EARLIEST)

    @staticmethod
    def latest() -> NatsStartingPosition:
        """Only messages published after the split started."""
        return NatsStartingPosition(StartingKind.LATEST)

    @staticmethod
    def sequence(sequence: int) -> NatsStartingPosition:
        """The first message at or after stream sequence `sequence` (1-based)."""
        if sequence < 1:
            raise InvalidJobError(f"stream sequences start at 1, got {sequence}")
        return NatsStartingPosition(StartingKind.SEQUENCE, sequence)

    @staticmethod
    def timestamp(millis: int) -> NatsStartingPosition:
        """The first message stored at or after `millis` (ms since the epoch)."""
        return NatsStartingPosition(StartingKind.TIMESTAMP, millis)

    @staticmethod
    def committed(fallback: NatsStartingPosition | None = None) -> NatsStartingPosition:
        """After what the split's durable consumer acknowledged last (an earlier run of the job), else
        `fallback` (default: earliest)."""
        return NatsStartingPosition(StartingKind.COMMITTED, 0, fallback or NatsStartingPosition.earliest())


@dataclass(frozen=True, slots=True)
class NatsSplit:
    """One subject filter of a stream. `position`: stream sequence of the last message emitted (-1: none yet,
    start by the starting position); `stop_sequence`: for a bounded source, the stream's last sequence when the
    split first started (resolved then, and kept through restores)."""

    split_id: str
    index: int
    subject_filter: str
    position: int = -1
    stop_sequence: int | None = None


@dataclass(frozen=True, slots=True)
class NatsSourceSettings:
    """What a reader is built from (picklable)."""

    connection: NatsConnectionOptions
    stream: str
    consumer_name: str
    starting_position: NatsStartingPosition
    deserializer: DeserializationSchema
    bounded: bool = False
    fetch_batch: int = 1000
    fetch_timeout: float = 0.5
    ack_wait: float = 1800.0
    max_buffered_batches: int = 8


@dataclass(frozen=True, slots=True)
class NatsSource(Source[NatsSplit]):
    settings: NatsSourceSettings
    subjects: tuple[str, ...] = ()

    @staticmethod
    def builder() -> NatsSourceBuilder:
        return NatsSourceBuilder()

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED if self.settings.bounded else Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism: int) -> list[NatsSplit]:
        filters = self.subjects or ("",)
        return [
            NatsSplit(f"{self.settings.stream}:{subject or '>'}", index, subject)
            for index, subject in enumerate(filters)
        ]

    def create_reader(self, task_info: TaskInfo) -> SourceReader[NatsSplit]:
        from fluvial.datastream.connectors.nats_reader import NatsSourceReader

        return NatsSourceReader(self.settings, task_info)

    def default_name(self) -> str:
        return f"NATS: {self.settings.stream}"


def _connection_fields() -> dict[str, Any]:
    return {
        "servers": ("nats://127.0.0.1:4222",),
        "user": None,
        "password": None,
        "token": None,
        "credentials": None,
        "connect_timeout": 10.0,
        "request_timeout": 10.0,
    }


class _ConnectionBuilder:
    """The connection part both builders share."""

    def __init__(self) -> None:
        self._connection = _connection_fields()

    def set_servers(self, *servers: str) -> Any:
        """One or more `nats://host:port` URLs (a comma-separated string works too)."""
        urls = [url.strip() for server in servers for url in server.split(",") if url.strip()]
        self._connection["servers"] = tuple(urls)
        return self

    def set_credentials(self, user: str, password: str) -> Any:
        self._connection.update(user=user, password=password)
        return self

    def set_token(self, token: str) -> Any:
        self._connection["token"] = token
        return self

    def set_credentials_file(self, path: str) -> Any:
        """A `.creds` file (NATS decentralized authentication: a user JWT and its NKey seed)."""
        self._connection["credentials"] = path
        return self

    def set_connect_timeout(self, seconds: float) -> Any:
        """How long connecting may take before the job fails naming the servers (default 10 s)."""
        self._connection["connect_timeout"] = float(seconds)
        return self

    def set_request_timeout(self, seconds: float) -> Any:
        """How long one JetStream request (publish acknowledgement, consumer change) may take (default 10 s)."""
        self._connection["request_timeout"] = float(seconds)
        return self

    def _options(self) -> NatsConnectionOptions:
        return NatsConnectionOptions(**self._connection)


class NatsSourceBuilder(_ConnectionBuilder):
    def __init__(self) -> None:
        super().__init__()
        self._stream: str | None = None
        self._subjects: tuple[str, ...] = ()
        self._consumer: str | None = None
        self._start = NatsStartingPosition.earliest()
        self._deserializer: DeserializationSchema | None = None
        self._bounded = False
        self._tuning: dict[str, Any] = {}

    def set_stream(self, stream: str) -> NatsSourceBuilder:
        self._stream = stream
        return self

    def set_subjects(self, *subjects: str) -> NatsSourceBuilder:
        """Subject filters (wildcards allowed); each is a split, read by its own consumer. None: the whole
        stream as one split."""
        self._subjects = tuple(subjects)
        return self

    def set_consumer_name(self, name: str) -> NatsSourceBuilder:
        """The durable consumers' name prefix (`<name>-<split index>`); keep it when the job runs again."""
        self._consumer = name
        return self

    def set_starting_position(self, position: NatsStartingPosition) -> NatsSourceBuilder:
        self._start = position
        return self

    def set_deserialization_schema(self, schema: DeserializationSchema) -> NatsSourceBuilder:
        self._deserializer = schema
        return self

    def set_value_only_deserializer(self, schema: DeserializationSchema) -> NatsSourceBuilder:
        """KafkaSource's name for the same thing."""
        return self.set_deserialization_schema(schema)

    def set_bounded(self) -> NatsSourceBuilder:
        """Stop each split at the stream's last sequence when it first starts (a batch job over a stream)."""
        self._bounded = True
        return self

    def set_fetch_batch_size(self, messages: int) -> NatsSourceBuilder:
        self._tuning["fetch_batch"] = int(messages)
        return self

    def set_ack_wait(self, seconds: float) -> NatsSourceBuilder:
        """The consumers' ack wait (default 30 min): keep it above the checkpoint interval, or the server
        redelivers what waits for a checkpoint (the reader drops those redeliveries, but they cost traffic)."""
        self._tuning["ack_wait"] = float(seconds)
        return self

    def build(self) -> NatsSource:
        if not self._stream:
            raise InvalidJobError("NatsSource needs a stream: set_stream('ORDERS')")
        if not _NAME.match(self._stream):
            raise InvalidJobError(f"NATS stream name {self._stream!r} may hold only letters, digits, '-' and '_'")
        if not self._consumer:
            raise InvalidJobError(
                "NatsSource needs a consumer name (the prefix of its durable consumers, kept when "
                "the job runs again): set_consumer_name('my-job')"
            )
        if not _NAME.match(self._consumer):
            raise InvalidJobError(f"NATS consumer name {self._consumer!r} may hold only letters, digits, '-' and '_'")
        if self._deserializer is None:
            raise InvalidJobError("NatsSource needs a deserializer: set_deserialization_schema(SimpleStringSchema())")
        if len(set(self._subjects)) != len(self._subjects):
            raise InvalidJobError(f"NatsSource subjects {self._subjects} name a filter twice")
        if self._tuning.get("fetch_batch", 1) < 1:
            raise ConfigurationError("the fetch batch size must be at least 1 message")
        settings = NatsSourceSettings(
            self._options(), self._stream, self._consumer, self._start, self._deserializer, self._bounded
        )
        return NatsSource(replace(settings, **self._tuning), self._subjects)


# ---------------------------------------------------------------------------------------------- sink


@dataclass(frozen=True, slots=True)
class NatsSinkSettings:
    connection: NatsConnectionOptions
    subject: str | None
    subject_selector: Callable[[Any], str] | None
    serializer: SerializationSchema
    guarantee: DeliveryGuarantee
    max_in_flight: int = 4096


@dataclass(frozen=True, slots=True)
class NatsCommittable:
    """The messages of one subtask's checkpoint, published when it completes: (subject, payload) pairs and the
    `Nats-Msg-Id` prefix they carry (`<prefix>-<position>`)."""

    msg_id_prefix: str
    messages: tuple[tuple[str, bytes], ...] = field(repr=False)

    def __repr__(self) -> str:
        return f"NatsCommittable({self.msg_id_prefix!r}, {len(self.messages)} messages)"


@dataclass(frozen=True, slots=True)
class NatsSink(Sink):
    settings: NatsSinkSettings

    @staticmethod
    def builder() -> NatsSinkBuilder:
        return NatsSinkBuilder()

    def create_writer(self, task_info: TaskInfo, restored_state: list[Any] | None = None) -> SinkWriter:
        from fluvial.datastream.connectors.nats_writer import NatsSinkWriter

        return NatsSinkWriter(self.settings, task_info, restored_state, self)

    def commit(self, committables: list[Any]) -> None:
        """Publish each committable's messages with their ids: a repeat within the duplicate window is dropped
        by the server, so committing again after a restore is harmless."""
        from fluvial.datastream.connectors.nats_writer import publish_committables

        publish_committables(self, committables)

    def default_name(self) -> str:
        return f"NATS: {self.settings.subject or 'selected subjects'}"


class NatsSinkBuilder(_ConnectionBuilder):
    def __init__(self) -> None:
        super().__init__()
        self._subject: str | None = None
        self._selector: Callable[[Any], str] | None = None
        self._serializer: SerializationSchema | None = None
        self._guarantee = DeliveryGuarantee.AT_LEAST_ONCE

    def set_subject(self, subject: str) -> NatsSinkBuilder:
        self._subject = subject
        return self

    def set_subject_selector(self, selector: Callable[[Any], str]) -> NatsSinkBuilder:
        """The subject of each record (a picklable function of the record)."""
        self._selector = selector
        return self

    def set_serialization_schema(self, schema: SerializationSchema) -> NatsSinkBuilder:
        self._serializer = schema
        return self

    def set_value_serialization_schema(self, schema: SerializationSchema) -> NatsSinkBuilder:
        return self.set_serialization_schema(schema)

    def set_delivery_guarantee(self, guarantee: DeliveryGuarantee) -> NatsSinkBuilder:
        self._guarantee = guarantee
        return self

    def build(self) -> NatsSink:
        if (self._subject is None) == (self._selector is None):
            raise InvalidJobError("NatsSink needs exactly one of set_subject('out') and set_subject_selector(fn)")
        if self._subject is not None and (not self._subject or any(c in self._subject for c in " *>")):
            raise InvalidJobError(f"NATS subject {self._subject!r} must be non-empty, without spaces or wildcards")
        if self._serializer is None:
            raise InvalidJobError("NatsSink needs a serializer: set_serialization_schema(SimpleStringSchema())")
        if not isinstance(self._guarantee, DeliveryGuarantee):
            raise InvalidJobError(f"set_delivery_guarantee takes a DeliveryGuarantee, got {self._guarantee!r}")
        return NatsSink(
            NatsSinkSettings(self._options(), self._subject, self._selector, self._serializer, self._guarantee)
        )
