"""PyFlink's `KafkaSourceBuilder` and `KafkaSinkBuilder`: every setter checks its argument, and `build()` checks
that the pieces fit, each with a one-sentence error naming the fix."""

from __future__ import annotations

import re
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.serialization import DeserializationSchema
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.kafka.offsets import KafkaOffsetsInitializer, KafkaTopicPartition
from fluvial.datastream.connectors.kafka.serialization import (
    KafkaRecordDeserializationSchema,
    KafkaRecordSerializationSchema,
)
from fluvial.datastream.connectors.kafka.sink import KafkaSink, check_exactly_once
from fluvial.datastream.connectors.kafka.source import KafkaSource, KafkaSubscriber


def _properties(props: dict) -> dict[str, str]:
    if not isinstance(props, dict):
        raise InvalidJobError(f"Kafka properties are a dict of str to str, got {props!r}")
    return {str(k): str(v) if not isinstance(v, bool) else str(v).lower() for k, v in props.items()}


class KafkaSourceBuilder:
    def __init__(self) -> None:
        self._bootstrap: str | None = None
        self._subscriber: KafkaSubscriber | None = None
        self._deserializer: KafkaRecordDeserializationSchema | None = None
        self._starting = KafkaOffsetsInitializer.earliest()
        self._stopping: KafkaOffsetsInitializer | None = None
        self._bounded = False
        self._group_id: str | None = None
        self._client_id_prefix: str | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        self._bootstrap = bootstrap_servers
        return self

    def _subscribe(self, subscriber: KafkaSubscriber) -> KafkaSourceBuilder:
        if self._subscriber is not None:
            raise InvalidJobError(
                f"the source already reads {self._subscriber.describe()}: set_topics, "
                "set_topic_pattern and set_partitions exclude each other"
            )
        self._subscriber = subscriber
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        names = [t for group in topics for t in ([group] if isinstance(group, str) else list(group))]
        if not names or not all(isinstance(t, str) and t for t in names):
            raise InvalidJobError(f"set_topics needs one or more topic names, got {topics!r}")
        return self._subscribe(KafkaSubscriber(topics=tuple(names)))

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        try:
            re.compile(topic_pattern)
        except (re.error, TypeError) as error:
            raise InvalidJobError(
                f"set_topic_pattern needs a regular expression, got {topic_pattern!r}: {error}"
            ) from None
        return self._subscribe(KafkaSubscriber(pattern=topic_pattern))

    def set_partitions(self, partitions: set[KafkaTopicPartition]) -> KafkaSourceBuilder:
        parts = tuple(sorted(partitions))
        if not parts or not all(isinstance(p, KafkaTopicPartition) for p in parts):
            raise InvalidJobError(f"set_partitions needs a set of KafkaTopicPartition, got {partitions!r}")
        return self._subscribe(KafkaSubscriber(partitions=parts))

    def set_starting_offsets(self, starting_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        self._starting = _initializer(starting_offsets_initializer, "set_starting_offsets")
        return self

    def set_unbounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        """Stream, but leave each partition at these offsets (the job keeps running, as in Flink)."""
        self._stopping = _initializer(stopping_offsets_initializer, "set_unbounded")
        self._bounded = False
        return self

    def set_bounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        """Read up to these offsets and end (in batch mode the job runs as a batch job)."""
        self._stopping = _initializer(stopping_offsets_initializer, "set_bounded")
        self._bounded = True
        return self

    def set_value_only_deserializer(self, deserialization_schema: DeserializationSchema) -> KafkaSourceBuilder:
        self._deserializer = KafkaRecordDeserializationSchema.value_only(deserialization_schema)
        return self

    def set_deserializer(self, deserializer: KafkaRecordDeserializationSchema) -> KafkaSourceBuilder:
        """A deserializer of the whole record (key, value, headers, topic, partition, offset, timestamp)."""
        if not isinstance(deserializer, KafkaRecordDeserializationSchema):
            raise InvalidJobError(
                f"set_deserializer takes a KafkaRecordDeserializationSchema, got {deserializer!r}; "
                "for a value-only schema use set_value_only_deserializer"
            )
        self._deserializer = deserializer
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        self._group_id = group_id
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        self._client_id_prefix = prefix
        return self

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        self._properties.update(_properties({key: value}))
        return self

    def set_properties(self, props: dict) -> KafkaSourceBuilder:
        self._properties.update(_properties(props))
        return self

    def build(self) -> KafkaSource:
        props = dict(self._properties)
        bootstrap = self._bootstrap or props.pop("bootstrap.servers", None)
        props.pop("bootstrap.servers", None)
        group_id = self._group_id or props.pop("group.id", None)
        props.pop("group.id", None)
        if not bootstrap:
            raise InvalidJobError("KafkaSource needs bootstrap servers: set_bootstrap_servers('host:9092')")
        if self._subscriber is None:
            raise InvalidJobError(
                "KafkaSource needs something to read: set_topics(...), set_topic_pattern(...) or set_partitions(...)"
            )
        if self._deserializer is None:
            raise InvalidJobError(
                "KafkaSource needs a deserializer: set_value_only_deserializer(SimpleStringSchema())"
                " or set_deserializer(...)"
            )
        for initializer in (self._starting, self._stopping):
            if initializer is not None and initializer.needs_group_id() and not group_id:
                raise InvalidJobError(
                    "committed offsets belong to a consumer group: set_group_id(...) to use "
                    "KafkaOffsetsInitializer.committed_offsets()"
                )
        return KafkaSource(
            bootstrap,
            self._subscriber,
            self._deserializer,
            self._starting,
            self._stopping,
            self._bounded,
            group_id,
            self._client_id_prefix,
            props,
        )


class KafkaSinkBuilder:
    def __init__(self) -> None:
        self._bootstrap: str | None = None
        self._serializer: KafkaRecordSerializationSchema | None = None
        self._guarantee = DeliveryGuarantee.NONE  # Flink's KafkaSink default
        self._prefix: str | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        self._bootstrap = bootstrap_servers
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise InvalidJobError(
                f"set_delivery_guarantee takes a DeliveryGuarantee (NONE, AT_LEAST_ONCE, "
                f"EXACTLY_ONCE), got {delivery_guarantee!r}"
            )
        self._guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        if not isinstance(transactional_id_prefix, str) or not transactional_id_prefix:
            raise InvalidJobError(
                f"set_transactional_id_prefix needs a non-empty string, got {transactional_id_prefix!r}"
            )
        self._prefix = transactional_id_prefix
        return self

    def set_record_serializer(self, record_serializer: KafkaRecordSerializationSchema) -> KafkaSinkBuilder:
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            raise InvalidJobError(
                "set_record_serializer takes a KafkaRecordSerializationSchema: "
                "KafkaRecordSerializationSchema.builder().set_topic(...)"
                ".set_value_serialization_schema(...).build()"
            )
        self._serializer = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        self._properties.update(_properties({key: value}))
        return self

    def build(self) -> KafkaSink:
        props = dict(self._properties)
        bootstrap = self._bootstrap or props.get("bootstrap.servers")
        props.pop("bootstrap.servers", None)
        if not bootstrap:
            raise InvalidJobError("KafkaSink needs bootstrap servers: set_bootstrap_servers('host:9092')")
        if self._serializer is None:
            raise InvalidJobError(
                "KafkaSink needs a record serializer: set_record_serializer("
                "KafkaRecordSerializationSchema.builder()...build())"
            )
        if self._guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            check_exactly_once(self._prefix)
        return KafkaSink(bootstrap, self._serializer, self._guarantee, self._prefix, props)


def _initializer(value: Any, method: str) -> KafkaOffsetsInitializer:
    if not isinstance(value, KafkaOffsetsInitializer):
        raise InvalidJobError(
            f"{method} takes a KafkaOffsetsInitializer (e.g. KafkaOffsetsInitializer.earliest()), got {value!r}"
        )
    return value
