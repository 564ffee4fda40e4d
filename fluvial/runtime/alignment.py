"""Barrier handling at a task's inputs (DESIGN 2.3, seed 001; FLIP-76), as explicit states.

Exactly-once, aligned: when barrier n arrives on a channel, that channel is blocked — its later records wait
— until barrier n has arrived on every channel still open; then the task snapshots and forwards the barrier
and every channel is unblocked. A newer barrier m > n arriving mid-alignment cancels checkpoint n (declined)
and starts aligning m. A barrier older than the last one seen is stale and ignored. A channel that ended no
longer has to deliver barriers.

Exactly-once, unaligned (`UnalignedSettings`): a barrier need not wait behind the buffers queued ahead of it.
A channel tells the task as soon as a barrier is queued on it (`look_ahead`), and the task checkpoints at once,
numbered:
1. Every channel's items queued ahead of barrier n, and, on a channel whose barrier n has not arrived yet,
   every item the task takes from it until it arrives, are the checkpoint's in-flight data (channel state):
   records the producers emitted before their snapshot and this task processes after its own.
2. The operators snapshot and barrier n goes out at once (downstream overtakes it the same way); nothing is
   blocked, the queued items are still processed in order.
3. When barrier n has been seen on every open channel, the in-flight data is complete and the checkpoint is
   persisted with it; a restore replays it on each channel before anything new (`NetworkInput`).
With an aligned-checkpoint timeout, a checkpoint starts aligned and switches to unaligned once it is older
than the timeout (counted from its trigger, Flink's checkpoint start delay): channels whose barrier arrived
carry nothing, the others as in 1. Savepoints are always aligned.

At-least-once: barriers are counted, never block; the task snapshots when barrier n has arrived on every open
channel (records after a barrier on a fast channel are then part of the state *and* replayed: duplicates,
never losses).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, final

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.common.time import current_millis
from fluvial.runtime.records import CheckpointBarrier, RecordBatch, Watermark, WatermarkStatus

IN_FLIGHT_TYPES = (RecordBatch, Watermark, WatermarkStatus)
"""What channel state holds: buffers and the event-time events between them. End of input is not kept (a
restored producer sends it again), nor barriers."""


@dataclass(frozen=True, slots=True)
class UnalignedSettings:
    """`execution.checkpointing.unaligned.enabled` with `execution.checkpointing.aligned-checkpoint-timeout`
    (0: every checkpoint starts unaligned)."""

    aligned_timeout_ms: int = 0


@dataclass(frozen=True, slots=True)
class BarrierStats:
    """How a subtask's barrier handling went for one checkpoint (the REST API's alignment figures)."""

    alignment_duration_ms: int = 0  # first barrier seen → checkpoint taken
    unaligned: bool = False


class AlignedCheckpoints(Protocol):
    """Who takes the checkpoint once aligned (the SubtaskCheckpointCoordinator)."""

    def checkpoint_state(self, barrier: CheckpointBarrier, stats: BarrierStats = BarrierStats()) -> None: ...

    def abort_checkpoint(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None: ...

    def channel_state_complete(self, checkpoint_id: int, channels: dict[int, list[Any]]) -> None: ...


class InputChannels(Protocol):
    """What an unaligned checkpoint needs of the input gate (`NetworkInput`)."""

    def pending(self, channel: int) -> list[Any]:
        """The items of `channel` not yet taken by the task, in order."""
        ...

    def record(self, channel: int, sink: list[Any] | None) -> None:
        """From now on append every in-flight item the task takes from `channel` to `sink` (None: stop)."""
        ...


class AlignmentState(enum.Enum):
    WAITING = "waiting for a barrier"
    ALIGNING = "aligning"
    UNALIGNED = "collecting in-flight data"


@final
@dataclass(slots=True)
class _Alignment:
    barrier: CheckpointBarrier
    started_ns: int
    arrived: set[int] = field(default_factory=set)


@final
@dataclass(slots=True)
class _Unaligned:
    barrier: CheckpointBarrier
    inputs: InputChannels  # whose channels' in-flight items it records
    channels: dict[int, list[Any]]  # channel → its in-flight items
    waiting: set[int]  # channels whose barrier has not been seen yet


def _in_flight_before(items: list[Any], checkpoint_id: int) -> list[Any] | None:
    """The in-flight items ahead of barrier `checkpoint_id` in `items`; None when that barrier is not there."""
    for position, item in enumerate(items):
        if type(item) is CheckpointBarrier and item.checkpoint_id == checkpoint_id:
            return [entry for entry in items[:position] if type(entry) in IN_FLIGHT_TYPES]
    return None


def _newest_barrier(items: list[Any], newer_than: int) -> CheckpointBarrier | None:
    for item in items:
        if type(item) is CheckpointBarrier and item.checkpoint_id > newer_than:
            return item
    return None


class BarrierHandler:
    """Tracks barriers over `num_channels` inputs. `checkpoints.checkpoint_state(barrier)` runs when a
    checkpoint's barrier has arrived everywhere (aligned) or first shows up (unaligned);
    `checkpoints.abort_checkpoint(...)` when a newer barrier overtook an unfinished one (DECLINED_SUBSUMED, which
    is no checkpoint failure); `checkpoints.channel_state_complete(...)` when an unaligned checkpoint's in-flight
    data is complete. `schedule(due_ms)` asks for a `look_ahead()` at that time (the alignment timeout)."""

    def __init__(
        self,
        num_channels: int,
        exactly_once: bool,
        checkpoints: AlignedCheckpoints,
        unaligned: UnalignedSettings | None = None,
        inputs: InputChannels | None = None,
        schedule: Callable[[int], None] | None = None,
        clock: Callable[[], int] = current_millis,
    ) -> None:
        self.num_channels = num_channels
        self.exactly_once = exactly_once
        self._checkpoints = checkpoints
        self._unaligned = unaligned if exactly_once else None
        self._inputs = inputs
        self._schedule = schedule
        self._clock = clock
        self._ended: set[int] = set()
        self._current: _Alignment | _Unaligned | None = None
        self._latest_seen = -1
        self._timer_for = -1
        self.blocked: frozenset[int] = frozenset()

    @property
    def state(self) -> AlignmentState:
        current = self._current
        if current is None:
            return AlignmentState.WAITING
        return AlignmentState.ALIGNING if type(current) is _Alignment else AlignmentState.UNALIGNED

    @property
    def pending_checkpoint(self) -> int | None:
        return None if self._current is None else self._current.barrier.checkpoint_id

    def is_blocked(self, channel: int) -> bool:
        return channel in self.blocked

    # -- barriers taken from a channel, in order ----------------------------------------------------------------

    def on_barrier(self, channel: int, barrier: CheckpointBarrier) -> None:
        checkpoint_id = barrier.checkpoint_id
        current = self._current
        if current is not None and checkpoint_id > current.barrier.checkpoint_id:
            self._cancel(current)
            current = None
        if current is None:
            if checkpoint_id <= self._latest_seen:
                return  # stale: that checkpoint was completed or cancelled here already
            self._latest_seen = checkpoint_id
            inputs = self._unaligned_inputs(barrier)
            if inputs is not None:
                self._start_unaligned(barrier, inputs, {channel}, time.perf_counter_ns())
                return
            current = self._current = _Alignment(barrier, time.perf_counter_ns())
            self._arm_timer(barrier)
        elif checkpoint_id < current.barrier.checkpoint_id:
            return  # stale barrier of a cancelled checkpoint
        if type(current) is _Unaligned:
            self._channel_done(current, channel, [])
            return
        current.arrived.add(channel)
        if self.exactly_once:
            self.blocked = frozenset(current.arrived)
        self._check_complete()

    def on_end_of_channel(self, channel: int) -> None:
        """An ended channel delivers no more barriers: it counts as aligned from now on."""
        self._ended.add(channel)
        current = self._current
        if type(current) is _Unaligned:
            self._channel_done(current, channel, [])
        elif current is not None:
            self._check_complete()

    def on_triggered(self, barrier: CheckpointBarrier) -> None:
        """The JobMaster triggered this task itself: every producer of its input has finished (FLIP-147), so no
        barrier comes. With unaligned checkpoints a producer may have finished while its last records were still
        queued here (its final checkpoint persisted them as this task's in-flight data): whatever is queued now
        is in flight again, or a restore from this checkpoint would lose it. A savepoint cannot hold in-flight
        data: with records still queued it is declined (the next attempt finds them processed)."""
        self._latest_seen = max(self._latest_seen, barrier.checkpoint_id)
        inputs = self._inputs
        if self._unaligned is None or inputs is None:
            self._checkpoints.checkpoint_state(barrier)
            return
        channels = {
            channel: [item for item in inputs.pending(channel) if type(item) in IN_FLIGHT_TYPES]
            for channel in range(self.num_channels)
            if channel not in self._ended
        }
        if not any(channels.values()):
            self._checkpoints.checkpoint_state(barrier)
        elif barrier.savepoint_dir is not None:
            self._checkpoints.abort_checkpoint(
                barrier.checkpoint_id,
                CheckpointFailureReason.DECLINED_TASK_NOT_READY,
                "records of finished producers are still queued here, and a savepoint holds no in-flight data",
            )
        else:
            self._checkpoints.checkpoint_state(barrier, BarrierStats(0, unaligned=True))
            self._checkpoints.channel_state_complete(barrier.checkpoint_id, channels)

    # -- barriers queued behind other items (unaligned) ---------------------------------------------------------

    def look_ahead(self) -> None:
        """A barrier was queued on some channel, or the alignment timeout is due: act on barriers that have not
        been taken yet — start or switch to an unaligned checkpoint, or complete a channel's in-flight data."""
        inputs = self._inputs
        if self._unaligned is None or inputs is None:
            return
        current = self._current
        if current is None:
            announced = self._announced_barrier(inputs)
            if announced is None:
                return
            self._latest_seen = announced.checkpoint_id
            if self._unaligned_inputs(announced) is not None:
                self._start_unaligned(announced, inputs, set(), time.perf_counter_ns())
            else:
                self._current = _Alignment(announced, time.perf_counter_ns())
                self._arm_timer(announced)
            return
        if type(current) is _Alignment:
            if self._unaligned_inputs(current.barrier) is not None:
                self._start_unaligned(current.barrier, inputs, current.arrived, current.started_ns)
            return
        checkpoint_id = current.barrier.checkpoint_id
        for channel in sorted(current.waiting):
            before = _in_flight_before(inputs.pending(channel), checkpoint_id)
            if before is not None:
                self._channel_done(current, channel, before)
                if self._current is not current:
                    return

    def _announced_barrier(self, inputs: InputChannels) -> CheckpointBarrier | None:
        """The oldest barrier newer than any seen, queued on an open channel."""
        found = None
        for channel in range(self.num_channels):
            if channel in self._ended:
                continue
            barrier = _newest_barrier(inputs.pending(channel), self._latest_seen)
            if barrier is not None and (found is None or barrier.checkpoint_id < found.checkpoint_id):
                found = barrier
        return found

    def _unaligned_inputs(self, barrier: CheckpointBarrier) -> InputChannels | None:
        """The input gate, when `barrier`'s checkpoint is to be unaligned now; None while it stays aligned."""
        settings, inputs = self._unaligned, self._inputs
        if settings is None or inputs is None or barrier.savepoint_dir is not None:
            return None  # savepoints stay aligned, as in Flink
        if settings.aligned_timeout_ms <= 0 or self._clock() - barrier.timestamp >= settings.aligned_timeout_ms:
            return inputs
        return None

    def _arm_timer(self, barrier: CheckpointBarrier) -> None:
        """Aligned for now: ask for a look at the moment the alignment times out."""
        settings = self._unaligned
        if (
            settings is None
            or self._schedule is None
            or barrier.savepoint_dir is not None
            or self._timer_for >= barrier.checkpoint_id
        ):
            return
        self._timer_for = barrier.checkpoint_id
        self._schedule(barrier.timestamp + settings.aligned_timeout_ms)

    def _start_unaligned(
        self, barrier: CheckpointBarrier, inputs: InputChannels, arrived: set[int], started_ns: int
    ) -> None:
        """Step 1 and 2 (module docstring). `arrived`: channels whose barrier was taken already."""
        checkpoint_id = barrier.checkpoint_id
        channels: dict[int, list[Any]] = {}
        waiting: set[int] = set()
        for channel in range(self.num_channels):
            if channel in arrived or channel in self._ended:
                channels[channel] = []
                continue
            before = _in_flight_before(inputs.pending(channel), checkpoint_id)
            if before is None:
                channels[channel] = []
                waiting.add(channel)
                inputs.record(channel, channels[channel])
            else:
                channels[channel] = before
        current = self._current = _Unaligned(barrier, inputs, channels, waiting)
        self.blocked = frozenset()
        self._checkpoints.checkpoint_state(
            barrier, BarrierStats((time.perf_counter_ns() - started_ns) // 1_000_000, unaligned=True)
        )
        if not waiting and self._current is current:
            self._complete(current)

    def _channel_done(self, current: _Unaligned, channel: int, rest: list[Any]) -> None:
        if channel not in current.waiting:
            return
        current.waiting.discard(channel)
        current.inputs.record(channel, None)
        current.channels[channel].extend(rest)
        if not current.waiting:
            self._complete(current)

    def _complete(self, current: _Unaligned) -> None:
        self._current = None
        self._checkpoints.channel_state_complete(current.barrier.checkpoint_id, current.channels)

    # -- aligned ------------------------------------------------------------------------------------------------

    def _check_complete(self) -> None:
        current = self._current
        if type(current) is not _Alignment:
            return
        if len(current.arrived | self._ended) >= self.num_channels:
            self._current = None
            self.blocked = frozenset()
            self._checkpoints.checkpoint_state(
                current.barrier, BarrierStats((time.perf_counter_ns() - current.started_ns) // 1_000_000)
            )

    def _cancel(self, current: _Alignment | _Unaligned) -> None:
        self._current = None
        self.blocked = frozenset()
        if type(current) is _Unaligned:
            for channel in current.waiting:
                current.inputs.record(channel, None)
        self._checkpoints.abort_checkpoint(
            current.barrier.checkpoint_id,
            CheckpointFailureReason.DECLINED_SUBSUMED,
            "the barrier of a newer checkpoint arrived before this one aligned",
        )
