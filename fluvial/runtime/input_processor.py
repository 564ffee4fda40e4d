"""The input side of a task: a source reader, or an input gate over network channels. Each `step` moves a
bounded amount of input into the chain and reports what happened, so tasks sharing a thread take turns."""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, final

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import MAX_WATERMARK
from fluvial.datastream.connectors.source import SourceReaderContext, assign_splits
from fluvial.datastream.transformations import SourceSpec
from fluvial.runtime.alignment import IN_FLIGHT_TYPES
from fluvial.runtime.channels import InputChannel
from fluvial.runtime.records import (
    ChannelBroken,
    CheckpointBarrier,
    EndOfInput,
    EndOfPartition,
    RecordBatch,
    Watermark,
    WatermarkStatus,
)

if TYPE_CHECKING:
    from fluvial.common.task_info import TaskInfo
    from fluvial.graph.job_graph import JobVertex
    from fluvial.metrics.metricbase import Counter
    from fluvial.runtime.alignment import BarrierHandler
    from fluvial.runtime.operators.base import StreamOperator
    from fluvial.runtime.watermarks import WatermarkValve

SOURCE_BATCH_SIZE = 1024
ITEMS_PER_STEP = 4
MAX_SOURCE_FAN_OUT = 8


def source_batch_size(fan_out: int) -> int:
    """Records per poll of a source whose buffers its writers cut over `fan_out` channels (a key_by or a
    rebalance after it): each channel still gets buffers of about SOURCE_BATCH_SIZE records, as Flink fills one
    network buffer per channel. Every buffer costs its channel a fixed amount — a frame, a wake-up of the reader
    thread, a credit, a step of the consumer — so at parallelism 2 a source polling 1024 records sent frames of
    512 and paid that twice as often. Capped at MAX_SOURCE_FAN_OUT, so a step of a wide job stays short."""
    return SOURCE_BATCH_SIZE * max(1, min(fan_out, MAX_SOURCE_FAN_OUT))


class StepResult(enum.Enum):
    PROGRESS = "progress"  # did work; step again soon
    IDLE = "idle"  # nothing to do until input arrives
    BLOCKED = "blocked"  # output channels are full
    END_OF_INPUT = "end_of_input"  # every input has ended


