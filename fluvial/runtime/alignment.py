"""Barrier handling at a task's inputs (DESIGN 2.3, seed 001), as explicit states.

Exactly-once (aligned): when barrier n arrives on a channel, that channel is blocked — its later records wait
— until barrier n has arrived on every channel still open; then the task snapshots and forwards the barrier
and every channel is unblocked. A newer barrier m > n arriving mid-alignment cancels checkpoint n (declined)
and starts aligning m. A barrier older than the last one seen is stale and ignored. A channel that ended no
longer has to deliver barriers.

At-least-once: barriers are counted, never block; the task snapshots when barrier n has arrived on every open
channel (records after a barrier on a fast channel are then part of the state *and* replayed: duplicates,
never losses).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.runtime.records import CheckpointBarrier


class AlignedCheckpoints(Protocol):
    """Who takes the checkpoint once aligned (the SubtaskCheckpointCoordinator)."""

    def checkpoint_state(self, barrier: CheckpointBarrier) -> None: ...

    def abort_checkpoint(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None: ...


class AlignmentState(enum.Enum):
    WAITING = "waiting for a barrier"
    ALIGNING = "aligning"


@dataclass(slots=True)
class _Alignment:
    barrier: CheckpointBarrier
    arrived: set[int] = field(default_factory=set)


class BarrierHandler:
    """Tracks barriers over `num_channels` inputs. `checkpoints.checkpoint_state(barrier)` runs when a
    checkpoint's barrier has arrived everywhere; `checkpoints.abort_checkpoint(...)` when a newer barrier
    overtook an unfinished alignment (DECLINED_SUBSUMED, which is no checkpoint failure)."""

    def __init__(self, num_channels: int, exactly_once: bool, checkpoints: AlignedCheckpoints) -> None:
        self.num_channels = num_channels
        self.exactly_once = exactly_once
        self._checkpoints = checkpoints
        self._ended: set[int] = set()
        self._current: _Alignment | None = None
        self._latest_seen = -1
        self.blocked: frozenset[int] = frozenset()

    @property
    def state(self) -> AlignmentState:
        return AlignmentState.WAITING if self._current is None else AlignmentState.ALIGNING

    @property
    def pending_checkpoint(self) -> int | None:
        return None if self._current is None else self._current.barrier.checkpoint_id

    def is_blocked(self, channel: int) -> bool:
        return channel in self.blocked

    def on_barrier(self, channel: int, barrier: CheckpointBarrier) -> None:
        checkpoint_id = barrier.checkpoint_id
        current = self._current
        if current is not None and checkpoint_id > current.barrier.checkpoint_id:
            self._cancel(current.barrier.checkpoint_id)
            current = None
        if current is None:
            if checkpoint_id <= self._latest_seen:
                return  # stale: that checkpoint was completed or cancelled here already
            self._latest_seen = checkpoint_id
            current = self._current = _Alignment(barrier)
        elif checkpoint_id < current.barrier.checkpoint_id:
            return  # stale barrier of a cancelled checkpoint
        current.arrived.add(channel)
        if self.exactly_once:
            self.blocked = frozenset(current.arrived)
        self._check_complete()

    def on_end_of_channel(self, channel: int) -> None:
        """An ended channel delivers no more barriers: it counts as aligned from now on."""
        self._ended.add(channel)
        if self._current is not None:
            self._check_complete()

    def _check_complete(self) -> None:
        current = self._current
        if current is None:
            return
        if len(current.arrived | self._ended) >= self.num_channels:
            self._current = None
            self.blocked = frozenset()
            self._checkpoints.checkpoint_state(current.barrier)

    def _cancel(self, checkpoint_id: int) -> None:
        self._current = None
        self.blocked = frozenset()
        self._checkpoints.abort_checkpoint(checkpoint_id, CheckpointFailureReason.DECLINED_SUBSUMED,
                                           "the barrier of a newer checkpoint arrived before this one aligned")
