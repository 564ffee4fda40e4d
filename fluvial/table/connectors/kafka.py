"""`'connector' = 'kafka'`: a topic as a table, over fluvial's KafkaSource and KafkaSink, with Flink's options.

- what: `topic` (one or several, `;`-separated) or `topic-pattern` (a source's regular expression);
  `properties.bootstrap.servers` (required), `properties.group.id`, and every other `properties.*` handed to the
  Kafka client as is;
- where a source starts: `scan.startup.mode` = `group-offsets` (the default: the group's committed offsets,
  `properties.auto.offset.reset` for partitions without one), `earliest-offset`, `latest-offset`, `timestamp`
  (`scan.startup.timestamp-millis`) or `specific-offsets` (`scan.startup.specific-offsets` =
  `'partition:0,offset:42;partition:1,offset:300'`); and where it ends: `scan.bounded.mode` = `unbounded` (the
  default), `latest-offset`, `group-offsets`, `timestamp` or `specific-offsets` (`scan.bounded.*`);
  `scan.topic-partition-discovery.interval` (default 5 min, `0` never) finds new partitions and topics. Offsets
  are the source's checkpointed state, so a restored job reads each record once;
- how a message is a row: `format` (or `value.format`) for the value; `key.format` with `key.fields` (`'a;b'`)
  for the key, `key.fields-prefix` for key columns named apart, `value.fields-include` = `ALL` (default) or
  `EXCEPT_KEY` (`kafka_formats.py` has the formats: json, csv, raw, avro, avro-confluent);
- how a sink writes: `sink.partitioner` = `default` (Kafka's: by key hash, or sticky without a key), `fixed`
  (subtask i writes partition i mod n) or `round-robin`; `sink.delivery-guarantee` = `at-least-once` (the
  default), `none` or `exactly-once` (Kafka transactions committed with checkpoints, which needs
  `sink.transactional-id-prefix`); `sink.parallelism`, `scan.parallelism`.
- metadata columns (`col TYPE METADATA FROM 'key' [VIRTUAL]`): `topic`, `partition`, `offset`, `timestamp`,
  `timestamp-type`, `headers`, `leader-epoch` read; `timestamp` and `headers` also written.

The per-record functions are built once per reader and writer (`message_function`, `record_function`): a row
costs its format's decoding and the list it becomes, nothing more.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fluvial.common.row import RowKind, _create_row
from fluvial.common.serialization import SerializationSchema
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.kafka.serialization import (
    KafkaRecordDeserializationSchema,
    KafkaRecordSerializationSchema,
)
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.connectors.kafka_avro import AVRO_FORMATS, check_avro_format
from fluvial.table.connectors.kafka_formats import decoder, encoder, format_options
from fluvial.table.environment_settings import parse_duration_millis
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import ChangelogMode
from fluvial.table.types import DataType, DataTypes
from fluvial.table.values import cast_value, epoch_millis, from_epoch_millis

__all__ = ["KafkaFactory", "READABLE_METADATA", "WRITABLE_METADATA"]

_TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}


def _topic(m: Any) -> Any:
    return m.topic()


def _partition(m: Any) -> Any:
    return m.partition()


def _offset(m: Any) -> Any:
    return m.offset()


def _timestamp(m: Any) -> Any:
    kind, millis = m.timestamp()
    return from_epoch_millis(millis) if kind else None


def _timestamp_type(m: Any) -> Any:
    return _TIMESTAMP_TYPES.get(m.timestamp()[0], "NoTimestampType")


def _headers(m: Any) -> Any:
    return dict(m.headers() or ())


def _leader_epoch(m: Any) -> Any:
    return m.leader_epoch()


# key → (Flink's type of the value, how it is read from the client's message)
READABLE_METADATA: dict[str, tuple[DataType, Callable[[Any], Any]]] = {
    "topic": (DataTypes.STRING(False), _topic),
    "partition": (DataTypes.INT(False), _partition),
    "offset": (DataTypes.BIGINT(False), _offset),
    "timestamp": (DataTypes.TIMESTAMP_LTZ(3, False), _timestamp),
    "timestamp-type": (DataTypes.STRING(False), _timestamp_type),
    "headers": (DataTypes.MAP(DataTypes.STRING(), DataTypes.BYTES(), False), _headers),
    "leader-epoch": (DataTypes.INT(), _leader_epoch),
}
WRITABLE_METADATA = {"timestamp": READABLE_METADATA["timestamp"][0], "headers": READABLE_METADATA["headers"][0]}

_COMMON = {
    "topic",
    "properties.bootstrap.servers",
    "properties.group.id",
    "format",
    "value.format",
    "key.format",
    "key.fields",
    "key.fields-prefix",
    "value.fields-include",
    "sink.delivery-guarantee",
    "sink.transactional-id-prefix",
    "sink.parallelism",
    "scan.parallelism",
}
_KAFKA_ONLY = {
    "topic-pattern",
    "scan.startup.mode",
    "scan.startup.specific-offsets",
    "scan.startup.timestamp-millis",
    "scan.bounded.mode",
    "scan.bounded.specific-offsets",
    "scan.bounded.timestamp-millis",
    "scan.topic-partition-discovery.interval",
    "sink.partitioner",
}
_MODES = ("earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets")
_CONSUMER_ONLY = {"group.id", "auto.offset.reset", "isolation.level", "enable.auto.commit"}
_GUARANTEES = {
    "none": DeliveryGuarantee.NONE,
    "at-least-once": DeliveryGuarantee.AT_LEAST_ONCE,
    "exactly-once": DeliveryGuarantee.EXACTLY_ONCE,
}


@dataclass(frozen=True)
class Layout:
    """Which physical columns the message key and value carry, and in which formats."""

    key_format: str | None
    key_indexes: tuple[int, ...]
    key_names: tuple[str, ...]  # as the key format names them (key.fields-prefix removed)
    key_options: dict[str, str]
    value_format: str
    value_indexes: tuple[int, ...]
    value_options: dict[str, str]
    value_prefix: str


def layout(connector: str, context: ConnectorContext, key_fields: Sequence[str] | None = None) -> Layout:
    """The key and value of a table's messages from its options (`key_fields`: upsert-kafka's primary key)."""
    options = context.options
    names = context.names
    if "format" in options and "value.format" in options:
        raise ValidationException(
            f"'{connector}' takes 'format' or 'value.format', not both; keep one of them for the message value"
        )
    value_prefix = "" if "format" in options else "value."
    value_format = options.get("format", options.get("value.format"))
    if value_format is None:
        raise ValidationException(
            f"One or more required options are missing for '{connector}': 'format' (or 'value.format'), e.g. "
            "'format' = 'json'"
        )
    key_format = options.get("key.format")
    if key_fields is None:
        declared = options.get("key.fields")
        key_fields = [f.strip() for f in declared.split(";") if f.strip()] if declared else []
        if key_format is not None and not key_fields:
            raise ValidationException(
                f"A key format 'key.format' of '{connector}' needs the key's columns: 'key.fields' = 'col1;col2'"
            )
        if key_fields and key_format is None:
            raise ValidationException(
                f"'key.fields' of '{connector}' needs a format for the message key: 'key.format' = 'json'"
            )
    elif key_format is None:
        raise ValidationException(f"One or more required options are missing for '{connector}': key.format")
    for name in key_fields:
        if name not in names:
            raise ValidationException(
                f"Could not find the field '{name}' of 'key.fields' in the table schema of '{context.table_name}'; "
                f"the physical columns are {', '.join(names)}"
            )
    prefix = options.get("key.fields-prefix", "")
    include = options.get("value.fields-include", "ALL").upper()
    if include not in ("ALL", "EXCEPT_KEY"):
        raise ValidationException(f"'value.fields-include' is 'ALL' or 'EXCEPT_KEY', got '{include}'")
    if prefix:
        if include != "EXCEPT_KEY":
            raise ValidationException(
                "A key prefix 'key.fields-prefix' is only allowed with 'value.fields-include' = 'EXCEPT_KEY'; set it"
            )
        wrong = [n for n in key_fields if not n.startswith(prefix)]
        if wrong:
            raise ValidationException(
                f"All fields in 'key.fields' must be prefixed with '{prefix}' ('key.fields-prefix'); "
                f"{', '.join(wrong)} are not"
            )
    key_indexes = tuple(names.index(n) for n in key_fields)
    value_indexes = tuple(i for i in range(len(names)) if include == "ALL" or i not in key_indexes)
    if not value_indexes:
        raise ValidationException(
            f"The message value of '{context.table_name}' has no columns: with 'value.fields-include' = "
            "'EXCEPT_KEY' the table needs a column besides the key's"
        )
    key_names = tuple(n[len(prefix) :] for n in key_fields)
    key_options = format_options(connector, key_format, "key.", options) if key_format else {}
    value_options = format_options(connector, value_format, value_prefix, options)
    topics = topics_of(options)
    if key_format in AVRO_FORMATS:
        key_types = _columns(context, key_indexes)[1]
        key_options = check_avro_format(key_format, key_names, key_types, key_options, "key", topics)
    if value_format in AVRO_FORMATS:
        value_names, value_types = _columns(context, value_indexes)
        value_options = check_avro_format(value_format, value_names, value_types, value_options, "value", topics)
    return Layout(
        key_format, key_indexes, key_names, key_options, value_format, value_indexes, value_options, value_prefix
    )


def option_prefixes(options: dict[str, str]) -> tuple[str, ...]:
    """The prefixes of the options a table takes besides its named ones: `properties.*` and its formats' own
    (which `format_options` checks)."""
    prefixes = ["properties."]
    for role in ("", "key.", "value."):
        fmt = options.get(f"{role}format")
        if fmt is not None:
            prefixes.append(f"{role}{fmt}.")
    return tuple(prefixes)


def _columns(context: ConnectorContext, indexes: Sequence[int]) -> tuple[list[str], list[DataType]]:
    return [context.columns[i].name for i in indexes], [context.columns[i].type for i in indexes]


class TableRowDeserializer(KafkaRecordDeserializationSchema):
    """A message → a Row of the table's physical columns (key and value) then its metadata columns. With
    `upsert`, a message without a value (a tombstone) is a DELETE of its key; otherwise it is skipped, as a null
    value is in Flink's formats."""

    def __init__(self, context: ConnectorContext, layout: Layout, upsert: bool) -> None:
        self.names = context.names + [m.name for m in context.metadata]
        self.width = len(context.columns)
        self.layout = layout
        self.key_columns = _columns(context, layout.key_indexes)
        self.value_columns = _columns(context, layout.value_indexes)
        self.metadata = tuple((m.key, m.type) for m in context.metadata)
        self.upsert = upsert

    def deserialize(self, record: Any) -> Any:
        raise NotImplementedError("TableRowDeserializer reads the client's messages (message_function)")

    def message_function(self) -> Callable[[Any], Any]:
        layout, names, width, upsert = self.layout, self.names, self.width, self.upsert
        value_of = decoder(
            layout.value_format,
            self.value_columns[0],
            self.value_columns[1],
            layout.value_options,
            "value",
            layout.value_prefix,
        )
        key_of = (
            decoder(layout.key_format, layout.key_names, self.key_columns[1], layout.key_options, "key", "key.")
            if layout.key_format
            else None
        )
        readers = [_metadata_reader(key, data_type) for key, data_type in self.metadata]
        value_indexes, key_indexes = layout.value_indexes, layout.key_indexes
        insert, delete = RowKind.INSERT, RowKind.DELETE
        if key_of is None and not readers and value_indexes == tuple(range(width)) and not upsert:

            def value_only(message: Any) -> Any:  # the common case: the value is the row
                data = message.value()
                if data is None:
                    return None
                values = value_of(data)
                return None if values is None else _create_row(names, values, insert)

            return value_only

        def full(message: Any) -> Any:
            data = message.value()
            if data is None and not upsert:
                return None
            row: list = [None] * width
            if key_of is not None:  # first: with value.fields-include ALL the value's copy wins, as in Flink
                raw_key = message.key()
                if raw_key is not None and not _place(row, key_indexes, key_of(raw_key)):
                    return None
            if data is None:
                kind = delete
            else:
                kind = insert
                if not _place(row, value_indexes, value_of(data)):
                    return None
            for read in readers:
                row.append(read(message))
            return _create_row(names, row, kind)

        return full


