"""ReceiverTracker: ordering and sequence numbers, blocks_after, cleanup after checkpoints, recovery from its WAL."""

from __future__ import annotations

import itertools

import pytest

from fluvial.receiver.blocks import ReceivedBlockInfo, StreamBlockId
from fluvial.receiver.handler import BlockManagerBasedStoreResult, WalBasedStoreResult
from fluvial.receiver.tracker import (
    BlocksAlreadyCleanedError,
    IllegalTrackerStateError,
    InvalidPositionError,
    ReceiverTracker,
    TrackerState,
    UnknownStreamError,
)
from fluvial.receiver.wal import WalRecordHandle

pytestmark = pytest.mark.timeout(30)


def info(stream_id: int, unique_id: int, wal_time_ms: int | None = None) -> ReceivedBlockInfo:
    block_id = StreamBlockId(stream_id, unique_id)
    if wal_time_ms is None:
        result = BlockManagerBasedStoreResult(block_id, 2)
    else:
        result = WalBasedStoreResult(block_id, 2, WalRecordHandle(f"/wal/log-{unique_id}", 0, 10, wal_time_ms))
    return ReceivedBlockInfo(stream_id, 2, None, block_id, result)


def ids(infos: list[ReceivedBlockInfo]) -> list[int]:
    return [i.block_id.unique_id for i in infos]


def ticking_clock(start: int = 0, step: int = 10):
    counter = itertools.count(start, step)
    return lambda: next(counter)


def test_blocks_are_kept_per_stream_in_arrival_order_with_sequence_numbers():
    tracker = ReceiverTracker([0, 1])
    for unique in (500, 300, 900):  # arrival order, not id order
        assert tracker.add_block(info(0, unique)) is True
    tracker.add_block(info(1, 100))
    assert ids(tracker.blocks_after(0, -1)) == [500, 300, 900]
    assert [b.sequence_number for b in tracker.tracked_blocks(0)] == [0, 1, 2]
    assert ids(tracker.blocks_after(1, -1)) == [100]
    assert tracker.next_sequence_number(1) == 1


def test_blocks_after_returns_the_blocks_past_a_position():
    tracker = ReceiverTracker([0])
    for unique in range(5):
        tracker.add_block(info(0, unique * 200))
    assert ids(tracker.blocks_after(0, 1)) == [400, 600, 800]
    assert ids(tracker.blocks_after(0, 3)) == [800]
    assert tracker.blocks_after(0, 4) == []
    with pytest.raises(InvalidPositionError, match="position 5 is past the last block ever added"):
        tracker.blocks_after(0, 5)
    with pytest.raises(InvalidPositionError, match="-1"):
        tracker.blocks_after(0, -2)


def test_a_retried_report_of_the_same_block_keeps_its_number():
    tracker = ReceiverTracker([0])
    tracker.add_block(info(0, 1))
    assert tracker.add_block(info(0, 1)) is True
    assert tracker.next_sequence_number(0) == 1


def test_unknown_streams_are_explicit_errors():
    tracker = ReceiverTracker([0, 2])
    with pytest.raises(UnknownStreamError, match=r"stream 7 .*known streams: 0, 2"):
        tracker.add_block(info(7, 1))
    with pytest.raises(UnknownStreamError, match="stream 7"):
        tracker.blocks_after(7, -1)
    with pytest.raises(UnknownStreamError, match="stream 7"):
        tracker.mark_checkpointed(7, 0, 1_000)


def test_mark_checkpointed_drops_blocks_through_the_position_and_returns_them():
    tracker = ReceiverTracker([0])
    for unique in range(5):
        tracker.add_block(info(0, unique))
    assert ids(tracker.mark_checkpointed(0, 2, 1_000)) == [0, 1, 2]
    assert [b.sequence_number for b in tracker.tracked_blocks(0)] == [3, 4]
    assert ids(tracker.blocks_after(0, 2)) == [3, 4]
    assert tracker.mark_checkpointed(0, 1, 900) == []  # an older checkpoint: nothing left to drop
    tracker.add_block(info(0, 5))
    assert [b.sequence_number for b in tracker.tracked_blocks(0)] == [3, 4, 5]  # numbers are never reused
    with pytest.raises(BlocksAlreadyCleanedError, match=r"blocks 1\.\.2 were dropped"):
        tracker.blocks_after(0, 0)


def test_wal_clean_threshold_is_the_oldest_tracked_wal_time():
    tracker = ReceiverTracker([0])
    for unique, wal_time in enumerate((100, 200, 300)):
        tracker.add_block(info(0, unique, wal_time_ms=wal_time))
    assert tracker.wal_clean_threshold_ms(0) == 100
    tracker.mark_checkpointed(0, 1, 250)
    assert tracker.wal_clean_threshold_ms(0) == 300  # not 250: block 2 is stored but not yet checkpointed
    tracker.mark_checkpointed(0, 2, 400)
    assert tracker.wal_clean_threshold_ms(0) is None


