"""The NATS and MQTT connectors' descriptions, without servers: what the builders refuse (with the fix in the
message), how splits are cut, the reply-subject parsing on the fetch path, and that a receiver survives
pickling without its live client."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest

from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.serialization import SimpleStringSchema
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.mqtt import MqttReceiver
from fluvial.datastream.connectors.nats import NatsSink, NatsSource, NatsStartingPosition
from fluvial.datastream.connectors.nats_reader import _sequences


def source_builder():  # type: ignore[no-untyped-def]
    return (
        NatsSource.builder()
        .set_servers("nats://127.0.0.1:4222")
        .set_stream("ORDERS")
        .set_consumer_name("job")
        .set_deserialization_schema(SimpleStringSchema())
    )


def test_one_split_per_subject_filter_or_one_for_the_whole_stream():
    splits = source_builder().set_subjects("orders.eu", "orders.us").build().create_splits(1)
    assert [(s.split_id, s.index, s.subject_filter, s.position) for s in splits] == [
        ("ORDERS:orders.eu", 0, "orders.eu", -1),
        ("ORDERS:orders.us", 1, "orders.us", -1),
    ]
    assert [s.subject_filter for s in source_builder().build().create_splits(4)] == [""]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda b: b.set_stream(""), "needs a stream"),
        (lambda b: b.set_stream("OR.DERS"), "may hold only"),
        (lambda b: b.set_consumer_name(""), "needs a consumer name"),
        (lambda b: b.set_subjects("a", "a"), "name a filter twice"),
        (lambda b: b.set_deserialization_schema(None), "needs a deserializer"),
    ],
)
def test_the_source_builder_refuses_what_cannot_work(change, message):
    with pytest.raises(InvalidJobError, match=message):
        change(source_builder()).build()


def test_connection_options_are_checked():
    with pytest.raises(ConfigurationError, match="nats://host:4222"):
        source_builder().set_servers("127.0.0.1:4222").build()
    with pytest.raises(ConfigurationError, match="must be > 0"):
        source_builder().set_connect_timeout(0).build()
    assert source_builder().set_servers("nats://a:1, nats://b:2").build().settings.connection.servers == (
        "nats://a:1",
        "nats://b:2",
    )


def test_starting_positions():
    assert NatsStartingPosition.committed().fallback == NatsStartingPosition.earliest()
    with pytest.raises(InvalidJobError, match="start at 1"):
        NatsStartingPosition.sequence(0)


def test_the_sink_builder_needs_one_subject_choice_and_a_serializer():
    base = NatsSink.builder().set_serialization_schema(SimpleStringSchema())
    with pytest.raises(InvalidJobError, match="exactly one"):
        base.build()
    with pytest.raises(InvalidJobError, match="wildcards"):
        NatsSink.builder().set_subject("out.*").set_serialization_schema(SimpleStringSchema()).build()
    sink = base.set_subject("out").set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE).build()
    assert sink.settings.guarantee is DeliveryGuarantee.EXACTLY_ONCE
    assert pickle.loads(pickle.dumps(sink)) == sink


def test_stream_and_consumer_sequences_come_from_the_reply_subject():
    message = SimpleNamespace(reply="$JS.ACK.ORDERS.job-0.1.42.7.1796173346182501815.3")
    assert _sequences(message) == (42, 7)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"qos": 3}, "QoS is 0, 1 or 2"),
        ({"client_id": ""}, "needs a client_id"),
        ({"topics": []}, "needs topic filters"),
        ({"connect_timeout": 0}, "connect_timeout > 0"),
    ],
)
def test_the_mqtt_receiver_refuses_what_cannot_work(options, message):
    with pytest.raises(InvalidJobError, match=message):
        MqttReceiver(**{"topics": ["t/#"], "client_id": "c", **options})


def test_an_mqtt_receiver_pickles_without_its_runtime():
    receiver = MqttReceiver("127.0.0.1", 1883, "sensors/#", client_id="c", qos=2)
    copy = pickle.loads(pickle.dumps(receiver))
    assert (copy.topics, copy.qos, copy.client_id, copy.address) == (("sensors/#",), 2, "c", "mqtt://127.0.0.1:1883")
    assert copy._client is None and not copy._queue


class FakeClient:
    def __init__(self) -> None:
        self.acks: list[tuple[int, int]] = []
        self.completed: list[int] = []

    def ack(self, mid: int, qos: int) -> None:
        self.acks.append((mid, qos))

    def complete(self, mid: int) -> None:
        self.completed.append(mid)


def receiver_with_fakes(qos: int = 1) -> tuple[MqttReceiver, list, FakeClient]:
    receiver = MqttReceiver(topics=["t"], client_id="c", qos=qos)
    stored: list = []
    receiver.positions = []  # type: ignore[attr-defined]

    def store(values, metadata=None, position=None):  # noqa: ANN001, ANN202
        stored.extend(values)
        receiver.positions.append(position)  # type: ignore[attr-defined]

    receiver.store = store  # type: ignore[method-assign]
    receiver._client = FakeClient()
    receiver._generation = 1
    return receiver, stored, receiver._client


def arrived(mid: int, payload: bytes, generation: int, dup: bool = False, qos: int = 1):  # type: ignore[no-untyped-def]
    from fluvial.datastream.connectors.mqtt import _Arrived

    return _Arrived("t", payload, mid, qos, dup, generation)


def test_messages_are_acknowledged_in_order_after_they_are_stored():
    receiver, stored, client = receiver_with_fakes()
    assert receiver._store_and_ack([arrived(1, b"a", 1), arrived(2, b"b", 1, qos=2), arrived(3, b"c", 1, qos=0)])
    assert stored == ["a", "b", "c"] and client.acks == [(1, 1), (2, 2)]  # QoS 0 is acknowledged by nobody


def test_a_stored_message_whose_connection_dropped_is_not_stored_again_when_the_broker_resends_it():
    receiver, stored, client = receiver_with_fakes()
    receiver._generation = 2  # the connection the batch came on is gone: no ack can reach the broker on it
    receiver._store_and_ack([arrived(7, b"x", 1)])
    assert stored == ["x"] and client.acks == []
    receiver._store_and_ack([arrived(7, b"x", 2, dup=True), arrived(8, b"y", 2)])  # the resend, then new
    assert stored == ["x", "y"] and client.acks == [(7, 1), (8, 1)]
    receiver._store_and_ack([arrived(7, b"z", 2, dup=True)])  # same packet id, other content: a new message
    assert stored == ["x", "y", "z"]


def test_a_message_that_cannot_be_stored_is_not_acknowledged():
    from fluvial.datastream.connectors.receiver import ReceiverStoppedError

    receiver, _, client = receiver_with_fakes()

    def refuse(values, metadata=None, position=None):  # noqa: ANN001, ANN202
        raise ReceiverStoppedError("stopped")

    receiver.store = refuse  # type: ignore[method-assign]
    assert not receiver._store_and_ack([arrived(1, b"a", 1)])
    assert client.acks == []


def test_qos2_blocks_record_the_stored_packet_ids_until_pubcomp_and_pubcomp_waits_for_a_block_without_them():
    receiver, stored, client = receiver_with_fakes(qos=2)
    receiver._store_and_ack([arrived(1, b"a", 1, qos=2), arrived(2, b"b", 1, qos=2)])
    assert stored == ["a", "b"] and client.acks == [(1, 2), (2, 2)]
    assert set(receiver.positions[-1]["pending"]) == {1, 2} and receiver.positions[-1]["session"] == "c@127.0.0.1:1883"
    receiver._on_pubrel(1)  # the broker has our PUBREC for 1: no PUBCOMP before a block forgets 1
    assert client.completed == []
    receiver._store_and_ack([arrived(3, b"c", 1, qos=2)])
    assert set(receiver.positions[-1]["pending"]) == {2, 3} and client.completed == [1]
    receiver._on_pubrel(2)
    receiver._on_pubrel(3)
    receiver._store_and_ack([])  # no message to carry the releases: an empty block does
    assert stored == ["a", "b", "c"] and receiver.positions[-1]["pending"] == {} and client.completed == [1, 2, 3]


def test_after_a_restart_a_qos2_redelivery_of_a_logged_message_is_acknowledged_and_not_stored_again():
    before, _, _ = receiver_with_fakes(qos=2)
    before._store_and_ack([arrived(5, b"x", 1, qos=2), arrived(6, b"y", 1, qos=2)])
    logged = before.positions[-1]  # the process dies here, maybe before the PUBRECs reached the broker

    receiver, stored, client = receiver_with_fakes(qos=2)
    assert receiver._ledger.restore(logged) == 2
    receiver._store_and_ack([arrived(5, b"x", 1, dup=True, qos=2), arrived(7, b"z", 1, qos=2)])
    assert stored == ["z"] and client.acks == [(5, 2), (7, 2)]
    assert set(receiver.positions[-1]["pending"]) == {5, 6, 7}  # 5 stays until its flow completes
    # a DUP=1 PUBLISH with a pending id but other content, and a DUP=0 one on a pending id, are new messages
    receiver._store_and_ack([arrived(6, b"other", 1, dup=True, qos=2)])
    assert stored == ["z", "other"]
    receiver._ledger.restore(logged)
    receiver._store_and_ack([arrived(5, b"x", 1, qos=2)])
    assert stored == ["z", "other", "x"]


def test_a_position_of_another_session_or_a_session_the_broker_lost_is_not_used():
    before, _, _ = receiver_with_fakes(qos=2)
    before._store_and_ack([arrived(5, b"x", 1, qos=2)])
    other = MqttReceiver(topics=["t"], client_id="other", qos=2)
    assert other._ledger.restore(before.positions[-1]) == 0

    receiver, stored, _ = receiver_with_fakes(qos=2)
    receiver._ledger.restore(before.positions[-1])
    receiver._session_lost_at = 1  # CONNACK said: no session present
    receiver._store_and_ack([arrived(5, b"x", 1, dup=True, qos=2)])
    assert stored == ["x"]


def test_a_pubrel_from_a_connection_that_is_gone_gets_no_pubcomp():
    receiver, _, client = receiver_with_fakes(qos=2)
    receiver._store_and_ack([arrived(1, b"a", 1, qos=2)])
    receiver._on_pubrel(1)
    receiver._generation = 2  # reconnected: the broker sends PUBREL again on the new connection
    receiver._store_and_ack([])
    assert client.completed == [] and receiver.positions[-1]["pending"] == {}
    receiver._on_pubrel(1)
    receiver._store_and_ack([])
    assert client.completed == [1]
