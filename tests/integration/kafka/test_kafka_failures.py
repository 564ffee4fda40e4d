"""What a Kafka job does when Kafka misbehaves: the broker stopped and restarted mid-job (the job waits,
retries and goes on, nothing lost or duplicated), and a topic deleted under a running job (a clear error)."""

from __future__ import annotations

import threading
import time

import pytest

from fluvial.common import Configuration, Types, WatermarkStrategy
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.common.serialization import SimpleStringSchema
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from fluvial.testing.kafka import check_sequences, create_topic, delete_topic, produce, read_committed
from fluvial.testing.kafka_fault_job import Throttle, _KeyOf
from tests.integration.kafka.helpers import messages


def _env(parallelism: int = 1) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", "thread")
    )
    env.set_parallelism(parallelism)
    return env


@pytest.mark.timeout(90)
def test_a_broker_restart_mid_job_loses_and_duplicates_nothing(kafka_broker):
    from services.kafka import restart_kafka

    bootstrap = kafka_broker.extra["bootstrap"]
    source_topic, out = create_topic(bootstrap, 2), create_topic(bootstrap, 2)
    keys, per_key = 4, 500
    records = [f"{k}:{s}" for s in range(per_key) for k in range(keys)]
    produce(bootstrap, source_topic, records, keys=[r.partition(":")[0] for r in records])
    env = _env()
    env.enable_checkpointing(200)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(5, 500))
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(source_topic)
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .set_property("reconnect.backoff.max.ms", "250")
        .build()
    )  # the client looks again soon
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
        .set_transactional_id_prefix(f"restart-{out}")
        .set_property("reconnect.backoff.max.ms", "250")
        .build()
    )
    env.from_source(source, WatermarkStrategy.no_watermarks(), "in").map(
        Throttle(400), output_type=Types.STRING()
    ).sink_to(sink)
    client = env.execute_async("through a broker restart")
    time.sleep(1.0)  # the job is under way
    assert not client.get_job_execution_result().done()
    kafka_broker.process.kill()  # stopped hard, mid-transaction
    kafka_broker.process.wait()
    started = time.monotonic()
    restart_kafka(kafka_broker)  # the job finds no broker while it starts again
    print(f"broker down for {time.monotonic() - started:.1f} s")
    client.get_job_execution_result().result(timeout=60)
    report = check_sequences(read_committed(bootstrap, out, len(records), idle=0.5), keys, per_key)
    assert report.exactly_once, str(report)


@pytest.mark.timeout(60)
def test_a_topic_deleted_under_a_running_job_fails_it_naming_the_topic(bootstrap):
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, ["a", "b"])
    env = _env()
    env.set_restart_strategy(RestartStrategies.no_restart())
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_property("partition.discovery.interval.ms", "200")
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    seen = threading.Event()

    def mark(value):
        seen.set()
        return value

    env.from_source(source, WatermarkStrategy.no_watermarks(), "in").map(mark).print()
    client = env.execute_async("topic deleted")
    deadline = time.monotonic() + 20
    while not seen.is_set():
        assert time.monotonic() < deadline, "the job read nothing"
        time.sleep(0.02)
    delete_topic(bootstrap, topic)
    error = client.get_job_execution_result().exception(timeout=40)
    assert error is not None and topic in messages(error) and "exist" in messages(error)
