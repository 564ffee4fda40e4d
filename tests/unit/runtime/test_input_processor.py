"""The input side of a task, stepped by hand. SourceInput: splits fresh or restored, one poll per step, the
step result, timestamps and periodic watermarks on a manual processing-time service, the final watermark, the
reader's hooks. NetworkInput over real LocalChannels: round robin, a bounded step, a full output stopping the
step, barriers blocking their channel until aligned, end of input channel by channel, one watermark valve per
logical input, and idleness reaching the head's input only when the whole input is idle."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.common.time import MAX_WATERMARK, Duration, ManualClock
from fluvial.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from fluvial.datastream.connectors.source import Source, SourceReader, SourceReaderContext
from fluvial.runtime.alignment import BarrierHandler
from fluvial.runtime.channels import LocalChannel
from fluvial.runtime.input_processor import (
    ITEMS_PER_STEP,
    InputWatermarks,
    NetworkInput,
    SourceInput,
    StepResult,
)
from fluvial.runtime.output import Output
from fluvial.runtime.records import (
    END_OF_INPUT,
    END_OF_PARTITION,
    CheckpointBarrier,
    RecordBatch,
    Watermark,
    WatermarkStatus,
)
from fluvial.testing import ManualProcessingTime

# -- SourceInput ----------------------------------------------------------------------------------------------------


class ScriptedReader(SourceReader):
    """Answers each poll with the next scripted answer (a list, [] for nothing now, None for the end)."""

    def __init__(self, polls: list, log: list) -> None:
        self.polls = list(polls)
        self.log = log
        self.splits: list = []

    def add_splits(self, splits: list) -> None:
        self.splits.extend(splits)
        self.log.append(("splits", list(splits)))

    def poll(self, max_records: int) -> list | None:
        return self.polls.pop(0) if self.polls else None

    def snapshot_state(self) -> list:
        return list(self.splits)

    def current_split_id(self) -> Any:
        return self.splits[0] if self.splits else None

    def on_snapshot(self, checkpoint_id: int) -> None:
        self.log.append(("on_snapshot", checkpoint_id))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.log.append(("complete", checkpoint_id))

    def close(self) -> None:
        self.log.append(("close",))


class ScriptedSource(Source):
    def __init__(self, polls: list, splits: int = 4) -> None:
        self.polls = polls
        self.split_count = splits
        self.log: list = []
        self.reader_context: Any = None

    def get_boundedness(self) -> Any:
        return None

    def create_splits(self, parallelism: int) -> list:
        return [f"split-{i}" for i in range(self.split_count)]

    def create_reader(self, context: Any) -> ScriptedReader:
        self.reader_context = context
        return ScriptedReader(self.polls, self.log)


class Captured:
    """The output of the chain's source position."""

    def __init__(self) -> None:
        self.batches: list[RecordBatch] = []
        self.watermarks: list[int] = []
        self.statuses: list[bool] = []
        self.output = Output(
            [self.batches.append],
            {},
            [lambda w: self.watermarks.append(w.timestamp)],
            [lambda s: self.statuses.append(s.idle)],
        )

    def records(self) -> list:
        return [
            (value, None if batch.timestamps is None else batch.timestamps[i])
            for batch in self.batches
            for i, value in enumerate(batch.values)
        ]


def context(subtask: int = 1, parallelism: int = 2) -> SourceReaderContext:
    return SourceReaderContext("job", "Source: test", subtask, parallelism, 128, 0, receivers=None)


def test_a_fresh_source_takes_its_share_of_the_splits_and_a_restored_one_exactly_its_own() -> None:
    source = ScriptedSource([])
    SourceInput(source, context(subtask=1, parallelism=2), Captured().output).open()
    assert source.log == [("splits", ["split-1", "split-3"])]
    assert source.reader_context.subtask_index == 1
    restored = ScriptedSource([])
    SourceInput(restored, context(), Captured().output).open(restored_splits=["split-3@offset-7"])
    assert restored.log == [("splits", ["split-3@offset-7"])]


def test_each_step_is_one_poll_and_says_what_happened() -> None:
    captured = Captured()
    source_input = SourceInput(ScriptedSource([[1, 2], [], [3]]), context(), captured.output)
    source_input.open()
    assert [source_input.step() for _ in range(3)] == [StepResult.PROGRESS, StepResult.IDLE, StepResult.PROGRESS]
    assert captured.records() == [(1, None), (2, None), (3, None)]
    assert captured.watermarks == []
    assert source_input.step() is StepResult.END_OF_INPUT
    assert captured.watermarks == [MAX_WATERMARK], "the end of a source is the end of event time"


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


