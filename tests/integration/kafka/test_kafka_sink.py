"""KafkaSink against a real broker: each delivery guarantee writes every record of a bounded job, keys and a
topic selector route records, and EXACTLY_ONCE output is invisible to read_committed consumers until its
checkpoint completes; a restored writer commits the transaction a checkpoint recorded (from another
producer, by producer id and epoch) and aborts the ones left open."""

from __future__ import annotations

import pytest

from fluvial.common import Types, WatermarkStrategy
from fluvial.common.serialization import SimpleStringSchema
from fluvial.common.task_info import TaskInfo
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    transactions,
)
from fluvial.testing.kafka import create_topic, produce, read_committed

pytestmark = pytest.mark.timeout(60)


def _sink(bootstrap: str, guarantee: DeliveryGuarantee, topic: str | None = None, selector=None, prefix="t"):
    serializer = KafkaRecordSerializationSchema.builder()
    serializer = serializer.set_topic(topic) if topic else serializer.set_topic_selector(selector)
    serializer = serializer.set_value_serialization_schema(SimpleStringSchema()).build()
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(prefix)
        .set_record_serializer(serializer)
        .build()
    )


@pytest.mark.parametrize("guarantee", list(DeliveryGuarantee))
def test_every_guarantee_writes_each_record_of_a_bounded_job(bootstrap, guarantee):
    source_topic, out = create_topic(bootstrap, 2), create_topic(bootstrap, 2)
    produce(bootstrap, source_topic, [f"r{i}" for i in range(500)], partitions=2)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(200)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(source_topic)
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "in")
        .map(str.upper, output_type=Types.STRING())
        .sink_to(_sink(bootstrap, guarantee, out, prefix=f"every-{out}"))
    )
    env.execute(f"kafka sink {guarantee.name}")
    assert sorted(read_committed(bootstrap, out, 500)) == sorted(f"R{i}" for i in range(500))


def test_a_topic_selector_routes_each_record(bootstrap):
    evens, odds = create_topic(bootstrap, 1), create_topic(bootstrap, 1)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([str(i) for i in range(10)], Types.STRING()).sink_to(
        _sink(bootstrap, DeliveryGuarantee.AT_LEAST_ONCE, selector=lambda v: evens if int(v) % 2 == 0 else odds)
    )
    env.execute("selector")
    assert read_committed(bootstrap, evens, 5) == ["0", "2", "4", "6", "8"]
    assert read_committed(bootstrap, odds, 5) == ["1", "3", "5", "7", "9"]


def test_a_prepared_transaction_is_committed_by_a_restored_writer_and_open_ones_are_aborted(bootstrap):
    """The crash between "checkpoint complete" and "committed": the producer that opened the transaction is
    gone, the restored writer commits it by producer id and epoch; a transaction opened after the checkpoint
    is aborted, so read_committed consumers see exactly the checkpoint's records and are not held back."""
    out = create_topic(bootstrap, 1)
    prefix = f"crash-{out}"
    sink = _sink(bootstrap, DeliveryGuarantee.EXACTLY_ONCE, out, prefix=prefix)
    info = TaskInfo("job", "Sink", 0, 1, 128)
    writer = sink.create_writer(info)
    writer.write_batch(["a", "b"])
    writer.flush(False)
    [committable] = writer.prepare_commit()
    [state] = writer.snapshot_state()
    writer.write_batch(["after the checkpoint"])  # a new transaction, never to be committed
    writer.flush(False)
    assert read_committed(bootstrap, out, idle=0.3) == []  # nothing visible before the commit
    lost = transactions.take_prepared(committable.transactional_id)  # the process that held it "crashed"
    assert lost is not None
    restored = sink.create_writer(info, [state])  # aborts the transaction opened after the checkpoint
    sink.commit([committable])  # no producer in this process: by producer id and epoch
    sink.commit([committable])  # twice is harmless
    assert read_committed(bootstrap, out, 2) == ["a", "b"]
    restored.write_batch(["c"])
    restored.flush(True)
    sink.commit(restored.prepare_commit())
    assert read_committed(bootstrap, out, 3) == ["a", "b", "c"]  # not held back by a lingering transaction
    restored.close()
    writer.close()


