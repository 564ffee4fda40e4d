"""KafkaSource against a real broker: starting offsets, bounded and unbounded reading, exact restore of offsets,
pattern subscription with a topic created while running, per-partition watermarks with an idle partition, and
the errors a user meets (a record that cannot be deserialized, an unreachable broker)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from fluvial.common import Duration, Types, WatermarkStrategy
from fluvial.common.serialization import SimpleStringSchema
from fluvial.common.task_info import TaskInfo
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.kafka import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaSource,
    KafkaTopicPartition,
)
from fluvial.datastream.formats.json import JsonRowDeserializationSchema
from fluvial.testing.kafka import create_topic, produce
from services.server import refusing_port
from tests.integration.kafka.helpers import messages

pytestmark = pytest.mark.timeout(60)


def _source(bootstrap: str, topic: str, **settings):
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_value_only_deserializer(settings.pop("schema", SimpleStringSchema()))
    )
    for name, value in settings.items():
        getattr(builder, name)(value)
    return builder.build()


def _run_bounded(source, parallelism: int = 2) -> list:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return list(env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka").execute_and_collect())


def _an_hour_ago_ms() -> int:
    """A round event time (a multiple of 10 s) an hour ago, to stamp records with: records stamped in 1970 are
    older than the broker's log.retention (7 days), and its retention check (30 s after it starts, then every
    5 min) deletes them whenever it lands mid-test — a test slowed by load then reads nothing."""
    return (int(time.time() * 1000) // 10_000 - 360) * 10_000


def _info(index: int = 0, parallelism: int = 1) -> TaskInfo:
    return TaskInfo("job", "Source: kafka", index, parallelism, 128)


def _poll_until(reader, count: int, timeout: float = 20.0) -> list:
    values: list = []
    deadline = time.monotonic() + timeout
    while len(values) < count:
        assert time.monotonic() < deadline, f"only {len(values)} of {count} records arrived"
        got = reader.poll(100)
        values.extend(got or [])
        if not got:
            time.sleep(0.01)
    return values


def test_bounded_source_reads_every_partition_up_to_the_latest_offsets_and_ends(bootstrap):
    topic = create_topic(bootstrap, 3)
    produce(bootstrap, topic, [f"r{i}" for i in range(300)], partitions=3)
    source = _source(bootstrap, topic, set_bounded=KafkaOffsetsInitializer.latest())
    assert sorted(_run_bounded(source)) == sorted(f"r{i}" for i in range(300))


def test_starting_offsets_explicit_timestamp_committed_and_latest(bootstrap):
    topic = create_topic(bootstrap, 2)
    base = _an_hour_ago_ms()
    stamps = [base + i for i in range(20)]
    produce(bootstrap, topic, [f"r{i}" for i in range(20)], partitions=2, timestamps=stamps)
    bounded = KafkaOffsetsInitializer.latest()

    explicit = KafkaOffsetsInitializer.offsets({KafkaTopicPartition(topic, 0): 8})  # p1 falls back to earliest
    got = _run_bounded(_source(bootstrap, topic, set_starting_offsets=explicit, set_bounded=bounded))
    assert sorted(got) == sorted(["r16", "r18"] + [f"r{i}" for i in range(1, 20, 2)])

    by_time = KafkaOffsetsInitializer.timestamp(base + 14)
    got = _run_bounded(_source(bootstrap, topic, set_starting_offsets=by_time, set_bounded=bounded))
    assert sorted(got) == sorted(f"r{i}" for i in range(14, 20))

    latest = _run_bounded(
        _source(bootstrap, topic, set_starting_offsets=KafkaOffsetsInitializer.latest(), set_bounded=bounded)
    )
    assert latest == []

    group = f"g-{topic}"
    committed = KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST)
    got = _run_bounded(
        _source(bootstrap, topic, set_group_id=group, set_starting_offsets=committed, set_bounded=bounded)
    )
    assert sorted(got) == sorted(f"r{i}" for i in range(20))  # no committed offsets yet: the reset strategy

    with pytest.raises(Exception, match="reset strategy is NONE"):
        _run_bounded(
            _source(
                bootstrap,
                topic,
                set_group_id=f"other-{group}",
                set_bounded=bounded,
                set_starting_offsets=KafkaOffsetsInitializer.committed_offsets(),
            )
        )


def test_a_restored_reader_resumes_exactly_after_the_last_record_it_returned(bootstrap):
    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, [f"r{i}" for i in range(200)], partitions=2)
    source = _source(bootstrap, topic, set_bounded=KafkaOffsetsInitializer.latest())
    reader = source.create_reader(_info())
    reader.add_splits(source.create_splits(1))
    first = _poll_until(reader, 70)
    state = reader.snapshot_state()
    reader.close()
    restored = source.create_reader(_info())
    restored.add_splits(state)
    rest = []
    while (got := restored.poll(100)) is not None:
        rest.extend(got)
    restored.close()
    assert sorted(first + rest) == sorted(f"r{i}" for i in range(200))
    assert len(first) + len(rest) == 200


def test_offsets_are_committed_to_the_group_when_a_checkpoint_completes(bootstrap):
    from confluent_kafka import Consumer, TopicPartition

    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, [f"r{i}" for i in range(50)])
    group = f"g-{topic}"
    source = _source(bootstrap, topic, set_group_id=group)
    reader = source.create_reader(_info())
    reader.add_splits(source.create_splits(1))
    _poll_until(reader, 50)
    reader.snapshot_state()
    reader.on_snapshot(1)
    reader.notify_checkpoint_complete(1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    deadline = time.monotonic() + 10
    while consumer.committed([TopicPartition(topic, 0)], timeout=5)[0].offset != 50:
        reader.poll(1)  # serves the client's callbacks
        assert time.monotonic() < deadline, "the checkpoint's offsets were not committed to the group"
        time.sleep(0.05)
    consumer.close()
    reader.close()


def test_pattern_subscription_finds_a_topic_created_while_running(bootstrap):
    prefix = f"pat{time.monotonic_ns()}"
    first = create_topic(bootstrap, 1, name=f"{prefix}-a")
    produce(bootstrap, first, ["a0", "a1"])
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topic_pattern(f"{prefix}-.*")
        .set_property("partition.discovery.interval.ms", "100")
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    reader = source.create_reader(_info())
    reader.add_splits(source.create_splits(1))
    assert sorted(_poll_until(reader, 2)) == ["a0", "a1"]
    second = create_topic(bootstrap, 2, name=f"{prefix}-b")
    produce(bootstrap, second, ["b0", "b1", "b2"], partitions=2)
    assert sorted(_poll_until(reader, 3)) == ["b0", "b1", "b2"]  # from the earliest offset, as in Flink
    reader.close()


def test_per_partition_watermarks_an_idle_partition_does_not_stop_event_time(bootstrap):
    from fluvial.datastream.window import TumblingEventTimeWindows

    topic = create_topic(bootstrap, 2)
    base = _an_hour_ago_ms()
    produce(bootstrap, topic, ["quiet"], partition=1, timestamps=[base + 1_000])  # then partition 1 stays silent
    stop = threading.Event()

    def busy() -> None:  # partition 0 keeps going, one record every 50 ms, a second of event time each
        for i in range(600):
            if stop.is_set():
                return
            produce(bootstrap, topic, [f"busy{i}"], partition=0, timestamps=[base + 1_000 + i * 1_000])
            time.sleep(0.05)

    writer = threading.Thread(target=busy, daemon=True)
    writer.start()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(300))
    counts = (
        env.from_source(_source(bootstrap, topic), strategy, "kafka")
        .map(lambda v: (v[:4], 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda t: t[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    try:
        with counts.execute_and_collect() as results:
            # window [0,10s) closes only when the watermark passes 10 s: partition 0 carries it there, and
            # partition 1, silent at 1 s, must have gone idle rather than hold it back
            seen = [next(results), next(results), next(results)]
    finally:
        stop.set()
        writer.join()
    assert ("busy", 9) in seen and ("quie", 1) in seen and ("busy", 10) in seen


def test_a_record_that_cannot_be_deserialized_fails_the_job_naming_topic_partition_and_offset(bootstrap):
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, [json.dumps({"id": 1}), "not json", json.dumps({"id": 3})])
    schema = JsonRowDeserializationSchema.builder().type_info(Types.ROW_NAMED(["id"], [Types.INT()])).build()
    source = _source(bootstrap, topic, schema=schema, set_bounded=KafkaOffsetsInitializer.latest())
    with pytest.raises(Exception) as failure:
        _run_bounded(source, parallelism=1)
    assert f"offset 1 of partition 0 of topic '{topic}'" in messages(failure.value)

    lenient = (
        JsonRowDeserializationSchema.builder()
        .type_info(Types.ROW_NAMED(["id"], [Types.INT()]))
        .ignore_parse_errors()
        .build()
    )
    got = _run_bounded(_source(bootstrap, topic, schema=lenient, set_bounded=KafkaOffsetsInitializer.latest()), 1)
    assert [row[0] for row in got] == [1, 3]  # the bad record is skipped when the schema is asked to


def test_an_unreachable_bootstrap_server_fails_within_the_timeout_naming_it():
    with refusing_port() as port:
        address = f"127.0.0.1:{port}"
        source = (
            KafkaSource.builder()
            .set_bootstrap_servers(address)
            .set_topics("t")
            .set_property("default.api.timeout.ms", "1500")
            .set_property("log_level", "0")
            .set_value_only_deserializer(SimpleStringSchema())
            .build()
        )
        reader = source.create_reader(_info())
        reader.add_splits(source.create_splits(1))
        started = time.monotonic()
        with pytest.raises(Exception, match=f"Kafka at {address} did not answer"):
            reader.poll(10)
        assert time.monotonic() - started < 10
        reader.close()


def test_pyflinks_kafka_json_example_writes_and_reads_back_its_rows(bootstrap):
    import subprocess
    import sys
    from pathlib import Path

    from fluvial.testing.kafka import delete_topic
    from tests.programs import user_environment

    example = Path(__file__).resolve().parents[3] / "examples" / "pyflink" / "kafka_json_format.py"
    create_topic(bootstrap, 1, name="test_json_topic")
    try:
        done = subprocess.run(
            [sys.executable, str(example), "--bootstrap-servers", bootstrap],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
            env=user_environment(),
        )
    finally:
        delete_topic(bootstrap, "test_json_topic")
    assert done.returncode == 0, done.stderr
    lines = [line.split("> ", 1)[-1] for line in done.stdout.splitlines()]
    assert lines[0] == "start writing data to kafka" and "start reading data from kafka" in lines
    assert sorted(lines[lines.index("start reading data from kafka") + 1 :]) == [
        "+I[1, hi]",
        "+I[2, hello]",
        "+I[3, hi]",
        "+I[4, hello]",
        "+I[5, hi]",
        "+I[6, hello]",
        "+I[6, hello]",
    ]


def test_a_bounded_kafka_source_runs_as_a_batch_job(bootstrap):
    from fluvial.datastream import RuntimeExecutionMode

    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, [f"k{i % 3}" for i in range(60)], partitions=2)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    counts = (
        env.from_source(
            _source(bootstrap, topic, set_bounded=KafkaOffsetsInitializer.latest()),
            WatermarkStrategy.no_watermarks(),
            "kafka",
        )
        .map(lambda v: (v, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda t: t[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    assert sorted(counts.execute_and_collect()) == [("k0", 20), ("k1", 20), ("k2", 20)]  # one final result per key


def test_a_start_the_broker_deleted_meanwhile_goes_on_from_the_logs_start_and_a_bounded_read_still_ends(bootstrap):
    """Retention can delete records between resolving a start and fetching it. Given offsets (default reset
    EARLIEST) then go on from the log's start, as Flink's do; and a bounded partition whose records are all gone
    ends by its position instead of waiting forever for a record at its stopping offset."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    partial, emptied = create_topic(bootstrap, 1), create_topic(bootstrap, 1)
    produce(bootstrap, partial, [f"r{i}" for i in range(6)], partition=0)
    produce(bootstrap, emptied, ["gone0", "gone1"], partition=0)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deleted = admin.delete_records([TopicPartition(partial, 0, 3), TopicPartition(emptied, 0, 2)])
    for future in deleted.values():
        future.result(30)

    def read(topic: str) -> list:
        zero = KafkaOffsetsInitializer.offsets({KafkaTopicPartition(topic, 0): 0})
        return _run_bounded(_source(bootstrap, topic, set_starting_offsets=zero, set_bounded=bounded), 1)

    bounded = KafkaOffsetsInitializer.latest()
    assert sorted(read(partial)) == ["r3", "r4", "r5"]
    assert read(emptied) == []
