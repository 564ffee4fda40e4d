"""Kafka connector throughput against a real broker (one node, `services/kafka.py`), 100-byte records:

1. KafkaSource (SimpleStringSchema, bounded) into a discarding sink, against a bare confluent-kafka consume
   loop decoding each value (target >= 0.8x);
2. KafkaSink (AT_LEAST_ONCE) fed by a sequence source, against a bare produce loop of the same records
   (target >= 0.8x);
3. KafkaSink EXACTLY_ONCE against AT_LEAST_ONCE, checkpointing every second (target >= 0.7x).

    python -m bench.kafka [--records 1000000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Measurement, report
from bench.spine import CountingSink

PAYLOAD = "x" * 92  # with an 8-digit number: 100 bytes


def _record(i: int) -> str:
    return f"{i:08d}{PAYLOAD}"


def _quiet() -> dict:
    return {"log_level": 3}


def fill(bootstrap: str, topic: str, records: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000, **_quiet()})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, _record(i).encode())
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush()


def bare_consume(bootstrap: str, topic: str, records: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-bare", "enable.auto.commit": False, **_quiet()}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    count = 0
    while count < records:
        batch = consumer.consume(1024, 1.0)
        values = [m.value().decode() for m in batch if m.error() is None]
        count += len(values)
    consumer.close()
    return count


def fluvial_consume(bootstrap: str, topic: str, records: int) -> int:
    from fluvial.common import Configuration, WatermarkStrategy
    from fluvial.common.serialization import SimpleStringSchema
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", "thread")
    )
    env.set_parallelism(1)
    sink = CountingSink()
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_property("log_level", "3")
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").add_sink(sink)
    env.execute("kafka source bench")
    assert sink.count == records, sink.count
    return sink.count


def bare_produce(bootstrap: str, topic: str, records: int) -> int:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **_quiet()})
    produce = producer.produce
    for i in range(records):
        data = _record(i).encode()
        while True:
            try:
                produce(topic, data)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush()
    return records


def fluvial_produce(bootstrap: str, topic: str, records: int, guarantee: str, checkpoint_ms: int | None) -> int:
    from fluvial.common import Configuration, Types
    from fluvial.common.serialization import SimpleStringSchema
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.connectors.kafka import DeliveryGuarantee, KafkaRecordSerializationSchema, KafkaSink
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", "thread")
    )
    env.set_parallelism(1)
    if checkpoint_ms:
        env.enable_checkpointing(checkpoint_ms)
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_delivery_guarantee(DeliveryGuarantee[guarantee])
        .set_transactional_id_prefix(f"bench-{topic}")
        .set_property("log_level", "3")
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .build()
    )
    env.from_source(NumberSequenceSource(0, records - 1), source_name="numbers").map(
        _record, output_type=Types.STRING()
    ).sink_to(sink)
    env.execute("kafka sink bench")
    return records


def timed(name: str, records: int, run) -> Measurement:
    start = time.perf_counter()
    run()
    return Measurement(name, records, time.perf_counter() - start)


def best(name: str, records: int, run, repeat: int) -> Measurement:
    return min((timed(name, records, run) for _ in range(repeat)), key=lambda m: m.seconds)


def main(argv: list[str] | None = None) -> bool:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from fluvial.testing.kafka import create_topic
    from services.kafka import start_kafka

    n, repeat = args.records, args.repeat
    with tempfile.TemporaryDirectory(prefix="kafka-bench-") as tmp:
        broker = start_kafka(Path(tmp))
        bootstrap = broker.extra["bootstrap"]
        try:
            topic = create_topic(bootstrap, 1)
            fill(bootstrap, topic, n)
            ok = True
            source, bare = None, None
            for _ in range(repeat):  # interleaved, so both see the same drift of this machine
                s = timed("fluvial", n, lambda: fluvial_consume(bootstrap, topic, n))
                b = timed("bare loop", n, lambda: bare_consume(bootstrap, topic, n))
                source = s if source is None or s.seconds < source.seconds else source
                bare = b if bare is None or b.seconds < bare.seconds else bare
            ok &= report(
                f"KafkaSource -> discarding sink, {n:,} records of 100 bytes",
                source,
                bare,
                0.8,
                ("KafkaSource", "bare loop"),
            )
            sink, bare = None, None
            for _ in range(repeat):
                s = timed(
                    "fluvial",
                    n,
                    lambda: fluvial_produce(bootstrap, create_topic(bootstrap, 1), n, "AT_LEAST_ONCE", None),
                )
                b = timed("bare loop", n, lambda: bare_produce(bootstrap, create_topic(bootstrap, 1), n))
                sink = s if sink is None or s.seconds < sink.seconds else sink
                bare = b if bare is None or b.seconds < bare.seconds else bare
            ok &= report(
                f"KafkaSink AT_LEAST_ONCE, {n:,} records of 100 bytes", sink, bare, 0.8, ("KafkaSink", "bare loop")
            )
            exactly, at_least = None, None
            # the broker creates its transaction-state topic on the first transaction: not the sink's cost
            fluvial_produce(bootstrap, create_topic(bootstrap, 1), 1000, "EXACTLY_ONCE", 1000)
            for _ in range(repeat):
                e = timed(
                    "fluvial",
                    n,
                    lambda: fluvial_produce(bootstrap, create_topic(bootstrap, 1), n, "EXACTLY_ONCE", 1000),
                )
                a = timed(
                    "fluvial",
                    n,
                    lambda: fluvial_produce(bootstrap, create_topic(bootstrap, 1), n, "AT_LEAST_ONCE", 1000),
                )
                exactly = e if exactly is None or e.seconds < exactly.seconds else exactly
                at_least = a if at_least is None or a.seconds < at_least.seconds else at_least
            ok &= report(
                f"KafkaSink EXACTLY_ONCE vs AT_LEAST_ONCE, checkpoint every 1 s, {n:,} records",
                exactly,
                at_least,
                0.7,
                ("EXACTLY_ONCE", "AT_LEAST_ONCE"),
            )
        finally:
            broker.stop()
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