def _place(row: list, indexes: Sequence[int], values: list | None) -> bool:
    """Put the decoded key's or value's columns at their places in the row; False for a record to skip."""
    if values is None:
        return False
    for i, v in zip(indexes, values):
        row[i] = v
    return True


def _metadata_reader(key: str, declared: DataType) -> Callable[[Any], Any]:
    natural, read = READABLE_METADATA[key]
    if declared.name == natural.name or {declared.name, natural.name} <= {"TIMESTAMP", "TIMESTAMP_LTZ"}:
        return read
    return lambda message: cast_value(read(message), declared, natural)


class _Columns(SerializationSchema):
    """Some columns of a Row, in a format (a value or key schema of the writer's plain path)."""

    def __init__(
        self,
        fmt: str,
        names: Sequence[str],
        types: Sequence[DataType],
        options: dict,
        role: str,
        indexes: Sequence[int],
    ) -> None:
        self.args = (fmt, list(names), list(types), options, role)
        self.indexes = tuple(indexes)
        self._encode: Any = None

    def open(self, context: Any = None) -> None:
        self._encode = encoder(*self.args)

    def serialize(self, element: Any) -> bytes:
        values = element._values
        return self._encode([values[i] for i in self.indexes])

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_encode": None}


class TableRowSerializer(KafkaRecordSerializationSchema):
    """A Row → a message: key and value in their formats, metadata columns as the record's timestamp and
    headers, the partition by `sink.partitioner`. `upsert` (upsert-kafka): a DELETE is written as a tombstone
    (the key, no value) and an UPDATE_BEFORE is not written at all."""

    def __init__(self, topic: str, context: ConnectorContext, layout: Layout, partitioner: str, upsert: bool) -> None:
        key_names, key_types = layout.key_names, _columns(context, layout.key_indexes)[1]
        value_names, value_types = _columns(context, layout.value_indexes)
        key = (
            _Columns(layout.key_format, key_names, key_types, layout.key_options, "key", layout.key_indexes)
            if layout.key_format
            else None
        )
        value = _Columns(
            layout.value_format, value_names, value_types, layout.value_options, "value", layout.value_indexes
        )
        super().__init__(topic, None, key, value)
        width = len(context.columns)
        self.metadata = {m.key: width + i for i, m in enumerate(context.metadata)}
        self.partitioner = partitioner
        self.upsert = upsert

    def record_function(
        self, subtask_index: int, partition_count: Callable[[str], int]
    ) -> Callable[[Any], tuple | None] | None:
        if not self.metadata and self.partitioner == "default" and not self.upsert:
            return None  # the writer's plain path: topic, key, value
        _, value_of, key_of = self.compile()
        topic, upsert = self.topic or "", self.upsert
        timestamp_at, headers_at = self.metadata.get("timestamp"), self.metadata.get("headers")
        partition_of = _partitioner(self.partitioner, topic, subtask_index, partition_count)
        delete, update_before = RowKind.DELETE, RowKind.UPDATE_BEFORE

        def record(row: Any) -> tuple | None:
            kind = row._row_kind
            if upsert and kind is update_before:
                return None
            data = None if upsert and kind is delete else value_of(row)
            values = row._values
            stamp = 0 if timestamp_at is None or values[timestamp_at] is None else epoch_millis(values[timestamp_at])
            headers = None if headers_at is None or not values[headers_at] else _header_list(values[headers_at])
            return (
                topic,
                data,
                None if key_of is None else key_of(row),
                partition_of(),
                stamp,
                headers,
            )

        return record


