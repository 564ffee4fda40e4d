"""`'connector' = 'upsert-kafka'`: a compacted topic as a table keyed by its PRIMARY KEY (Flink's upsert-kafka).

A message's key is the primary key's columns in `key.format`, its value the row in `value.format` (all the
columns, or those outside the key with `value.fields-include` = `EXCEPT_KEY`); a message without a value (a
tombstone) deletes its key.
- As a source it reads every partition from the earliest offset (until `scan.bounded.mode` if set) and its
  upserts and deletes go through a ChangelogNormalize node keyed by the primary key, which makes them a full
  changelog (+I, -U/+U, -D) for what follows (`fluvial.table.runtime.changelog_normalize`).
- As a sink it takes any changelog: +I and +U are written as key and value, -D as a tombstone, -U not at all,
  so the result of a GROUP BY can be written to it and read back as the final table.
Options besides: `topic` (one), `properties.*`, `key.fields-prefix`, `sink.delivery-guarantee` /
`sink.transactional-id-prefix`, `sink.parallelism`, `scan.parallelism`, `sink.buffer-flush.max-rows` with
`sink.buffer-flush.interval` (the sink writes only the last change of a key per flush: `upsert_buffer.py`);
metadata columns as the kafka connector's.
"""

from __future__ import annotations

from typing import Any

from fluvial.table.connectors import upsert_buffer
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.connectors.kafka import (
    _COMMON,
    READABLE_METADATA,
    WRITABLE_METADATA,
    Layout,
    TableRowDeserializer,
    TableRowSerializer,
    _offsets,
    build_sink,
    build_source,
    layout,
    option_prefixes,
    topics_of,
)
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import ChangelogMode

__all__ = ["UpsertKafkaFactory"]

_OPTIONS = (_COMMON - {"format", "key.fields"}) | {  # the key is the primary key; the formats are named by role
    "scan.bounded.mode",
    "scan.bounded.specific-offsets",
    "scan.bounded.timestamp-millis",
    *upsert_buffer.OPTIONS,
}


class UpsertKafkaFactory:
    readable_metadata = READABLE_METADATA
    writable_metadata = WRITABLE_METADATA
    produces_upserts = True  # the planner puts a ChangelogNormalize after its scan

    @staticmethod
    def check_primary_key(table_name: str, primary_key: tuple[str, ...]) -> None:
        if not primary_key:
            raise ValidationException(
                f"'upsert-kafka' tables require a PRIMARY KEY: it names the columns of the message key by which "
                f"rows of '{table_name}' are updated and deleted; add PRIMARY KEY (col) NOT ENFORCED"
            )

    def _check(self, context: ConnectorContext) -> tuple[str, Layout]:
        options = context.options
        check_options(
            "upsert-kafka",
            options,
            _OPTIONS,
            option_prefixes(options),
            required=("topic", "properties.bootstrap.servers", "key.format", "value.format"),
        )
        self.check_primary_key(context.table_name, context.primary_key)
        upsert_buffer.buffer_flush_options(options)
        topics = topics_of(options)
        if len(topics) != 1:
            raise ValidationException(
                f"'upsert-kafka' reads and writes one 'topic'; table '{context.table_name}' has '{options['topic']}'"
            )
        return topics[0], layout("upsert-kafka", context, key_fields=context.primary_key)

    def create_source(self, env: Any, context: ConnectorContext) -> Any:
        from fluvial.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource

        topic, shape = self._check(context)
        builder = (
            KafkaSource.builder()
            .set_topics(topic)
            .set_deserializer(TableRowDeserializer(context, shape, upsert=True))
            .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        )
        stopping = _offsets(context.options, "bounded", [topic])
        if stopping is not None:
            builder.set_bounded(stopping)
        return build_source(env, context, builder)

    def create_sink(self, stream: Any, context: ConnectorContext, mode: ChangelogMode) -> Any:
        from fluvial.table.runtime.functions import RowKeySelector

        topic, shape = self._check(context)
        buffer = upsert_buffer.buffer_flush_options(context.options)
        if "sink.parallelism" in context.options:  # a key's changes stay in one subtask, in order (Flink's rule)
            stream = stream.key_by(RowKeySelector(shape.key_indexes))
        serializer = TableRowSerializer(topic, context, shape, "default", upsert=True)
        if buffer is None:
            return build_sink(stream, context, serializer)
        max_rows, interval = buffer
        return build_sink(
            stream,
            context,
            serializer,
            lambda sink: upsert_buffer.ReducingUpsertSink(sink, shape.key_indexes, max_rows, interval),
        )
