"""Remote channels over two data planes in one process: order with events, credit-based flow control that
bounds both ends, a dead connection reaching the consumer, and strangers refused before anything is unpickled."""

from __future__ import annotations

import logging
import os
import pickle
import socket
import time

import pytest

from fluvial.runtime.channels import ALL_ATTEMPTS, ChannelId
from fluvial.runtime.network.auth import new_secret
from fluvial.runtime.network.data_plane import DataPlane
from fluvial.runtime.records import END_OF_INPUT, ChannelBroken, CheckpointBarrier, EndOfInput, RecordBatch, Watermark
from fluvial.testing import wait_until

pytestmark = pytest.mark.timeout(30)
CHANNEL = ChannelId("edge", 0, 1)


@pytest.fixture
def planes():
    secret = new_secret()
    producer, consumer = DataPlane(secret, "producer", capacity=4), DataPlane(secret, "consumer", capacity=4)
    yield producer, consumer
    producer.close()
    consumer.close()


def drain(channel, count: int) -> list:
    items: list = []
    wait_until(lambda: _poll_into(channel, items, count), timeout=10, what=f"{count} items")
    return items


def _poll_into(channel, items: list, count: int) -> bool:
    while len(items) < count and (item := channel.poll()) is not None:
        items.append(item)
    return len(items) >= count


def test_items_and_events_arrive_in_order(planes):
    producer, consumer = planes
    out = producer.output_channel(CHANNEL, consumer.address)
    sent = [RecordBatch([1, 2]), Watermark(5), RecordBatch([3], [7]), CheckpointBarrier(1, 0), END_OF_INPUT]
    for item in sent:
        out.push(item)
    received = drain(consumer.input_channel(CHANNEL), len(sent))
    assert [type(item) for item in received] == [type(item) for item in sent]
    assert received[0].values == [1, 2] and received[2].timestamps == [7]
    assert received[1] == Watermark(5) and received[3] == CheckpointBarrier(1, 0)
    assert isinstance(received[4], EndOfInput)


def test_buffers_stay_pickled_until_the_task_polls_them_and_their_bytes_are_counted(planes):
    producer, consumer = planes
    first, second = ChannelId("edge", 0, 1), ChannelId("edge", 1, 1)  # two channels on one connection
    out_first, out_second = (producer.output_channel(cid, consumer.address) for cid in (first, second))
    out_first.push(RecordBatch([("a", 1), ("b", 2)], [10, 20]))
    out_second.push(RecordBatch(["x"]))
    out_first.push(Watermark(15))
    inbound = consumer.input_channel(first)
    wait_until(lambda: len(inbound) == 2, what="the buffer and the watermark")
    queued = inbound._queue[0]
    assert type(queued) is memoryview  # the reader thread routed the frame by its header only
    pending = inbound.pending()  # what an unaligned checkpoint stores: the records, not their bytes
    assert pending[0].values == [("a", 1), ("b", 2)] and pending[0].timestamps == [10, 20]
    assert pending[1] == Watermark(15)
    assert inbound.pending()[0] is pending[0]  # unpickled once, in its place in the queue
    batch = inbound.poll()
    assert type(batch) is RecordBatch and batch.values == [("a", 1), ("b", 2)] and batch.timestamps == [10, 20]
    assert inbound.poll() == Watermark(15)
    assert drain(consumer.input_channel(second), 1)[0].values == ["x"]
    assert inbound.serialized_bytes == out_first.serialized_bytes > 0
    assert consumer.input_channel(second).serialized_bytes == out_second.serialized_bytes > 0


def test_a_producer_without_credit_stops_and_a_polling_consumer_frees_it(planes):
    producer, consumer = planes
    out = producer.output_channel(CHANNEL, consumer.address)
    pushed = 0
    while out.writable():
        out.push(RecordBatch([pushed]))
        pushed += 1
    assert pushed == 4  # the consumer's capacity: then no credit
    inbound = consumer.input_channel(CHANNEL)
    wait_until(lambda: len(inbound) == 4, what="the 4 items to arrive")
    time.sleep(0.05)
    assert not out.writable(), "credit came back although the consumer polled nothing"
    assert inbound.poll().values == [0]
    assert inbound.poll().values == [1]  # a batch of credits (capacity // 2) goes back now
    wait_until(out.writable, what="credits to come back")
    while out.writable():
        out.push(RecordBatch([pushed]))
        pushed += 1
    assert pushed == 6 and len(inbound) <= 4  # bounded on the consumer's side too


def test_a_consumer_that_drains_its_queue_grants_everything_it_took(planes):
    producer, consumer = planes
    out = producer.output_channel(CHANNEL, consumer.address)
    out.push(RecordBatch([1]))
    inbound = consumer.input_channel(CHANNEL)
    assert drain(inbound, 1)[0].values == [1]  # the queue ran empty: its one credit goes back at once
    wait_until(lambda: out.writable() and out._sent - out._granted == 0, what="the credit for one item")


def test_late_frames_of_a_released_job_are_dropped_and_other_jobs_go_on(planes):
    producer, consumer = planes
    ended, running = ChannelId("1_2_0", 0, 0, 0, "job-a"), ChannelId("1_2_0", 0, 0, 0, "job-b")
    consumer.release_attempts_before("job-a", ALL_ATTEMPTS)  # job a ended on the consumer's TaskManager
    producer.output_channel(ended, consumer.address).push(RecordBatch(["late"]))
    producer.output_channel(running, consumer.address).push(RecordBatch(["on time"]))
    assert drain(consumer.input_channel(running), 1)[0].values == ["on time"]  # same connection, after the late one
    assert ended not in consumer._inputs  # the late frame made no channel that nobody would ever release


def test_a_dead_connection_breaks_the_channels_that_had_not_ended(planes):
    producer, consumer = planes
    ended, open_ = ChannelId("edge", 0, 1), ChannelId("edge", 1, 1)
    producer.output_channel(ended, consumer.address).push(END_OF_INPUT)
    producer.output_channel(open_, consumer.address).push(RecordBatch([1]))
    drain(consumer.input_channel(ended), 1)
    drain(consumer.input_channel(open_), 1)
    producer.close()  # the producer's process dies
    broken = drain(consumer.input_channel(open_), 1)[0]
    assert isinstance(broken, ChannelBroken) and "closed" in str(broken.error)
    assert consumer.input_channel(ended).poll() is None  # it had ended: nothing more


def test_strangers_are_dropped_without_unpickling_and_the_channels_go_on(planes, tmp_path, caplog):
    producer, consumer = planes
    out = producer.output_channel(CHANNEL, consumer.address)
    inbound = consumer.input_channel(CHANNEL)
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    with caplog.at_level(logging.WARNING):
        for attack in (b"garbage" * 100, pickle.dumps(Exploit())):
            with socket.create_connection(consumer.address) as stranger:
                stranger.recv(64)  # the challenge
                stranger.sendall(attack)
                stranger.settimeout(5)
                try:
                    assert stranger.recv(64) == b""  # dropped: closed...
                except ConnectionResetError:
                    pass  # ...or reset, when our unread bytes were still in its buffer
        wait_until(lambda: caplog.text.count("unauthenticated") >= 2, what="the drops to be logged")
    out.push(RecordBatch(["still flowing"]))
    assert drain(inbound, 1)[0].values == ["still flowing"]
    assert not marker.exists()
