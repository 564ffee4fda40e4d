"""The Kafka connector without a broker: builders and their errors, offsets initializers over a fake broker,
split ownership and subscription, the record schemas, the transaction ids, and the sequence oracle."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from fluvial.common.errors import InvalidJobError, ResourceError
from fluvial.common.serialization import SimpleStringSchema
from fluvial.datastream.connectors.kafka import (
    DeliveryGuarantee,
    FlinkKafkaConsumer,
    FlinkKafkaProducer,
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
    KafkaTopicSelector,
    Semantic,
)
from fluvial.datastream.connectors.kafka.source import KafkaDiscoverySplit, KafkaSubscriber, split_owner
from fluvial.datastream.connectors.kafka.transactions import parse_id
from fluvial.testing.kafka import check_sequences

P0, P1, P2 = (KafkaTopicPartition("t", i) for i in range(3))


class FakeBroker:
    """Offsets of partitions t-0..t-2: earliest 5, latest 50; group offsets only for t-0; timestamps map to
    offset 20 except on t-2, which has none that late."""

    def earliest(self, partitions):
        return {tp: 5 for tp in partitions}

    def latest(self, partitions):
        return {tp: 50 for tp in partitions}

    def committed(self, partitions):
        return {tp: (17 if tp == P0 else None) for tp in partitions}

    def for_timestamp(self, partitions, timestamp):
        return {tp: (None if tp == P2 else 20) for tp in partitions}


def test_offsets_initializers_resolve_to_concrete_offsets():
    broker, parts = FakeBroker(), [P0, P1, P2]
    assert KafkaOffsetsInitializer.earliest().resolve(parts, broker) == {P0: 5, P1: 5, P2: 5}
    assert KafkaOffsetsInitializer.latest().resolve(parts, broker) == {P0: 50, P1: 50, P2: 50}
    assert KafkaOffsetsInitializer.timestamp(123).resolve(parts, broker) == {P0: 20, P1: 20, P2: 50}
    committed = KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.LATEST)
    assert committed.resolve(parts, broker) == {P0: 17, P1: 50, P2: 50}
    given = KafkaOffsetsInitializer.offsets({P1: 9})
    assert given.resolve(parts, broker) == {P0: 5, P1: 9, P2: 5}
    with pytest.raises(ResourceError, match="t-1, t-2 and the offset reset strategy is NONE"):
        KafkaOffsetsInitializer.committed_offsets().resolve(parts, broker)


class SlowBrokerConsumer:
    """offsets_for_times as a loaded broker answers it: partition 1 gets `errors` answers with a per-partition
    error (a request that timed out) before its offset; partition 0 has no record that late (offset -1)."""

    def __init__(self, errors: int) -> None:
        self.errors = errors
        self.asked: list[list[int]] = []

    def offsets_for_times(self, partitions, timeout):
        self.asked.append([tp.partition for tp in partitions])
        answers = []
        for tp in partitions:
            if tp.partition == 1 and self.errors > 0:
                self.errors -= 1
                answers.append(SimpleNamespace(topic=tp.topic, partition=1, offset=-1001, error="REQUEST_TIMED_OUT"))
            else:
                answers.append(
                    SimpleNamespace(
                        topic=tp.topic, partition=tp.partition, offset=-1 if tp.partition == 0 else 14, error=None
                    )
                )
        return answers


def test_an_offset_for_a_timestamp_the_broker_failed_to_answer_is_asked_again_never_taken_for_none():
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed: pip install -e .[kafka]")
    from fluvial.datastream.connectors.kafka.client import ConsumerOffsets, KafkaConnectorError

    tps = [KafkaTopicPartition("t", 0), KafkaTopicPartition("t", 1)]
    consumer = SlowBrokerConsumer(errors=2)
    assert ConsumerOffsets(consumer, "broker:9092", 5.0).for_timestamp(tps, 1_000) == {tps[0]: None, tps[1]: 14}
    assert consumer.asked == [[0, 1], [1], [1]]  # only the partition that failed is asked again
    with pytest.raises(KafkaConnectorError, match=r"offsets for timestamp 1000 .*t-1: REQUEST_TIMED_OUT"):
        ConsumerOffsets(SlowBrokerConsumer(errors=1_000), "broker:9092", 0.3).for_timestamp(tps, 1_000)


def test_offsets_initializers_reject_bad_arguments():
    with pytest.raises(InvalidJobError, match="milliseconds since the epoch"):
        KafkaOffsetsInitializer.timestamp(-1)
    with pytest.raises(InvalidJobError, match="KafkaTopicPartition: offset"):
        KafkaOffsetsInitializer.offsets({("t", 0): 1})
    with pytest.raises(InvalidJobError, match="KafkaOffsetResetStrategy"):
        KafkaOffsetsInitializer.committed_offsets("earliest")


def test_every_partition_has_exactly_one_owner_and_owners_are_balanced():
    partitions = [KafkaTopicPartition(topic, p) for topic in ("a", "b", "orders") for p in range(12)]
    for count in (1, 2, 3, 5):
        owners = Counter(split_owner(tp, count) for tp in partitions)
        assert set(owners) == set(range(count))
        assert max(owners.values()) - min(owners.values()) <= 3  # each topic spreads round robin
    assert split_owner(KafkaTopicPartition("orders", 3), 4) == split_owner(KafkaTopicPartition("orders", 3), 4)


def test_planning_gives_each_subtask_one_discovery_split_and_asks_no_broker():
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers("nowhere:1")
        .set_topics("t")
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    assert source.create_splits(3) == [KafkaDiscoverySplit(f"discovery-{i}-of-3", i, 3) for i in range(3)]


def _metadata(**topics):
    return SimpleNamespace(
        topics={name: SimpleNamespace(partitions=dict.fromkeys(range(n)), error=None) for name, n in topics.items()}
    )


def test_subscribers_select_topics_patterns_and_partitions():
    metadata = _metadata(orders=2, order_log=1, users=1, __consumer_offsets=4)
    assert KafkaSubscriber(topics=("users",)).select(metadata, "b") == [KafkaTopicPartition("users", 0)]
    assert KafkaSubscriber(pattern="order.*").select(metadata, "b") == [
        KafkaTopicPartition("order_log", 0),
        KafkaTopicPartition("orders", 0),
        KafkaTopicPartition("orders", 1),
    ]
    assert KafkaSubscriber(pattern=".*").select(metadata, "b")[-1] == KafkaTopicPartition("users", 0)  # no __ topics
    with pytest.raises(ResourceError, match="topic\\(s\\) missing do not exist on Kafka at b"):
        KafkaSubscriber(topics=("missing",)).select(metadata, "b")


def test_builders_name_what_is_missing():
    with pytest.raises(InvalidJobError, match="bootstrap servers"):
        KafkaSource.builder().set_topics("t").set_value_only_deserializer(SimpleStringSchema()).build()
    with pytest.raises(InvalidJobError, match="something to read"):
        KafkaSource.builder().set_bootstrap_servers("b").set_value_only_deserializer(SimpleStringSchema()).build()
    with pytest.raises(InvalidJobError, match="exclude each other"):
        KafkaSource.builder().set_topics("t").set_topic_pattern("x.*")
    with pytest.raises(InvalidJobError, match="set_group_id"):
        (
            KafkaSource.builder()
            .set_bootstrap_servers("b")
            .set_topics("t")
            .set_starting_offsets(KafkaOffsetsInitializer.committed_offsets())
            .set_value_only_deserializer(SimpleStringSchema())
            .build()
        )
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("t")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    with pytest.raises(InvalidJobError, match="transactional id prefix"):
        (
            KafkaSink.builder()
            .set_bootstrap_servers("b")
            .set_record_serializer(serializer)
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .build()
        )
    with pytest.raises(InvalidJobError, match="needs a topic"):
        KafkaRecordSerializationSchema.builder().set_value_serialization_schema(SimpleStringSchema()).build()


def test_the_source_builder_takes_properties_as_flink_does():
    source = (
        KafkaSource.builder()
        .set_properties({"bootstrap.servers": "b:1", "group.id": "g", "x.y": 3})
        .set_topics("a", "b")
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    assert (source.bootstrap_servers, source.group_id, source.properties) == ("b:1", "g", {"x.y": "3"})
    assert source.subscriber.topics == ("a", "b") and source.bounded
    assert source.get_boundedness().name == "BOUNDED"


def test_record_serialization_compiles_to_plain_functions():
    class ByParity(KafkaTopicSelector):
        def apply(self, value):
            return "even" if value % 2 == 0 else "odd"

    class Number(SimpleStringSchema):
        def serialize(self, element):
            return str(element).encode()

    schema = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(ByParity())
        .set_key_serialization_schema(Number())
        .set_value_serialization_schema(Number())
        .build()
    )
    topic_of, value_of, key_of = schema.compile()
    assert (topic_of(3), value_of(3), key_of(4)) == ("odd", b"3", b"4")
    plain = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("t")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    assert plain.compile()[0] is None and plain.compile()[1]("é") == "é".encode()


def test_legacy_consumer_and_producer_map_onto_the_new_connector():
    consumer = FlinkKafkaConsumer(
        ["a", "b"], SimpleStringSchema(), {"bootstrap.servers": "b:1", "group.id": "g", "auto.offset.reset": "earliest"}
    )
    assert isinstance(consumer, KafkaSource) and consumer.group_id == "g"
    assert consumer.starting_offsets == KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST)
    assert consumer.set_start_from_latest().starting_offsets == KafkaOffsetsInitializer.latest()
    producer = FlinkKafkaProducer(
        "out", SimpleStringSchema(), {"bootstrap.servers": "b:1"}, semantic=Semantic.EXACTLY_ONCE
    )
    assert isinstance(producer, KafkaSink) and producer.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
    assert producer.transactional_id_prefix and producer.serializer.topic == "out"


def test_transactional_ids_are_parsed_only_for_their_prefix():
    assert parse_id("job-1", "job-1-3-1700000000000") == (3, 1700000000000)
    assert parse_id("job", "job-1-3-17") is None  # a longer prefix of another job is not ours
    assert parse_id("job", "other-0-1") is None


def test_the_sequence_oracle_counts_lost_duplicated_and_out_of_order_records():
    assert check_sequences(["0:0", "1:0", "0:1", "1:1"], 2, 2).exactly_once
    report = check_sequences(["0:0", "0:1", "0:1", "1:1", "1:0"], 2, 2)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 1, 2)
    missing = check_sequences(["0:0"], 1, 2)
    assert missing.lost == 1 and not missing.at_least_once


def test_every_name_of_pyflinks_kafka_module_imports_from_fluvial():
    """PyFlink's surface lists its Kafka names as Java-only (`skipped`); fluvial has each of them."""
    import importlib
    from pathlib import Path

    surface = Path(__file__).parents[3] / "pyflink_surface.txt"
    names = [
        line.split(":")[1].strip()
        for line in surface.read_text().splitlines()
        if line.startswith("skipped pyflink.datastream.connectors.kafka:")
    ]
    module = importlib.import_module("fluvial.datastream.connectors.kafka")
    assert len(names) == 13 and all(getattr(module, name) for name in names)


def test_only_this_jobs_unprepared_transactions_of_the_owned_subtasks_are_aborted(monkeypatch):
    from fluvial.datastream.connectors.kafka import transactions

    ongoing = ["job-0-5", "job-0-9", "job-0-20", "job-1-7", "job-2-7", "job-x-0-9", "other-0-9"]
    admin = SimpleNamespace(ongoing=lambda: [SimpleNamespace(transactional_id=t) for t in ongoing])
    fenced = []
    monkeypatch.setattr(transactions, "fence", lambda bootstrap, props, tid, timeout: fenced.append(tid))
    # subtask 0 restored with next number 9, and old subtask 2's state (next 3); its own numbers start at 20
    transactions.abort_lingering(admin, "b", {}, "job", {0: 9, 2: 3}, 20, 1.0)
    assert fenced == ["job-0-9", "job-2-7"]  # 5 is a committable's (below 9); 20 is its own; 1 is not owned