def _header_list(headers: Any) -> list:
    return [(str(k), v if v is None or isinstance(v, bytes) else str(v).encode()) for k, v in dict(headers).items()]


def _partitioner(kind: str, topic: str, subtask: int, partition_count: Callable[[str], int]) -> Callable[[], int]:
    if kind == "default":
        return lambda: -1
    known: list[int] = []

    def count() -> int:
        if not known:
            known.append(partition_count(topic))
        return known[0]

    if kind == "fixed":
        return lambda: subtask % count()
    turn = itertools.count(subtask)
    return lambda: next(turn) % count()


def guarantee(options: dict[str, str]) -> tuple[DeliveryGuarantee, str | None]:
    text = options.get("sink.delivery-guarantee", "at-least-once").lower()
    if text not in _GUARANTEES:
        raise ValidationException(f"'sink.delivery-guarantee' is one of {', '.join(_GUARANTEES)}, got '{text}'")
    prefix = options.get("sink.transactional-id-prefix")
    if text == "exactly-once" and not prefix:
        raise ValidationException(
            "'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix' (unique to the job's "
            "sink); set it"
        )
    return _GUARANTEES[text], prefix


def client_properties(options: dict[str, str]) -> dict[str, str]:
    return {k[len("properties.") :]: v for k, v in options.items() if k.startswith("properties.")}