def test_recovery_restores_blocks_in_order_with_the_same_sequence_numbers(tmp_path):
    directory = tmp_path / "receivedBlockMetadata"
    tracker = ReceiverTracker([0, 1], directory, clock=ticking_clock())
    for unique in range(6):
        tracker.add_block(info(0, unique, wal_time_ms=unique))
    tracker.add_block(info(1, 42))
    tracker.mark_checkpointed(0, 2, 1_000)
    before = tracker.tracked_blocks(0)
    tracker.stop()

    restarted = ReceiverTracker([0, 1], directory, clock=ticking_clock(10_000))
    with pytest.raises(IllegalTrackerStateError, match="call recover"):
        restarted.add_block(info(0, 99))
    assert restarted.recover() == 4
    assert restarted.state is TrackerState.ACTIVE
    assert [(b.sequence_number, b.info) for b in restarted.tracked_blocks(0)] == [
        (b.sequence_number, b.info) for b in before
    ]
    assert [b.sequence_number for b in restarted.tracked_blocks(0)] == [3, 4, 5]
    assert ids(restarted.blocks_after(0, 3)) == [4, 5]
    assert ids(restarted.blocks_after(1, -1)) == [42]
    with pytest.raises(BlocksAlreadyCleanedError):
        restarted.blocks_after(0, 1)
    restarted.add_block(info(0, 6))
    assert restarted.tracked_blocks(0)[-1].sequence_number == 6
    with pytest.raises(IllegalTrackerStateError, match="recover"):
        restarted.recover()
    restarted.stop()


def test_recovery_continues_numbering_after_everything_was_cleaned(tmp_path):
    directory = tmp_path / "meta"
    tracker = ReceiverTracker([0], directory, clock=ticking_clock(), wal_rolling_interval_ms=15)
    for unique in range(4):
        tracker.add_block(info(0, unique))
    tracker.mark_checkpointed(0, 3, 1_000)
    tracker.stop()
    # its own log was cleaned down to the one segment holding the cleanup event recovery needs
    assert len([p for p in directory.iterdir() if p.name.startswith("log-")]) == 1

    restarted = ReceiverTracker([0], directory)
    assert restarted.recover() == 0
    assert restarted.next_sequence_number(0) == 4
    assert restarted.blocks_after(0, 3) == []
    restarted.add_block(info(0, 10))
    assert [b.sequence_number for b in restarted.tracked_blocks(0)] == [4]
    restarted.stop()


def test_recovery_ignores_additions_older_than_a_later_cleanup(tmp_path):
    directory = tmp_path / "meta"
    tracker = ReceiverTracker([0], directory, clock=ticking_clock(), wal_rolling_interval_ms=1_000_000)
    for unique in range(3):
        tracker.add_block(info(0, unique))
    tracker.mark_checkpointed(0, 1, 1_000)  # one segment: the cleaned additions stay in the log
    tracker.add_block(info(0, 3))
    tracker.stop()

    restarted = ReceiverTracker([0], directory)
    assert restarted.recover() == 2
    assert [b.sequence_number for b in restarted.tracked_blocks(0)] == [2, 3]
    restarted.stop()


def test_a_block_whose_log_write_fails_is_not_accepted(tmp_path):
    tracker = ReceiverTracker([0], tmp_path / "meta")
    tracker.add_block(info(0, 0))

    def broken_write(data, time_ms):
        raise OSError("disk full")

    tracker._wal.write = broken_write
    assert tracker.add_block(info(0, 1)) is False
    assert ids(tracker.blocks_after(0, -1)) == [0]
    assert tracker.next_sequence_number(0) == 1
    tracker.stop()


def test_a_stopped_tracker_refuses_calls():
    tracker = ReceiverTracker([0])
    tracker.stop()
    with pytest.raises(IllegalTrackerStateError, match="stopped"):
        tracker.add_block(info(0, 0))
    with pytest.raises(IllegalTrackerStateError, match="stopped"):
        tracker.recover()


def test_recover_without_a_wal_recovers_nothing():
    tracker = ReceiverTracker([0])
    assert tracker.recover() == 0
    assert tracker.state is TrackerState.ACTIVE
    assert tracker.wal_enabled is False


def test_a_tracker_that_never_numbered_a_restored_position_resumes_after_it(tmp_path):
    """A run restored from a checkpoint whose tracker lost its state (no write-ahead log): the source neither
    waits on numbers that will never come nor skips the blocks that come next (issue 13, defect 1)."""
    tracker = ReceiverTracker([0])
    tracker.resume_after(0, 41)
    assert tracker.blocks_after(0, 41) == []
    tracker.add_block(info(0, 7))
    assert [b.sequence_number for b in tracker.tracked_blocks(0)] == [42]
    assert ids(tracker.blocks_after(0, 41)) == [7]
    with_log = ReceiverTracker([0], tmp_path / "log")
    with_log.recover()
    with_log.resume_after(0, 9)
    with_log.stop()
    recovered = ReceiverTracker([0], tmp_path / "log")
    recovered.recover()
    assert recovered.next_sequence_number(0) == 10, "the resumed numbering was not logged"


def test_resuming_a_tracker_that_knows_the_position_changes_nothing():
    tracker = ReceiverTracker([0])
    for unique in range(3):
        tracker.add_block(info(0, unique))
    tracker.resume_after(0, 0)
    assert ids(tracker.blocks_after(0, 0)) == [1, 2]
    assert tracker.next_sequence_number(0) == 3