class SourceInput:
    """Reads the splits assigned to this subtask; `poll` never blocks (the reader's contract). Records go
    straight into the output of the chain's source position. With a watermark strategy, records get
    timestamps and the subtask emits watermarks (per event, and periodically every `auto_watermark_interval`
    ms through the processing-time service); at the end, the final watermark."""

    def __init__(
        self,
        source: Any,
        reader_context: Any,
        output: Any,
        watermark_strategy: Any = None,
        auto_watermark_interval: int = 200,
        processing_time: Any = None,
        metric_group: Any = None,
    ) -> None:
        self._source = source
        self._context = reader_context
        self._output = output
        self._collect = output.collect
        self._strategy = watermark_strategy
        self._interval = auto_watermark_interval
        self._processing_time = processing_time
        self._watermarks: Any = None
        self._metric_group = metric_group  # the source operator's, for its watermark generators
        self._drained = False
        self._reader_timestamps: Any = None
        self.reader: Any = None
        self.batch_size = SOURCE_BATCH_SIZE  # records per poll: smaller when its consumers debloat their buffers

    @classmethod
    def for_vertex(
        cls,
        vertex: JobVertex,
        info: TaskInfo,
        head: StreamOperator,
        auto_watermark_interval: int,
        processing_time: Any,
        receivers: Any,
        fan_out: int,
    ) -> SourceInput:
        """The input of a source vertex's subtask (`info`): its reader context, the chain's source position
        `head` as output, and polls sized for the `fan_out` channels its writers cut buffers over."""
        source_spec = vertex.head.operator
        if not isinstance(source_spec, SourceSpec):
            raise InvalidJobError(f"the source vertex {vertex.name} runs a {type(source_spec).__name__}, not a source")
        reader_context = SourceReaderContext(
            info.job_id,
            info.task_name,
            info.subtask_index,
            info.parallelism,
            info.max_parallelism,
            info.attempt_number,
            operator_id=vertex.head.operator_id,
            receivers=receivers,
            metric_group=head.context.metrics.group,
        )
        source_input = cls(
            source_spec.function,
            reader_context,
            head.output,
            source_spec.watermark_strategy,
            auto_watermark_interval,
            processing_time,
            head.context.metrics.group,
        )
        source_input.batch_size = source_batch_size(fan_out)
        return source_input

    def open(self, restored_splits: list[Any] | None = None) -> None:
        """Fresh splits, or — after a restore — exactly the splits (with positions) the checkpoint recorded."""
        info = self._context
        if restored_splits is not None:
            splits = list(restored_splits)
        else:
            splits = assign_splits(self._source.create_splits(info.parallelism), info.parallelism, info.subtask_index)
        self.reader = self._source.create_reader(info)
        self.reader.add_splits(splits)
        # a reader whose records carry timestamps of their own (Kafka's) says so through current_timestamps()
        self._reader_timestamps = getattr(self.reader, "current_timestamps", None)
        if self._strategy is not None:
            from fluvial.runtime.source_watermarks import SourceWatermarks

            self._watermarks = SourceWatermarks(
                self._strategy,
                self._output.emit_watermark,
                self._output.emit_watermark_status,
                self._metric_group,
                interleaved=getattr(self.reader, "interleaves_splits", False),
            )
            if self._interval > 0 and self._processing_time is not None:
                self._schedule_periodic(self._processing_time.current_processing_time())

    def snapshot_splits(self, checkpoint_id: int) -> list[Any]:
        splits = list(self.reader.snapshot_state())
        self.reader.on_snapshot(checkpoint_id)
        return splits

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.reader.notify_checkpoint_complete(checkpoint_id)

    def _schedule_periodic(self, now: int) -> None:
        self._processing_time.register_timer(now + self._interval, self._on_periodic)

    def _on_periodic(self, now: int) -> None:
        if self._watermarks is not None:
            self._watermarks.on_periodic_emit()
            self._schedule_periodic(now)

    def advance_to_end_of_event_time(self) -> None:
        """stop-with-savepoint --drain, ahead of the savepoint's barrier: the final watermark now, so every
        event-time timer and window downstream fires into the savepoint's output; then the source emits nothing
        more (the job stops once the savepoint is complete, or fails over if it fails)."""
        if not self._drained:
            self._drained = True
            self._emit_final_watermark()

    def _emit_final_watermark(self) -> None:
        if self._watermarks is not None:
            self._watermarks.finish()
            self._watermarks = None
        else:
            self._output.emit_watermark(Watermark(MAX_WATERMARK))

    def step(self) -> StepResult:
        if self._drained:
            return StepResult.IDLE
        values = self.reader.poll(self.batch_size)
        if values is None:
            self._emit_final_watermark()
            return StepResult.END_OF_INPUT
        if not values:
            return StepResult.IDLE
        stamps = None if self._reader_timestamps is None else self._reader_timestamps()
        if self._watermarks is None:
            self._collect(RecordBatch(values, stamps))
        else:
            self._watermarks.process(self.reader.current_split_id(), values, self._collect, stamps)
        return StepResult.PROGRESS

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


class InputWatermarks:
    """The event-time clock of a task with network inputs: one WatermarkValve per logical input (a union is one
    input; a two-input operator has two), forwarding to that input of the head only when the input's minimum
    advances, and telling it when the input as a whole becomes idle or active again."""

    def __init__(self, head: Any, type_numbers: list[int]) -> None:
        self._route: list[tuple[int, int]] = []
        counts: dict[int, int] = {}
        for type_number in type_numbers:
            self._route.append((type_number, counts.get(type_number, 0)))
            counts[type_number] = counts.get(type_number, 0) + 1
        self._counts = counts
        self._valves: dict[int, WatermarkValve] = {}
        self._inputs = {type_number: head.input(type_number) for type_number in counts}

    def _valve(self, type_number: int) -> WatermarkValve:
        valve = self._valves.get(type_number)
        if valve is None:
            from fluvial.runtime.watermarks import WatermarkValve  # only tasks that see watermarks pay for it

            valve = self._valves[type_number] = WatermarkValve(self._counts[type_number])
        return valve

    def on_watermark(self, channel_index: int, watermark: Watermark) -> None:
        type_number, local = self._route[channel_index]
        advanced = self._valve(type_number).input_watermark(local, watermark.timestamp)
        if advanced is not None:
            self._inputs[type_number].process_watermark(Watermark(advanced))

    def on_status(self, channel_index: int, status: WatermarkStatus) -> None:
        type_number, local = self._route[channel_index]
        valve = self._valve(type_number)
        was_idle = valve.is_idle()
        target = self._inputs[type_number]
        if status.idle:
            advanced = valve.mark_idle(local)
            if advanced is not None:
                target.process_watermark(Watermark(advanced))
        else:
            valve.mark_active(local)
        if valve.is_idle() != was_idle:
            target.process_status(WatermarkStatus(idle=valve.is_idle()))