def build_sink(
    stream: Any, context: ConnectorContext, serializer: TableRowSerializer, wrap: Callable[[Any], Any] | None = None
) -> Any:
    """The KafkaSink of a table (`wrap`: what upsert-kafka's buffer puts around it)."""
    from fluvial.datastream.connectors.kafka import KafkaSink

    options = context.options
    delivery, prefix = guarantee(options)
    builder = KafkaSink.builder().set_record_serializer(serializer).set_delivery_guarantee(delivery)
    for key, value in client_properties(options).items():
        if key not in _CONSUMER_ONLY:  # one table's properties serve its source and sink; a producer warns on these
            builder.set_property(key, value)
    if prefix:
        builder.set_transactional_id_prefix(prefix)
    built = builder.build()
    sink = stream.sink_to(built if wrap is None else wrap(built)).name(f"Sink: {context.table_name}[kafka]")
    if "sink.parallelism" in options:
        sink.set_parallelism(int(options["sink.parallelism"]))
    return sink


def build_source(env: Any, context: ConnectorContext, builder: Any) -> Any:
    options = context.options
    for key, value in client_properties(options).items():
        builder.set_property(key, value)
    stream = env.from_source(builder.build(), source_name=context.table_name)
    if "scan.parallelism" in options:
        stream.set_parallelism(int(options["scan.parallelism"]))
    return stream


