"""PyFlink's legacy `FlinkKafkaConsumer` and `FlinkKafkaProducer` (and `Semantic`), mapped onto KafkaSource and
KafkaSink: `env.add_source(FlinkKafkaConsumer(...))` and `ds.add_sink(FlinkKafkaProducer(...))` run the new
connector with the same behaviour."""

from __future__ import annotations

import enum
import uuid
from typing import Any

from fluvial.common.errors import NotYetSupportedError
from fluvial.common.serialization import DeserializationSchema, SerializationSchema
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.kafka.offsets import KafkaOffsetResetStrategy, KafkaOffsetsInitializer
from fluvial.datastream.connectors.kafka.serialization import (
    KafkaRecordDeserializationSchema,
    KafkaRecordSerializationSchema,
)
from fluvial.datastream.connectors.kafka.sink import KafkaSink
from fluvial.datastream.connectors.kafka.source import KafkaSource, KafkaSubscriber


class Semantic(enum.Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


class FlinkKafkaConsumer(KafkaSource):
    """Reads `topics` with the group's committed offsets by default (as the legacy consumer did)."""

    def __init__(
        self, topics: str | list[str], deserialization_schema: DeserializationSchema, properties: dict
    ) -> None:
        props = {str(k): str(v) for k, v in properties.items()}
        bootstrap = props.pop("bootstrap.servers", "")
        group_id = props.pop("group.id", None)
        reset = {"earliest": KafkaOffsetResetStrategy.EARLIEST, "latest": KafkaOffsetResetStrategy.LATEST}.get(
            props.pop("auto.offset.reset", "latest"), KafkaOffsetResetStrategy.LATEST
        )
        starting = KafkaOffsetsInitializer.committed_offsets(reset) if group_id else KafkaOffsetsInitializer.latest()
        super().__init__(
            bootstrap,
            KafkaSubscriber(topics=tuple([topics] if isinstance(topics, str) else topics)),
            KafkaRecordDeserializationSchema.value_only(deserialization_schema),
            starting,
            group_id=group_id,
            properties=props,
        )
        self._reset = reset

    def set_commit_offsets_on_checkpoints(self, commit_on_checkpoints: bool) -> FlinkKafkaConsumer:
        self.properties["commit.offsets.on.checkpoint"] = str(bool(commit_on_checkpoints)).lower()
        return self

    def set_start_from_earliest(self) -> FlinkKafkaConsumer:
        self.starting_offsets = KafkaOffsetsInitializer.earliest()
        return self

    def set_start_from_latest(self) -> FlinkKafkaConsumer:
        self.starting_offsets = KafkaOffsetsInitializer.latest()
        return self

    def set_start_from_timestamp(self, startup_offsets_timestamp: int) -> FlinkKafkaConsumer:
        self.starting_offsets = KafkaOffsetsInitializer.timestamp(startup_offsets_timestamp)
        return self

    def set_start_from_group_offsets(self) -> FlinkKafkaConsumer:
        self.starting_offsets = KafkaOffsetsInitializer.committed_offsets(self._reset)
        return self

    def disable_filter_restored_partitions_with_subscribed_topics(self) -> FlinkKafkaConsumer:
        return self  # restored partitions are those the checkpoint recorded either way

    def get_produced_type(self) -> Any:
        return self.deserializer.get_produced_type()


class FlinkKafkaProducer(KafkaSink):
    """Writes to `topic` with AT_LEAST_ONCE by default (the legacy producer's default)."""

    def __init__(
        self,
        topic: str,
        serialization_schema: SerializationSchema,
        producer_config: dict,
        kafka_producer_pool_size: int = 5,
        semantic: Semantic = Semantic.AT_LEAST_ONCE,
    ) -> None:
        props = {str(k): str(v) for k, v in producer_config.items()}
        bootstrap = props.pop("bootstrap.servers", "")
        prefix = props.pop("transactional.id", None) or f"fluvial-{topic}-{uuid.uuid4().hex[:8]}"
        serializer = (
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(serialization_schema)
            .build()
        )
        super().__init__(bootstrap, serializer, DeliveryGuarantee[semantic.name], prefix, props)

    def set_log_failures_only(self, log_failures_only: bool) -> FlinkKafkaProducer:
        if log_failures_only:
            self.delivery_guarantee = DeliveryGuarantee.NONE
        return self

    def set_flush_on_checkpoint(self, flush_on_checkpoint: bool) -> FlinkKafkaProducer:
        if not flush_on_checkpoint and self.delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE:
            self.delivery_guarantee = DeliveryGuarantee.NONE
        return self

    def set_write_timestamp_to_kafka(self, write_timestamp_to_kafka: bool) -> FlinkKafkaProducer:
        if write_timestamp_to_kafka:
            raise NotYetSupportedError(
                "writing the records' event-time timestamps to Kafka is not supported yet; "
                "Kafka gives each record the time it was produced"
            )
        return self

    def ignore_failures_after_transaction_timeout(self) -> FlinkKafkaProducer:
        """A restored job whose transaction timed out logs the loss instead of failing (as in Flink)."""
        self.ignore_transaction_timeouts = True
        return self
