"""PyFlink's `pyflink.datastream.connectors.kafka`: KafkaSource and KafkaSink (with their builders, offsets
initializers and record schemas) and the legacy FlinkKafkaConsumer / FlinkKafkaProducer, over confluent-kafka.
See docs/connectors/kafka.md for what is supported and how exactly-once works."""

from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.kafka.builders import KafkaSinkBuilder, KafkaSourceBuilder
from fluvial.datastream.connectors.kafka.legacy import FlinkKafkaConsumer, FlinkKafkaProducer, Semantic
from fluvial.datastream.connectors.kafka.offsets import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaTopicPartition,
)
from fluvial.datastream.connectors.kafka.serialization import (
    KafkaRecord,
    KafkaRecordDeserializationSchema,
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaTopicSelector,
)
from fluvial.datastream.connectors.kafka.sink import KafkaSink
from fluvial.datastream.connectors.kafka.source import KafkaSource

__all__ = [
    "DeliveryGuarantee",
    "FlinkKafkaConsumer",
    "FlinkKafkaProducer",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecord",
    "KafkaRecordDeserializationSchema",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
    "Semantic",
]
