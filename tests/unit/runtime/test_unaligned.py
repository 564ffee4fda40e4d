"""Unaligned checkpoints at a task's input (FLIP-76, `runtime.alignment` and `NetworkInput`), on real
LocalChannels: a queued barrier starts the checkpoint before the items ahead of it are processed; those items,
and those taken from channels whose barrier comes later, are the channel state — exactly the items the task
processes after its snapshot and before each channel's barrier; replayed in front of a channel they come
before anything new; the aligned-checkpoint timeout switches a slow alignment; savepoints stay aligned."""

from __future__ import annotations

import time
from typing import Any

import pytest

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.runtime.alignment import AlignmentState, BarrierHandler, UnalignedSettings
from fluvial.runtime.channels import LocalChannel
from fluvial.runtime.input_processor import NetworkInput, StepResult
from fluvial.runtime.records import CheckpointBarrier, RecordBatch, Watermark


class Checkpoints:
    def __init__(self) -> None:
        self.taken: list[tuple[int, Any]] = []
        self.channel_state: dict[int, dict[int, list]] = {}
        self.aborted: list[int] = []

    def checkpoint_state(self, barrier: CheckpointBarrier, stats: Any = None) -> None:
        self.taken.append((barrier.checkpoint_id, stats))

    def abort_checkpoint(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None:
        self.aborted.append(checkpoint_id)

    def channel_state_complete(self, checkpoint_id: int, channels: dict[int, list]) -> None:
        self.channel_state[checkpoint_id] = {
            index: [_values(item) for item in items] for index, items in channels.items()
        }


def _values(item: Any) -> Any:
    return list(item.values) if type(item) is RecordBatch else item


class Gate:
    """A NetworkInput over `n` LocalChannels with an unaligned barrier handler and a manual clock."""

    def __init__(self, n: int = 2, timeout_ms: int = 0) -> None:
        self.now = 1_000
        self.seen: list[Any] = []
        self.checkpoints = Checkpoints()
        self.channels = [LocalChannel(64) for _ in range(n)]
        self.timers: list[int] = []
        self.input = NetworkInput(self.channels, [self._process] * n)
        self.handler = BarrierHandler(
            n, True, self.checkpoints, UnalignedSettings(timeout_ms), self.input, self.timers.append, lambda: self.now
        )
        self.input.attach_barriers(self.handler)
        for channel in self.channels:
            channel.set_barrier_listener(self.input.announce_barrier)

    def _process(self, batch: RecordBatch) -> None:
        self.seen.extend(batch.values)

    def push(self, channel: int, *values: Any) -> None:
        self.channels[channel].push(RecordBatch(list(values)))

    def barrier(self, channel: int, checkpoint_id: int, timestamp: int = 1_000, savepoint: str | None = None) -> None:
        self.channels[channel].push_event(CheckpointBarrier(checkpoint_id, timestamp, savepoint))

    def step(self, times: int = 1) -> None:
        for _ in range(times):
            if self.input.barrier_announced:
                self.input.look_ahead()
            self.input.step()

    def drain(self) -> None:
        for _ in range(100):
            if self.input.barrier_announced:
                self.input.look_ahead()
            if self.input.step() is StepResult.IDLE:
                return


def test_a_queued_barrier_overtakes_the_items_ahead_of_it_which_become_channel_state():
    gate = Gate(1)
    gate.push(0, 1, 2)
    gate.push(0, 3)
    gate.barrier(0, 1)
    gate.push(0, 4)
    assert gate.input.barrier_announced
    gate.input.look_ahead()  # before the task processed anything
    assert [checkpoint for checkpoint, _ in gate.checkpoints.taken] == [1]
    assert gate.checkpoints.taken[0][1].unaligned
    assert gate.checkpoints.channel_state == {1: {0: [[1, 2], [3]]}}
    assert gate.seen == []
    gate.drain()  # the overtaken items are still processed, in order, and the barrier is not taken twice
    assert gate.seen == [1, 2, 3, 4]
    assert len(gate.checkpoints.taken) == 1 and gate.handler.state is AlignmentState.WAITING


def test_a_channel_whose_barrier_comes_later_records_what_the_task_takes_until_it_arrives():
    gate = Gate(2)
    gate.push(0, "a1")
    gate.barrier(0, 1)
    gate.push(1, "b1")
    gate.push(1, "b2")
    gate.input.look_ahead()
    assert gate.handler.state is AlignmentState.UNALIGNED  # checkpointed, waiting for channel 1's barrier
    gate.step()  # takes a1 and b1 (b1 is recorded)
    gate.push(1, "b3")
    gate.barrier(1, 1)
    gate.push(1, "b4")
    gate.step()  # look-ahead finds channel 1's barrier: b2 and b3 complete its channel state
    assert gate.checkpoints.channel_state == {1: {0: [["a1"]], 1: [["b1"], ["b2"], ["b3"]]}}
    gate.drain()
    assert sorted(gate.seen) == ["a1", "b1", "b2", "b3", "b4"]
    assert gate.handler.state is AlignmentState.WAITING


def test_a_barrier_taken_before_anyone_looked_ahead_also_starts_an_unaligned_checkpoint():
    gate = Gate(2)
    gate.barrier(0, 1)
    gate.input.barrier_announced = False  # as if the task took the barrier before looking ahead
    gate.push(1, "late")
    gate.input.step()
    assert gate.handler.state is AlignmentState.UNALIGNED
    gate.barrier(1, 1)
    gate.drain()
    assert gate.checkpoints.channel_state == {1: {0: [], 1: [["late"]]}}


def test_watermarks_travel_in_the_channel_state_and_a_newer_barrier_aborts_an_incomplete_one():
    gate = Gate(2)
    gate.barrier(0, 1)
    gate.channels[1].push_event(Watermark(5))
    gate.input.look_ahead()
    gate.step()
    assert gate.handler.state is AlignmentState.UNALIGNED
    gate.barrier(1, 2)  # channel 1's producer never took part in checkpoint 1
    gate.drain()
    assert gate.checkpoints.aborted == [1]
    assert 1 not in gate.checkpoints.channel_state


def test_slices_of_a_slow_buffer_are_recorded_once():
    gate = Gate(2)

    def slow(batch: RecordBatch) -> None:
        time.sleep(0.001 * len(batch.values))
        gate.seen.extend(batch.values)

    gate.input._dispatch = [slow, slow]
    gate.barrier(0, 1)
    gate.input.look_ahead()
    gate.push(1, *range(40))
    gate.step()  # a first small slice, then slices sized to the measured speed
    gate.step()
    gate.barrier(1, 1)
    gate.drain()
    assert gate.seen == list(range(40))
    assert [value for batch in gate.checkpoints.channel_state[1][1] for value in batch] == list(range(40))


def test_replayed_channel_state_comes_before_anything_new_on_its_channel():
    gate = Gate(2)
    gate.push(0, "new-0")
    gate.push(1, "new-1")
    gate.input.replay(0, [RecordBatch(["old-0a"]), RecordBatch(["old-0b"])])
    gate.drain()
    assert gate.seen.index("old-0a") < gate.seen.index("old-0b") < gate.seen.index("new-0")
    assert "new-1" in gate.seen


def test_replayed_items_not_yet_taken_are_in_flight_again_at_the_next_checkpoint():
    gate = Gate(1)
    gate.input.replay(0, [RecordBatch(["old"])])
    gate.barrier(0, 1)
    gate.input.look_ahead()
    assert gate.checkpoints.channel_state == {1: {0: [["old"]]}}


def test_with_a_timeout_a_checkpoint_starts_aligned_and_turns_unaligned_when_it_is_older():
    gate = Gate(2, timeout_ms=500)
    gate.barrier(0, 1, timestamp=1_000)
    gate.push(0, "after-barrier")
    gate.push(1, "ahead-1")
    gate.step()
    assert gate.handler.state is AlignmentState.ALIGNING and gate.handler.blocked == {0}
    assert gate.seen == ["ahead-1"]  # aligned so far: processed before the snapshot, so not in flight
    assert gate.timers == [1_500]  # the task schedules a look-ahead for the timeout
    gate.now = 1_500
    gate.input.look_ahead()
    assert gate.handler.state is AlignmentState.UNALIGNED and not gate.handler.blocked
    gate.push(1, "ahead-2")
    gate.barrier(1, 1)
    gate.drain()
    # channel 0's barrier had arrived: nothing of it is in flight; channel 1's items ahead of its barrier are
    assert gate.checkpoints.channel_state[1] == {0: [], 1: [["ahead-2"]]}
    assert sorted(gate.seen) == sorted(["ahead-1", "after-barrier", "ahead-2"])


def test_an_alignment_within_the_timeout_stays_aligned():
    gate = Gate(2, timeout_ms=500)
    gate.barrier(0, 1)
    gate.barrier(1, 1)
    gate.drain()
    assert gate.checkpoints.taken[0][0] == 1 and not gate.checkpoints.taken[0][1].unaligned
    assert gate.checkpoints.channel_state == {}


@pytest.mark.parametrize("timeout_ms", [0, 500])
def test_savepoints_stay_aligned(timeout_ms):
    gate = Gate(2, timeout_ms)
    gate.barrier(0, 1, savepoint="file:///sp")
    gate.push(1, "ahead")
    gate.now = 10_000
    gate.input.look_ahead()
    gate.step()
    assert gate.handler.state is AlignmentState.ALIGNING and gate.timers == []
    gate.barrier(1, 1, savepoint="file:///sp")
    gate.drain()
    assert not gate.checkpoints.taken[0][1].unaligned and gate.checkpoints.channel_state == {}


def test_a_task_triggered_after_its_producers_finished_keeps_what_is_still_queued_as_in_flight():
    """FLIP-147 with unaligned checkpoints: a producer's final checkpoint may complete while its last records
    are still queued here; the next checkpoint, triggered at this task itself, must hold them again."""
    gate = Gate(2)
    gate.push(0, "queued-0")
    gate.push(1, "queued-1")
    gate.input.checkpoint_triggered(CheckpointBarrier(4, 1_000))
    assert gate.checkpoints.channel_state == {4: {0: [["queued-0"]], 1: [["queued-1"]]}}
    gate.input.checkpoint_triggered(CheckpointBarrier(5, 1_000, "file:///sp"))
    assert gate.checkpoints.aborted == [5]  # a savepoint holds no in-flight data
    gate.drain()
    gate.input.checkpoint_triggered(CheckpointBarrier(6, 1_000))
    assert [checkpoint for checkpoint, _ in gate.checkpoints.taken] == [
        4,
        6,
    ] and 6 not in gate.checkpoints.channel_state


def test_buffers_smaller_than_the_slice_go_whole_and_several_per_step():
    """Slicing only ever cuts a buffer larger than the slice; small fast buffers keep the usual step."""
    gate = Gate(1)
    gate.input._slice = 100  # as after a slow buffer
    for n in range(6):
        gate.push(0, n)
    gate.input.step()
    assert gate.seen == [0, 1, 2, 3]