def test_with_a_strategy_records_get_timestamps_and_watermarks_follow_processing_time() -> None:
    captured = Captured()
    time_service = ManualProcessingTime(ManualClock(1_000))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5)).with_timestamp_assigner(
        SecondField()
    )
    source_input = SourceInput(
        ScriptedSource([[("a", 10), ("b", 30)], [("c", 20)]]),
        context(),
        captured.output,
        strategy,
        auto_watermark_interval=50,
        processing_time=time_service,
    )
    source_input.open()
    assert time_service.pending_timestamps() == [1_050]
    source_input.step()
    source_input.step()
    assert captured.records() == [(("a", 10), 10), (("b", 30), 30), (("c", 20), 20)]
    time_service.advance_to(1_050)
    assert captured.watermarks == [24]
    assert time_service.pending_timestamps() == [1_100], "the periodic emit re-arms itself"
    assert source_input.step() is StepResult.END_OF_INPUT
    assert captured.watermarks == [24, MAX_WATERMARK]
    time_service.advance_to(1_100)
    assert captured.watermarks == [24, MAX_WATERMARK] and time_service.pending_timestamps() == []


def test_drain_sends_the_final_watermark_once_and_then_the_source_emits_nothing_more() -> None:
    """stop-with-savepoint --drain: MAX_WATERMARK ahead of the barrier; the records still unread stay in the
    reader (its position is what the savepoint records), and no second final watermark comes at any end."""
    captured = Captured()
    time_service = ManualProcessingTime(ManualClock(1_000))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5)).with_timestamp_assigner(
        SecondField()
    )
    source_input = SourceInput(
        ScriptedSource([[("a", 10)], [("b", 30)]]),
        context(),
        captured.output,
        strategy,
        auto_watermark_interval=50,
        processing_time=time_service,
    )
    source_input.open()
    assert source_input.step() is StepResult.PROGRESS
    source_input.advance_to_end_of_event_time()
    source_input.advance_to_end_of_event_time()
    assert captured.watermarks == [MAX_WATERMARK]
    assert [source_input.step() for _ in range(3)] == [StepResult.IDLE] * 3
    time_service.advance_to(1_100)
    assert captured.records() == [(("a", 10), 10)] and captured.watermarks == [MAX_WATERMARK]


def test_the_readers_hooks_are_called_through_the_input() -> None:
    source = ScriptedSource([[1]])
    source_input = SourceInput(source, context(), Captured().output)
    source_input.open()
    assert source_input.snapshot_splits(5) == ["split-1", "split-3"]
    source_input.notify_checkpoint_complete(5)
    source_input.close()
    assert source.log[1:] == [("on_snapshot", 5), ("complete", 5), ("close",)]


# -- NetworkInput ---------------------------------------------------------------------------------------------------


class Head:
    """A chain head: each logical input records what reaches it, in order."""

    def __init__(self) -> None:
        self.seen: dict[int, list] = defaultdict(list)

    def input(self, type_number: int) -> Any:
        head = self

        class Input:
            def process_batch(self, batch: RecordBatch) -> None:
                head.seen[type_number].extend(batch.values)

            def process_watermark(self, watermark: Watermark) -> None:
                head.seen[type_number].append(("watermark", watermark.timestamp))

            def process_status(self, status: WatermarkStatus) -> None:
                head.seen[type_number].append(("idle" if status.idle else "active",))

        return Input()


