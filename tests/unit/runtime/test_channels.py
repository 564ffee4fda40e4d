"""LocalChannel and ChannelRegistry: bounded FIFO, credit-like writability, wake-ups across threads."""

from __future__ import annotations

import threading
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.runtime.channels import ALL_ATTEMPTS, DEFAULT_CAPACITY, ChannelId, ChannelRegistry, LocalChannel


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity"):
        LocalChannel(0)
    assert LocalChannel(1).capacity == 1
    assert LocalChannel().capacity == DEFAULT_CAPACITY


def test_fifo_and_empty_poll():
    channel = LocalChannel(4)
    assert channel.poll() is None
    for item in ("a", "b", "c"):
        channel.push(item)
    assert len(channel) == 3
    assert [channel.poll(), channel.poll(), channel.poll(), channel.poll()] == ["a", "b", "c", None]
    assert len(channel) == 0


def test_writable_until_capacity_and_push_is_never_refused():
    channel = LocalChannel(2)
    assert channel.writable()
    channel.push(1)
    assert channel.writable()
    channel.push(2)
    assert not channel.writable()
    channel.push(3)  # a producer's last step may overshoot by one buffer; the channel keeps it
    assert len(channel) == 3 and not channel.writable()
    channel.poll()
    assert not channel.writable()
    channel.poll()
    assert channel.writable()


def test_push_wakes_the_consumer_every_time():
    channel = LocalChannel(2)
    wake = Counter()
    channel.set_consumer_waker(wake)
    for i in range(5):
        channel.push(i)
    assert wake.calls == 5


def test_poll_wakes_the_producer_only_when_room_appears():
    channel = LocalChannel(3)
    wake = Counter()
    channel.set_producer_waker(wake)
    channel.push(1)
    channel.push(2)
    channel.poll()  # was not full: the producer is not waiting
    assert wake.calls == 0
    channel.push(3)
    channel.push(4)
    channel.push(5)  # over full: 4 items, capacity 3
    channel.poll()  # 3 left: still not writable, no point waking
    assert wake.calls == 0
    channel.poll()  # 2 left: writable again
    assert wake.calls == 1
    assert channel.writable()
    channel.poll()
    channel.poll()
    assert wake.calls == 1


@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(1, 5), ops=st.lists(st.booleans(), max_size=60))
def test_matches_a_deque_model_and_wakes_the_producer_exactly_on_regained_room(capacity, ops):
    channel = LocalChannel(capacity)
    wake_producer, wake_consumer = Counter(), Counter()
    channel.set_producer_waker(wake_producer)
    channel.set_consumer_waker(wake_consumer)
    model: deque = deque()
    expected_producer_wakes = pushes = 0
    for n, is_push in enumerate(ops):
        if is_push:
            channel.push(n)
            model.append(n)
            pushes += 1
        else:
            was_unwritable = len(model) >= capacity
            assert channel.poll() == (model.popleft() if model else None)
            if was_unwritable and len(model) < capacity:
                expected_producer_wakes += 1
        assert len(channel) == len(model)
        assert channel.writable() == (len(model) < capacity)
    assert wake_consumer.calls == pushes
    assert wake_producer.calls == expected_producer_wakes


@pytest.mark.timeout(30)
def test_threads_respecting_writable_transfer_everything_in_order_within_bound():
    """A producer thread that pushes only when writable (waiting for the producer wake-up otherwise) and a
    consumer thread (waiting for the consumer wake-up) move 20 000 items; the channel never exceeds capacity."""
    channel = LocalChannel(3)
    has_room, has_items = threading.Event(), threading.Event()
    channel.set_producer_waker(has_room.set)
    channel.set_consumer_waker(has_items.set)
    total = 20_000
    received: list[int] = []
    longest = [0]

    def produce():
        for i in range(total):
            while not channel.writable():
                has_room.clear()
                if not channel.writable():
                    has_room.wait(0.05)
            channel.push(i)
            longest[0] = max(longest[0], len(channel))

    def consume():
        while len(received) < total:
            item = channel.poll()
            if item is None:
                has_items.clear()
                if len(channel) == 0:
                    has_items.wait(0.05)
                continue
            received.append(item)

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(25)
    assert not any(thread.is_alive() for thread in threads)
    assert received == list(range(total))
    assert longest[0] <= channel.capacity


def test_channel_ids_are_values():
    assert ChannelId("e1", 0, 1) == ChannelId("e1", 0, 1)
    assert len({ChannelId("e1", 0, 1), ChannelId("e1", 0, 1), ChannelId("e1", 1, 0)}) == 2
    with pytest.raises(AttributeError):
        ChannelId("e1", 0, 1).producer_index = 2  # type: ignore[misc]


def test_registry_gives_both_ends_the_same_channel():
    registry = ChannelRegistry(capacity=5)
    producer_end = registry.get(ChannelId("e", 0, 1))
    consumer_end = registry.get(ChannelId("e", 0, 1))
    assert producer_end is consumer_end
    assert producer_end.capacity == 5
    assert registry.get(ChannelId("e", 1, 1)) is not producer_end
    assert registry.get(ChannelId("other", 0, 1)) is not producer_end
    producer_end.push("x")
    assert consumer_end.poll() == "x"


def test_a_new_attempt_gets_new_channels_and_releasing_older_attempts_keeps_the_newest():
    registry = ChannelRegistry()
    old = [registry.get(ChannelId("edge", p, c, attempt=0, job_id="a")) for p in range(2) for c in range(2)]
    current = registry.get(ChannelId("edge", 0, 0, attempt=1, job_id="a"))
    assert all(current is not channel for channel in old)  # nothing of attempt 0 reaches attempt 1
    registry.release_attempts_before("a", 1)
    assert registry.get(ChannelId("edge", 0, 0, attempt=1, job_id="a")) is current
    assert registry.get(ChannelId("edge", 0, 0, attempt=0, job_id="a")) is not old[0]
    registry.release_attempts_before("a", 1)  # releasing again is harmless


def test_jobs_with_the_same_edges_get_their_own_channels_and_release_only_their_own():
    registry = ChannelRegistry()
    first = registry.get(ChannelId("1_2_0", 0, 0, attempt=0, job_id="a"))
    second = registry.get(ChannelId("1_2_0", 0, 0, attempt=0, job_id="b"))
    assert first is not second  # a session cluster's jobs share TaskManagers, and edge names repeat
    registry.release_attempts_before("b", ALL_ATTEMPTS)  # job b ended
    assert registry.get(ChannelId("1_2_0", 0, 0, attempt=0, job_id="a")) is first
    assert registry.get(ChannelId("1_2_0", 0, 0, attempt=0, job_id="b")) is not second