@final
class _FrontedChannel:
    """A channel seen through what must come before its next item — channel state replayed after a restore,
    the unprocessed rest of a sliced buffer — and, while an unaligned checkpoint waits for this channel's
    barrier, recording each in-flight item the task takes (`NetworkInput.record`). Once nothing is in front and
    nothing recorded, it puts the bare channel back in its slot, so the common path pays nothing."""

    __slots__ = ("channel", "front", "recording", "_slots", "_index")

    def __init__(self, channel: InputChannel, slots: list[InputChannel | _FrontedChannel], index: int) -> None:
        self.channel = channel
        self.front: deque[Any] = deque()
        self.recording: list[Any] | None = None
        self._slots = slots
        self._index = index

    def poll(self) -> Any:
        front = self.front
        item = front.popleft() if front else self.channel.poll()
        recording = self.recording
        if recording is not None and item is not None and type(item) in IN_FLIGHT_TYPES:
            recording.append(item)
        self.release_if_idle()
        return item

    def unpoll(self, rest: RecordBatch, taken: RecordBatch) -> None:
        """Only `taken` of the last item polled is processed now; `rest` comes next."""
        self.front.appendleft(rest)
        recording = self.recording
        if recording:
            recording[-1] = taken

    def pending(self) -> list[Any]:
        return list(self.front) + self.channel.pending()

    def release_if_idle(self) -> None:
        if not self.front and self.recording is None and self._slots[self._index] is self:
            self._slots[self._index] = self.channel


def _split(batch: RecordBatch, limit: int) -> tuple[RecordBatch, RecordBatch]:
    values, timestamps = batch.values, batch.timestamps
    if timestamps is None:
        return RecordBatch(values[:limit]), RecordBatch(values[limit:])
    return RecordBatch(values[:limit], timestamps[:limit]), RecordBatch(values[limit:], timestamps[limit:])


SLICE_TARGET_NS = 20_000_000
"""A buffer whose processing took longer than this (a slow user function) makes the input hand the chain
smaller slices — about this long each — so the task returns to its mailbox (barriers, timers, cancel) and to
the other tasks of its thread between them. Fast chains never notice: their buffers take microseconds."""
NO_SLICING = 1 << 62
FIRST_SLICE = 1


