"""Backpressure: a slow sink slows a fast source. Every channel is bounded: while the job runs no channel
ever holds more than its capacity plus one item (the one buffer a producer may add after it saw room), and
the source cannot run ahead of the sink by more than the buffers the channels between them can hold.

Thread mode only: the probe wraps the in-process LocalChannel of this process, and the counters are read from
this process's memory. Bounded memory across processes is tests/faults/test_taskmanager_processes.py's
(a consumer process that stops reading)."""

from __future__ import annotations

import threading
import time

import pytest

from fluvial.common import Configuration
from fluvial.datastream import SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.runtime import channels as channels_module
from fluvial.runtime.channels import ChannelRegistry, LocalChannel

BATCHES = 150
SOURCE_BATCH = 1024  # records per source poll (input_processor.SOURCE_BATCH_SIZE)


class ChannelProbe:
    """Wraps LocalChannel.push, push_event and ChannelRegistry.get to see every channel of the job and its longest queue."""

    def __init__(self, monkeypatch) -> None:
        self.lock = threading.Lock()
        self.max_len: dict[int, int] = {}
        self.pushes = 0
        self.channels: list[LocalChannel] = []
        original_push = LocalChannel.push
        original_push_event = LocalChannel.push_event
        original_get = ChannelRegistry.get
        probe = self

        def push(channel, item, original=original_push):
            original(channel, item)
            length = len(channel)
            with probe.lock:
                probe.pushes += 1
                if length > probe.max_len.get(id(channel), 0):
                    probe.max_len[id(channel)] = length

        def get(registry, channel_id):
            channel = original_get(registry, channel_id)
            with probe.lock:
                if all(channel is not c for c in probe.channels):
                    probe.channels.append(channel)
            return channel

        monkeypatch.setattr(LocalChannel, "push", push)
        monkeypatch.setattr(
            LocalChannel, "push_event", lambda channel, event: push(channel, event, original_push_event)
        )
        monkeypatch.setattr(ChannelRegistry, "get", get)

    def worst_overflow(self) -> int:
        """The largest (length - capacity) any channel reached."""
        with self.lock:
            by_id = {id(c): c for c in self.channels}
            return max(self.max_len[cid] - by_id[cid].capacity for cid in self.max_len)


PROGRESS: dict[str, int] = {}


class SlowSink(SinkFunction):
    """Sleeps per buffer; records how many records it has taken so far."""

    def invoke_batch(self, values, context):
        time.sleep(0.003)
        PROGRESS["sink"] = PROGRESS.get("sink", 0) + len(values)


def _sampled_gap(source_records, stop: threading.Event, gaps: list[int]) -> None:
    while not stop.is_set():
        gaps.append(source_records() - PROGRESS.get("sink", 0))
        time.sleep(0.002)


@pytest.fixture(autouse=True)
def _reset_progress():
    PROGRESS.clear()
    yield
    PROGRESS.clear()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("shape", ["rebalance", "disable_chaining", "two_hops"])
def test_slow_sink_bounds_every_channel(monkeypatch, shape):
    """The sink runs in its own slot sharing group, so on the second TaskManager's thread: the source's
    thread is free to run ahead, and only the bounded channels hold it back."""
    probe = ChannelProbe(monkeypatch)
    config = Configuration().set_string("local.number-taskmanager", "2").set_string("local.taskmanager.mode", "thread")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    numbers = env.from_source(NumberSequenceSource(1, BATCHES * SOURCE_BATCH))
    counted = numbers.map(lambda x: (PROGRESS.__setitem__("source", PROGRESS.get("source", 0) + 1), x)[1])
    if shape == "rebalance":
        tail = counted.rebalance()
    elif shape == "disable_chaining":
        tail = counted.map(lambda x: x)
        tail.disable_chaining()
    else:
        tail = counted.rebalance().map(lambda x: x + 1).rebalance().filter(lambda x: True).rebalance()
    tail.add_sink(SlowSink()).slot_sharing_group("slow-sink")

    stop = threading.Event()
    gaps: list[int] = []
    sampler = threading.Thread(target=_sampled_gap, args=(lambda: PROGRESS.get("source", 0), stop, gaps), daemon=True)
    sampler.start()
    try:
        env.execute()
    finally:
        stop.set()
        sampler.join(5)

    assert PROGRESS["sink"] == BATCHES * SOURCE_BATCH
    assert probe.pushes > BATCHES  # the probe saw the traffic (the assertion below is not vacuous)
    job_channels = [c for c in probe.channels if id(c) in probe.max_len]
    assert job_channels
    hops = {"rebalance": 1, "disable_chaining": 2, "two_hops": 3}[shape]
    assert len(job_channels) == hops
    # the slow sink really pushed back: some channel filled up to its capacity
    assert probe.worst_overflow() >= 0, "no channel ever filled up: the test did not create backpressure"
    assert probe.worst_overflow() <= 1, f"a channel held {probe.worst_overflow()} items above its capacity"
    # the source never ran ahead of the sink by more than the channels (and the tasks' hands) can hold
    capacity = channels_module.DEFAULT_CAPACITY
    bound = hops * (capacity + 1) * SOURCE_BATCH + (hops + 1) * SOURCE_BATCH
    assert gaps and max(gaps) <= bound, (max(gaps), bound)