class Checkpoints:
    """What the barrier handler calls once aligned (the subtask checkpointer)."""

    def __init__(self) -> None:
        self.taken: list[int] = []
        self.aborted: list[tuple[int, CheckpointFailureReason]] = []

    def checkpoint_state(self, barrier: CheckpointBarrier, stats: Any = None) -> None:
        self.taken.append(barrier.checkpoint_id)

    def abort_checkpoint(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None:
        self.aborted.append((checkpoint_id, reason))


def network_input(type_numbers: list[int], *, barriers: Any = None, writable=None):
    head = Head()
    channels = [LocalChannel(64) for _ in type_numbers]
    dispatch = [head.input(type_number).process_batch for type_number in type_numbers]
    gate = NetworkInput(channels, dispatch, InputWatermarks(head, type_numbers), writable, barriers)
    return gate, channels, head


def batch(*values) -> RecordBatch:
    return RecordBatch(list(values))


def drain(gate: NetworkInput, limit: int = 100) -> list[StepResult]:
    results = []
    for _ in range(limit):
        result = gate.step()
        results.append(result)
        if result is not StepResult.PROGRESS:
            break
    return results


def test_channels_are_polled_round_robin() -> None:
    gate, channels, head = network_input([0, 0, 0])
    for index, channel in enumerate(channels):
        for n in range(3):
            channel.push(batch(f"c{index}-{n}"))
    drain(gate)
    assert head.seen[0] == ["c0-0", "c1-0", "c2-0", "c0-1", "c1-1", "c2-1", "c0-2", "c1-2", "c2-2"]


def test_a_sliced_buffer_is_finished_before_the_next_channel_is_polled() -> None:
    # the first buffer goes in a one-record slice: its rest must come before the other channel's buffer
    gate, channels, head = network_input([0, 0])
    channels[0].push(batch("alice", "bob", "carol"))
    channels[1].push(batch("books", "games"))
    drain(gate)
    assert head.seen[0] == ["alice", "bob", "carol", "books", "games"]


def test_a_step_moves_a_bounded_number_of_items() -> None:
    gate, (channel,), head = network_input([0])
    for n in range(ITEMS_PER_STEP * 2 + 1):
        channel.push(batch(n))
    assert gate.step() is StepResult.PROGRESS
    assert len(head.seen[0]) == ITEMS_PER_STEP
    assert drain(gate)[-1] is StepResult.IDLE
    assert head.seen[0] == list(range(ITEMS_PER_STEP * 2 + 1))


def test_a_full_output_ends_the_step_after_the_buffer_that_filled_it() -> None:
    room = [True]
    gate, (channel,), head = network_input([0], writable=lambda: room[0])
    for n in range(3):
        channel.push(batch(n))
    room[0] = False
    assert gate.step() is StepResult.PROGRESS
    assert head.seen[0] == [0]


def test_input_ends_when_every_channel_has_ended() -> None:
    gate, channels, head = network_input([0, 0])
    channels[0].push(batch("a"))
    channels[0].push(END_OF_INPUT)
    channels[1].push(batch("b"))
    assert gate.step() is StepResult.PROGRESS
    channels[1].push(batch("c"))
    channels[1].push(END_OF_INPUT)
    assert drain(gate)[-1] is StepResult.END_OF_INPUT
    assert head.seen[0] == ["a", "b", "c"]


def test_nothing_to_read_is_idle() -> None:
    gate, _, _ = network_input([0, 0])
    assert gate.step() is StepResult.IDLE


def test_an_aligning_barrier_blocks_its_channel_until_every_channel_delivered_it() -> None:
    checkpoints = Checkpoints()
    handler = BarrierHandler(2, True, checkpoints)
    gate, channels, head = network_input([0, 0], barriers=handler)
    barrier = CheckpointBarrier(1, 0)
    channels[0].push(batch("before-0"))
    channels[0].push(barrier)
    channels[0].push(batch("after-0"))
    channels[1].push(batch("before-1"))
    drain(gate)
    assert head.seen[0] == ["before-0", "before-1"], "records behind a barrier wait for the alignment"
    assert checkpoints.taken == [] and handler.blocked == {0}
    channels[1].push(barrier)
    drain(gate)
    assert checkpoints.taken == [1] and handler.blocked == frozenset()
    assert head.seen[0] == ["before-0", "before-1", "after-0"]


def test_at_least_once_barriers_never_block() -> None:
    checkpoints = Checkpoints()
    gate, channels, head = network_input([0, 0], barriers=BarrierHandler(2, False, checkpoints))
    channels[0].push(CheckpointBarrier(1, 0))
    channels[0].push(batch("after"))
    drain(gate)
    assert head.seen[0] == ["after"] and checkpoints.taken == []
    channels[1].push(CheckpointBarrier(1, 0))
    drain(gate)
    assert checkpoints.taken == [1]


def test_a_channel_that_ends_no_longer_holds_up_an_alignment() -> None:
    """END_OF_INPUT is the end of data: the channel still brings the barriers of the producer's final checkpoint
    (FLIP-147). END_OF_PARTITION ends the channel: alignment no longer waits for it."""
    checkpoints = Checkpoints()
    gate, channels, head = network_input([0, 0], barriers=BarrierHandler(2, True, checkpoints))
    channels[0].push(CheckpointBarrier(4, 0))
    channels[1].push(END_OF_INPUT)
    drain(gate)
    assert checkpoints.taken == []
    channels[1].push(END_OF_PARTITION)
    drain(gate)
    assert checkpoints.taken == [4]


def test_each_logical_input_has_its_own_watermark_valve() -> None:
    gate, channels, head = network_input([1, 1, 2])
    channels[0].push(Watermark(10))
    drain(gate)
    assert head.seen[1] == [], "input 1's clock is the minimum of both its channels"
    channels[1].push(Watermark(4))
    channels[2].push(Watermark(7))
    drain(gate)
    assert head.seen[1] == [("watermark", 4)] and head.seen[2] == [("watermark", 7)]
    channels[1].push(Watermark(20))
    drain(gate)
    assert head.seen[1] == [("watermark", 4), ("watermark", 10)]


def test_idleness_reaches_the_head_only_when_the_whole_input_is_idle() -> None:
    gate, channels, head = network_input([0, 0])
    channels[0].push(Watermark(5))
    channels[1].push(Watermark(3))
    channels[1].push(WatermarkStatus(idle=True))  # channel 1 leaves the minimum: the clock moves to 5
    drain(gate)
    assert head.seen[0] == [("watermark", 3), ("watermark", 5)]
    channels[0].push(WatermarkStatus(idle=True))
    drain(gate)
    assert head.seen[0][-1] == ("idle",)
    channels[1].push(WatermarkStatus(idle=False))
    drain(gate)
    assert head.seen[0][-1] == ("active",)
    assert head.seen[0].count(("idle",)) == 1