def _offsets(options: dict[str, str], which: str, topics: Sequence[str]) -> Any:
    """`scan.startup.*` or `scan.bounded.*` as a KafkaOffsetsInitializer (None: unbounded)."""
    from fluvial.datastream.connectors.kafka import (
        KafkaOffsetResetStrategy,
        KafkaOffsetsInitializer,
        KafkaTopicPartition,
    )

    default = "group-offsets" if which == "startup" else "unbounded"
    mode = options.get(f"scan.{which}.mode", default)
    modes = _MODES if which == "startup" else ("unbounded", *_MODES)
    if mode not in modes:
        raise ValidationException(f"'scan.{which}.mode' is one of {', '.join(modes)}, got '{mode}'")
    for option, needed in (
        (f"scan.{which}.timestamp-millis", "timestamp"),
        (f"scan.{which}.specific-offsets", "specific-offsets"),
    ):
        if (option in options) != (mode == needed):
            raise ValidationException(
                f"'{option}' goes with 'scan.{which}.mode' = '{needed}' (and that mode needs it); the mode is '{mode}'"
            )
    if mode == "unbounded":
        return None
    if mode == "earliest-offset":
        return KafkaOffsetsInitializer.earliest()
    if mode == "latest-offset":
        return KafkaOffsetsInitializer.latest()
    if mode == "timestamp":
        text = options[f"scan.{which}.timestamp-millis"]
        if not text.isdigit():
            raise ValidationException(f"'scan.{which}.timestamp-millis' is milliseconds since the epoch, got '{text}'")
        return KafkaOffsetsInitializer.timestamp(int(text))
    if mode == "group-offsets":
        if "properties.group.id" not in options:
            raise ValidationException(
                f"'scan.{which}.mode' = 'group-offsets'{' (the default)' if which == 'startup' else ''} reads the "
                "committed offsets of a consumer group: set 'properties.group.id', or choose 'scan.startup.mode' = "
                "'earliest-offset'"
            )
        reset = options.get("properties.auto.offset.reset", "none").upper()
        if reset not in KafkaOffsetResetStrategy.__members__:
            raise ValidationException(f"'properties.auto.offset.reset' is earliest, latest or none, got '{reset}'")
        return KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy[reset])
    if len(topics) != 1:
        raise ValidationException(
            f"'scan.{which}.specific-offsets' needs exactly one 'topic' (the offsets name partitions of it)"
        )
    offsets = {}
    for part in options[f"scan.{which}.specific-offsets"].split(";"):
        fields = dict(item.split(":", 1) for item in part.split(",") if ":" in item)
        try:
            offsets[KafkaTopicPartition(topics[0], int(fields["partition"]))] = int(fields["offset"])
        except (KeyError, ValueError):
            raise ValidationException(
                f"Invalid properties for option 'scan.{which}.specific-offsets': '{part}'; the format is "
                "'partition:0,offset:42;partition:1,offset:300'"
            ) from None
    return KafkaOffsetsInitializer.offsets(offsets)


