"""The barrier handler's states (DESIGN 2.3): aligned exactly-once blocking, at-least-once counting, newer
barriers cancelling older alignments, stale barriers ignored, ended channels counting as aligned."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.runtime.alignment import AlignmentState, BarrierHandler


@dataclass(frozen=True)
class Barrier:
    checkpoint_id: int


class Recorder:
    def __init__(self) -> None:
        self.aligned: list[int] = []
        self.cancelled: list[int] = []

    def handler(self, channels: int, exactly_once: bool = True) -> BarrierHandler:
        return BarrierHandler(channels, exactly_once, self)

    def checkpoint_state(self, barrier, stats=None) -> None:
        self.aligned.append(barrier.checkpoint_id)

    def abort_checkpoint(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None:
        assert reason is CheckpointFailureReason.DECLINED_SUBSUMED
        self.cancelled.append(checkpoint_id)


def test_exactly_once_blocks_each_channel_that_delivered_the_barrier_until_all_have():
    recorder = Recorder()
    handler = recorder.handler(3)
    handler.on_barrier(0, Barrier(1))
    assert handler.state is AlignmentState.ALIGNING and handler.blocked == {0}
    handler.on_barrier(2, Barrier(1))
    assert handler.is_blocked(2) and not handler.is_blocked(1)
    assert recorder.aligned == []
    handler.on_barrier(1, Barrier(1))
    assert recorder.aligned == [1]
    assert handler.state is AlignmentState.WAITING and handler.blocked == frozenset()


def test_at_least_once_never_blocks_but_still_waits_for_every_channel():
    recorder = Recorder()
    handler = recorder.handler(2, exactly_once=False)
    handler.on_barrier(1, Barrier(4))
    assert handler.blocked == frozenset() and recorder.aligned == []
    handler.on_barrier(0, Barrier(4))
    assert recorder.aligned == [4]


def test_a_newer_barrier_cancels_the_older_alignment_and_starts_its_own():
    recorder = Recorder()
    handler = recorder.handler(2)
    handler.on_barrier(0, Barrier(1))
    handler.on_barrier(1, Barrier(2))
    assert recorder.cancelled == [1]
    assert handler.pending_checkpoint == 2 and handler.blocked == {1}
    handler.on_barrier(0, Barrier(1))  # the stale barrier of the cancelled checkpoint changes nothing
    assert handler.pending_checkpoint == 2 and recorder.aligned == []
    handler.on_barrier(0, Barrier(2))
    assert recorder.aligned == [2]


def test_a_barrier_of_a_completed_checkpoint_is_ignored():
    recorder = Recorder()
    handler = recorder.handler(1)
    handler.on_barrier(0, Barrier(3))
    handler.on_barrier(0, Barrier(3))
    handler.on_barrier(0, Barrier(2))
    assert recorder.aligned == [3]
    assert handler.state is AlignmentState.WAITING


def test_an_ended_channel_counts_as_aligned_now_and_later():
    recorder = Recorder()
    handler = recorder.handler(3)
    handler.on_barrier(0, Barrier(1))
    handler.on_barrier(1, Barrier(1))
    handler.on_end_of_channel(2)
    assert recorder.aligned == [1]
    handler.on_barrier(0, Barrier(2))
    assert recorder.aligned == [1]
    handler.on_barrier(1, Barrier(2))
    assert recorder.aligned == [1, 2]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.data())
def test_every_checkpoint_either_aligns_once_or_is_cancelled_and_ids_only_grow(channels, data):
    """Each channel delivers its barriers in increasing order and then ends (as an upstream task does); whatever
    the interleaving, aligned ids strictly increase, no id is both aligned and cancelled, blocking never
    deadlocks, and once every channel ended nothing stays blocked."""
    recorder = Recorder()
    handler = recorder.handler(channels)
    per_channel = [sorted(data.draw(st.sets(st.integers(1, 6), min_size=1, max_size=4))) for _ in range(channels)]
    cursors = [0] * channels
    ended: set[int] = set()
    while len(ended) < channels:
        ready = [c for c in range(channels) if c not in ended and not handler.is_blocked(c)]
        assert ready, "every open channel is blocked: the alignment can never complete"
        channel = data.draw(st.sampled_from(ready))
        if cursors[channel] < len(per_channel[channel]):
            handler.on_barrier(channel, Barrier(per_channel[channel][cursors[channel]]))
            cursors[channel] += 1
        else:
            ended.add(channel)
            handler.on_end_of_channel(channel)
    assert recorder.aligned == sorted(set(recorder.aligned))
    assert not set(recorder.aligned) & set(recorder.cancelled)
    assert handler.blocked == frozenset() and handler.state is AlignmentState.WAITING
    highest = max(max(ids) for ids in per_channel)
    assert highest in recorder.aligned  # the newest checkpoint is never overtaken, so it always completes
