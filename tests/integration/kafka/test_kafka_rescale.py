"""A Kafka-to-Kafka EXACTLY_ONCE job stopped with a savepoint at 2 subtasks and restored at 3 (4 partitions):
the partition splits are dealt over the new subtasks with their offsets, the sink's prepared transactions are
committed and its open ones aborted, and a read_committed consumer finds every record once, in order per key."""

from __future__ import annotations

import time

import pytest

from fluvial.common import Configuration, Types, WatermarkStrategy
from fluvial.common.errors import JobCancelledException
from fluvial.common.serialization import SimpleStringSchema
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from fluvial.testing.kafka import check_sequences, create_topic, produce, read_committed
from fluvial.testing.kafka_fault_job import Throttle, _KeyOf

KEYS, PER_KEY = 8, 1500


def _job(bootstrap: str, source_topic: str, out: str, parallelism: int, savepoint: str | None = None):
    configuration = Configuration().set_string("local.taskmanager.mode", "thread")
    if savepoint:
        configuration.set_string("execution.savepoint.path", savepoint)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    env.enable_checkpointing(300)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(source_topic)
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(out)
        .set_key_serialization_schema(_KeyOf())
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(f"rescale-{out}")
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "in")
        .uid("source")
        .map(Throttle(1000), output_type=Types.STRING())
        .uid("throttle")
        .sink_to(sink)
        .uid("sink")
    )
    return env


@pytest.mark.timeout(90)
def test_rescaling_from_a_savepoint_two_to_three_subtasks_keeps_exactly_once(bootstrap, tmp_path):
    source_topic, out = create_topic(bootstrap, 4), create_topic(bootstrap, 3)
    records = [f"{k}:{s}" for s in range(PER_KEY) for k in range(KEYS)]
    produce(bootstrap, source_topic, records, keys=[r.partition(":")[0] for r in records])
    client = _job(bootstrap, source_topic, out, 2).execute_async("rescale run 1")
    deadline = time.monotonic() + 30
    while len(read_committed(bootstrap, out, idle=0.1, timeout=2)) < 100:  # committed output: well under way
        assert time.monotonic() < deadline and not client.get_job_execution_result().done()
    path = client.stop_with_savepoint(savepoint_directory=str(tmp_path / "savepoints")).result(timeout=30)
    error = client.get_job_execution_result().exception(timeout=30)
    assert error is None or isinstance(error, JobCancelledException), repr(error)
    first = len(read_committed(bootstrap, out, idle=0.3))
    assert 0 < first < len(records), f"the savepoint was not mid-stream: {first} of {len(records)}"
    _job(bootstrap, source_topic, out, 3, savepoint=path).execute("rescale run 2")
    report = check_sequences(read_committed(bootstrap, out, len(records), idle=0.5), KEYS, PER_KEY)
    assert report.exactly_once, str(report)