def test_rows_travel_through_kafka_as_avro_with_a_schema_registry_and_as_csv(bootstrap):
    """KafkaSink writes Rows in the Confluent wire format (schema registered in the in-process registry) and as
    CSV; KafkaSources read them back into the same Rows."""
    import json
    import uuid

    from fluvial.common import Configuration, Row
    from fluvial.datastream.formats.avro_registry import (
        ConfluentRegistryAvroDeserializationSchema,
        ConfluentRegistryAvroSerializationSchema,
    )
    from fluvial.datastream.formats.csv import CsvRowDeserializationSchema, CsvRowSerializationSchema

    schema = json.dumps(
        {
            "type": "record",
            "name": "Reading",
            "fields": [{"name": "sensor", "type": "string"}, {"name": "value", "type": "double"}],
        }
    )
    row_type = Types.ROW_NAMED(["sensor", "value"], [Types.STRING(), Types.DOUBLE()])
    registry = f"mock://{uuid.uuid4().hex}"  # in this process: the job runs its TaskManagers as threads
    rows = [Row(sensor=f"s{i % 3}", value=i / 2) for i in range(12)]
    formats = {
        "avro": (
            ConfluentRegistryAvroSerializationSchema.for_generic("readings-value", schema, registry),
            ConfluentRegistryAvroDeserializationSchema.for_generic(schema, registry),
        ),
        "csv": (
            CsvRowSerializationSchema.Builder(row_type).build(),
            CsvRowDeserializationSchema.Builder(row_type).build(),
        ),
    }
    for name, (writer, reader) in formats.items():
        topic = create_topic(bootstrap, 1)
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration().set_string("local.taskmanager.mode", "thread")
        )
        env.set_parallelism(1)
        serializer = (
            KafkaRecordSerializationSchema.builder().set_topic(topic).set_value_serialization_schema(writer).build()
        )
        env.from_collection(rows, row_type).sink_to(
            KafkaSink.builder().set_bootstrap_servers(bootstrap).set_record_serializer(serializer).build()
        )
        env.execute(f"write {name}")
        source = (
            KafkaSource.builder()
            .set_bootstrap_servers(bootstrap)
            .set_topics(topic)
            .set_bounded(KafkaOffsetsInitializer.latest())
            .set_value_only_deserializer(reader)
            .build()
        )
        read = list(env.from_source(source, WatermarkStrategy.no_watermarks(), "in").execute_and_collect())
        assert [(r.sensor, r.value) for r in read] == [(r.sensor, r.value) for r in rows], name


def test_the_legacy_flink_kafka_consumer_and_producer_run_as_the_new_connector(bootstrap):
    from fluvial.datastream.connectors import FlinkKafkaConsumer, FlinkKafkaProducer

    source_topic, out = create_topic(bootstrap, 1), create_topic(bootstrap, 1)
    produce(bootstrap, source_topic, ["a", "b", "c"])
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    consumer = FlinkKafkaConsumer(
        source_topic, SimpleStringSchema(), {"bootstrap.servers": bootstrap, "group.id": f"legacy-{source_topic}"}
    )
    consumer.set_start_from_earliest()
    consumer.stopping_offsets, consumer.bounded = KafkaOffsetsInitializer.latest(), True  # so the job ends
    env.add_source(consumer).map(str.upper, output_type=Types.STRING()).add_sink(
        FlinkKafkaProducer(out, SimpleStringSchema(), {"bootstrap.servers": bootstrap})
    )
    env.execute("legacy")
    assert read_committed(bootstrap, out, 3) == ["A", "B", "C"]