class NetworkInput:
    """An input gate: polls its channels round robin and dispatches each item by the channel's input number.

    `dispatch[i]` receives buffers of channel i (the head's process_batch, process_batch1 or _2). Input ends
    (one END_OF_INPUT step result) once every channel delivered END_OF_INPUT (end of data). Such a channel
    stays in the rotation, because its producer may still send the barrier of its final checkpoint, until it
    delivers END_OF_PARTITION; from then on it counts as aligned for every barrier.

    After a restore from an unaligned checkpoint, each channel's in-flight items (`replay`) are taken before
    anything the channel brings. A buffer that took the chain longer than SLICE_TARGET_NS makes later buffers
    go in slices of about that duration (the rest waits in front of its channel and is taken next, so slicing
    never changes the order in which the channels' buffers are processed).
    """

    def __init__(
        self,
        channels: list[InputChannel],
        dispatch: list[Callable[[RecordBatch], None]],
        watermarks: InputWatermarks | None = None,
        writable: Callable[[], bool] | None = None,
        barriers: BarrierHandler | None = None,
        records_in: Counter | None = None,
    ) -> None:
        """`dispatch[i]`: the `process_batch` of the head's input that channel i feeds, bound once.
        `records_in`: the Counter each buffer's length is added to (the task's numRecordsIn)."""
        self._channels: list[InputChannel | _FrontedChannel] = list(channels)
        self._dispatch = list(dispatch)
        self._data_ended: set[int] = set()
        self._input_ended = False
        self._all_open = list(range(len(channels)))
        self._open = list(self._all_open)  # open and not blocked by barrier alignment: what _poll visits
        self._next = 0
        self._watermarks = watermarks
        self._barriers = barriers  # a BarrierHandler when checkpointing is on
        # whether the task's output channels still have room: a step stops after the buffer that filled one,
        # so no channel ever holds more than its capacity plus one buffer
        self._writable = writable
        if records_in is None:
            from fluvial.metrics.metricbase import Counter

            records_in = Counter()
        self._records_in = records_in
        # records per dispatch, adapted to the chain's speed: the first buffer goes in a small slice, so a slow
        # function is found out before it holds the thread for a whole buffer
        self._slice = FIRST_SLICE
        self.barrier_announced = False  # set from any thread by a channel that queued a barrier

    def attach_barriers(self, barriers: BarrierHandler) -> None:
        """The BarrierHandler, built after this input (an unaligned one reads the input's channels)."""
        self._barriers = barriers

    def replay(self, channel: int, items: list[Any]) -> None:
        """Restore: `channel`'s in-flight items of the unaligned checkpoint the task restores from come before
        anything the channel brings (before the task's first step)."""
        if items:
            self._fronted(channel).front.extend(items)

    def open(self) -> None:
        pass

    # -- unaligned checkpoints (runtime.alignment) ----------------------------------------------------------------

    def announce_barrier(self) -> None:
        """A channel's barrier listener: a barrier was queued (any thread); the task looks ahead at its next
        step, even when its outputs are full."""
        self.barrier_announced = True

    def look_ahead(self) -> None:
        """On the task thread: let the barrier handler act on barriers queued behind other items."""
        self.barrier_announced = False
        if self._barriers is not None:
            self._barriers.look_ahead()
            self._refresh_pollable()

    def checkpoint_triggered(self, barrier: CheckpointBarrier) -> None:
        """The JobMaster triggered the task itself (its producers have all finished)."""
        if self._barriers is None:
            raise RuntimeError("a checkpoint was triggered at an input gate that takes no part in checkpoints")
        self._barriers.on_triggered(barrier)

    def pending(self, channel: int) -> list[Any]:
        return self._channels[channel].pending()

    def record(self, channel: int, sink: list[Any] | None) -> None:
        if sink is not None:
            self._fronted(channel).recording = sink
            return
        slot = self._channels[channel]
        if type(slot) is _FrontedChannel:
            slot.recording = None
            slot.release_if_idle()

    def _fronted(self, index: int) -> _FrontedChannel:
        slot = self._channels[index]
        if type(slot) is not _FrontedChannel:
            slot = self._channels[index] = _FrontedChannel(slot, self._channels, index)
        return slot

    # -- processing ---------------------------------------------------------------------------------------------

    def _poll(self) -> tuple[Any, int]:
        open_channels = self._open
        count = len(open_channels)
        start = self._next
        for offset in range(count):
            position = (start + offset) % count
            index = open_channels[position]
            item = self._channels[index].poll()
            if item is not None:
                self._next = position + 1
                return item, index
        return None, -1

    def step(self) -> StepResult:
        progressed = False
        for _ in range(ITEMS_PER_STEP):
            item, index = self._poll()
            if item is None:
                break
            progressed = True
            if type(item) is RecordBatch:
                sliced = len(item.values) > self._slice
                if sliced:
                    item = self._take_slice(index, item)
                    # the rest of a buffer comes before any other channel's, as when it goes whole
                    self._next -= 1
                self._records_in.count += len(item.values)
                started = perf_counter_ns()
                self._dispatch[index](item)
                elapsed = perf_counter_ns() - started
                if sliced or elapsed > SLICE_TARGET_NS:
                    self._adapt_slice(len(item.values), elapsed)
                    break  # a slow chain: back to the mailbox after each slice
                if self._writable is not None and not self._writable():
                    break
            elif isinstance(item, EndOfInput):
                self._data_ended.add(index)
                if len(self._data_ended) == len(self._channels) and not self._input_ended:
                    self._input_ended = True
                    return StepResult.END_OF_INPUT
            elif isinstance(item, EndOfPartition):
                self._data_ended.add(index)
                self._all_open.remove(index)
                if self._barriers is not None:
                    self._barriers.on_end_of_channel(index)
                self._refresh_pollable()
                if len(self._data_ended) == len(self._channels) and not self._input_ended:
                    self._input_ended = True
                    return StepResult.END_OF_INPUT
            elif type(item) is CheckpointBarrier:
                if self._barriers is not None:
                    self._barriers.on_barrier(index, item)
                    self._refresh_pollable()
            elif type(item) is Watermark:
                if self._watermarks is not None:
                    self._watermarks.on_watermark(index, item)
            elif type(item) is WatermarkStatus:
                if self._watermarks is not None:
                    self._watermarks.on_status(index, item)
            elif type(item) is ChannelBroken:
                raise item.error
        return StepResult.PROGRESS if progressed else StepResult.IDLE

    def _take_slice(self, index: int, batch: RecordBatch) -> RecordBatch:
        taken, rest = _split(batch, self._slice)
        self._fronted(index).unpoll(rest, taken)
        return taken

    def _adapt_slice(self, records: int, elapsed_ns: int) -> None:
        """Records per slice so that one takes about SLICE_TARGET_NS; back to whole buffers once fast again."""
        fitting = records * SLICE_TARGET_NS // max(1, elapsed_ns)
        if fitting >= 4 * SOURCE_BATCH_SIZE:
            self._slice = NO_SLICING
        else:
            self._slice = max(1, fitting)

    def _refresh_pollable(self) -> None:
        """Channels blocked by an alignment are skipped until it completes (their records wait in place)."""
        blocked = self._barriers.blocked if self._barriers is not None else ()
        self._open = [index for index in self._all_open if index not in blocked]
        self._next = 0

    @property
    def all_partitions_ended(self) -> bool:
        """Whether every channel delivered END_OF_PARTITION (its producer has ended for good)."""
        return not self._all_open

    def close(self) -> None:
        pass