def topics_of(options: dict[str, str]) -> list[str]:
    return [t.strip() for t in options.get("topic", "").split(";") if t.strip()]


class KafkaFactory:
    readable_metadata = READABLE_METADATA
    writable_metadata = WRITABLE_METADATA

    def _check(self, context: ConnectorContext) -> Layout:
        options = context.options
        check_options(
            "kafka",
            options,
            _COMMON | _KAFKA_ONLY,
            option_prefixes(options),
            required=("properties.bootstrap.servers",),
        )
        return layout("kafka", context)

    def create_source(self, env: Any, context: ConnectorContext) -> Any:
        from fluvial.datastream.connectors.kafka import KafkaSource

        options = context.options
        shape = self._check(context)
        topics = topics_of(options)
        pattern = options.get("topic-pattern")
        if bool(topics) == (pattern is not None):
            raise ValidationException(
                "A Kafka source reads 'topic' (one or several, ';'-separated) or 'topic-pattern'; set exactly one"
            )
        builder = KafkaSource.builder().set_deserializer(TableRowDeserializer(context, shape, upsert=False))
        builder = builder.set_topics(*topics) if topics else builder.set_topic_pattern(pattern or "")
        builder.set_starting_offsets(_offsets(options, "startup", topics))
        stopping = _offsets(options, "bounded", topics)
        if stopping is not None:
            builder.set_bounded(stopping)
        interval = options.get("scan.topic-partition-discovery.interval")
        if interval is not None:  # new partitions (and, with topic-pattern, topics) are found this often; 0: never
            builder.set_property("partition.discovery.interval.ms", str(parse_duration_millis(interval)))
        return build_source(env, context, builder)

    def create_sink(self, stream: Any, context: ConnectorContext, mode: ChangelogMode) -> Any:
        options = context.options
        shape = self._check(context)
        topics = topics_of(options)
        if len(topics) != 1 or "topic-pattern" in options:
            raise ValidationException(
                f"A Kafka sink writes one 'topic'; table '{context.table_name}' has "
                f"{'a topic-pattern' if 'topic-pattern' in options else repr(options.get('topic', ''))}"
            )
        if mode is not ChangelogMode.INSERT_ONLY:
            raise ValidationException(
                f"Table sink '{context.table_name}' doesn't support consuming update and delete changes which is "
                "produced by a GROUP BY aggregation, join or Top-N: the 'kafka' sink takes inserts only; write them "
                "to an 'upsert-kafka' table with a PRIMARY KEY"
            )
        partitioner = options.get("sink.partitioner", "default")
        if partitioner not in ("default", "fixed", "round-robin"):
            raise ValidationException(f"'sink.partitioner' is 'default', 'fixed' or 'round-robin', got '{partitioner}'")
        return build_sink(stream, context, TableRowSerializer(topics[0], context, shape, partitioner, upsert=False))
