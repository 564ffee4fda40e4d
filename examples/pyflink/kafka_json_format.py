"""Rows written to Kafka as JSON by a KafkaSink, then read back by a KafkaSource and printed, as in PyFlink's
connectors/kafka_json_format example. Start a broker first (`make kafka` prints its address) and create the
topic `test_json_topic`; pass the address with `--bootstrap-servers` (default localhost:9092).

Unlike PyFlink's example, whose reading job never ends, this one reads up to the topic's end and stops
(`set_bounded`), so it can run to completion."""

import argparse
import logging
import sys

from fluvial.common import Types, WatermarkStrategy
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from fluvial.datastream.formats.json import JsonRowDeserializationSchema, JsonRowSerializationSchema

ROWS = [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello"), (6, "hello")]
TOPIC = "test_json_topic"


def write_to_kafka(env, bootstrap_servers):
    row_type = Types.ROW([Types.INT(), Types.STRING()])
    rows = env.from_collection(ROWS, type_info=row_type)
    value_schema = JsonRowSerializationSchema.builder().with_type_info(row_type).build()
    serializer = (
        KafkaRecordSerializationSchema.builder().set_topic(TOPIC).set_value_serialization_schema(value_schema).build()
    )
    sink = KafkaSink.builder().set_bootstrap_servers(bootstrap_servers).set_record_serializer(serializer).build()
    rows.sink_to(sink)
    env.execute()


def read_from_kafka(env, bootstrap_servers):
    value_schema = JsonRowDeserializationSchema.builder().type_info(Types.ROW([Types.INT(), Types.STRING()])).build()
    source = (
        KafkaSource.builder()
        .set_topics(TOPIC)
        .set_value_only_deserializer(value_schema)
        .set_properties({"bootstrap.servers": bootstrap_servers, "group.id": "test_group_1"})
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    env.from_source(source, watermark_strategy=WatermarkStrategy.no_watermarks(), source_name="kafka source").print()
    env.execute()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap-servers", default="localhost:9092")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(message)s")
    env = StreamExecutionEnvironment.get_execution_environment()
    print("start writing data to kafka")
    write_to_kafka(env, args.bootstrap_servers)
    print("start reading data from kafka")
    read_from_kafka(env, args.bootstrap_servers)
