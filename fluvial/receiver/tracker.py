"""The JobMaster's record of every block receivers have stored (Spark's ReceiverTracker + ReceivedBlockTracker).

Protocol, per receiver stream:
1. A receiver stores a block (block handler) and reports it: `add_block(info)`. The tracker gives it the next
   sequence number of its stream (0, 1, 2, ...). With the write-ahead log on, the AddBlock event (stream,
   sequence number, info) is written to the tracker's own WAL first and the block is accepted only once that
   write returned; a failed write answers False and the block is not tracked (the receiver reports the error).
2. The receiver source task keeps `position`, the sequence number of the last block it emitted (-1 before the
   first), in its checkpointed state, and asks for `blocks_after(stream, position)`: the blocks numbered
   position + 1, position + 2, ..., in order. After a failover it asks again with the restored position and
   replays exactly the blocks it had not emitted before the checkpoint.
3. When a checkpoint holding `position` completes, `mark_checkpointed(stream, position, time_ms)` drops the
   blocks numbered <= position (a CleanupEvent goes to the WAL first) and returns their infos, so the caller can
   remove them from the block store and clean the receiver's data WAL below `wal_clean_threshold_ms(stream)`.
   Positions are never reused: a source restored from an older checkpoint than the one that cleaned its
   blocks gets BlocksAlreadyCleanedError rather than a silent gap.
4. After a JobMaster restart, a tracker over the same WAL directory must `recover()` before anything else: the
   blocks that were added and not cleaned come back in order with their sequence numbers, and numbering
   continues after the highest one ever given.
5. A source restored from a checkpoint holding `position` calls `resume_after(stream, position)`. A tracker that
   numbered that far (live, or recovered from its log) is unchanged; one that did not — a new run without the
   write-ahead log, or whose log is gone — numbers the next block position + 1 (logged as a cleanup), so the
   source neither waits on numbers that will never come nor skips new blocks.
The tracker's WAL cleans itself after each checkpoint, keeping every event recovery still needs: the AddBlock
events of tracked blocks and each stream's latest CleanupEvent (which carries where numbering resumes).
Thread-safe: one lock; WAL writes happen under it, so the log order is the sequence order.
"""

from __future__ import annotations

import enum
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fluvial.common.errors import FluvialError
from fluvial.common.time import current_millis
from fluvial.common.wire import dumps_records, loads_records
from fluvial.receiver.blocks import ReceivedBlockInfo, StreamBlockId
from fluvial.receiver.handler import WalBasedStoreResult
from fluvial.receiver.wal import DEFAULT_ROLLING_INTERVAL_MS, WalError, WriteAheadLog

_log = logging.getLogger(__name__)


class UnknownStreamError(FluvialError, LookupError):
    """A stream id the tracker was not created with."""


class IllegalTrackerStateError(FluvialError):
    """A call the tracker's current state does not allow."""


class BlocksAlreadyCleanedError(FluvialError):
    """Blocks a caller asked for were dropped after a newer checkpoint completed."""


class InvalidPositionError(FluvialError, ValueError):
    """A position no block was ever added at (the tracker's state was lost, or the caller is confused)."""


class TrackerState(enum.Enum):
    CREATED = "created (recover() may still be called)"
    ACTIVE = "active"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class BlockAdditionEvent:
    stream_id: int
    sequence_number: int
    info: ReceivedBlockInfo
    time_ms: int
    """The tracker's clock when the event was logged."""


@dataclass(frozen=True, slots=True)
class BlockCleanupEvent:
    stream_id: int
    position: int
    checkpoint_time_ms: int
    time_ms: int
    """The tracker's clock when the event was logged."""


@dataclass(frozen=True, slots=True)
class TrackedBlock:
    sequence_number: int
    info: ReceivedBlockInfo
    logged_at_ms: int


@dataclass(slots=True)
class _StreamBlocks:
    """One stream's tracked blocks: numbered cleaned_up_to + 1 ... next_sequence - 1, without gaps."""

    blocks: list[TrackedBlock] = field(default_factory=list)
    block_ids: set[StreamBlockId] = field(default_factory=set)
    next_sequence: int = 0
    cleaned_up_to: int = -1
    cleanup_logged_at_ms: int | None = None
    last_position: Any = None  # the newest upstream position stored with a block (kept when blocks are dropped)

    def append(self, block: TrackedBlock) -> None:
        self.blocks.append(block)
        self.block_ids.add(block.info.block_id)
        self.next_sequence = block.sequence_number + 1
        position = getattr(block.info, "position", None)  # (an info logged before positions existed has none)
        if position is not None:
            self.last_position = position

    def drop_through(self, position: int) -> list[ReceivedBlockInfo]:
        count = max(0, min(position - self.cleaned_up_to, len(self.blocks)))
        removed = [block.info for block in self.blocks[:count]]
        del self.blocks[:count]
        self.block_ids.difference_update(info.block_id for info in removed)
        self.cleaned_up_to = max(self.cleaned_up_to, position)
        self.next_sequence = max(self.next_sequence, position + 1)
        return removed

    def needed_log_times(self) -> list[int]:
        """The log times of the events recovery needs for this stream."""
        times = [block.logged_at_ms for block in self.blocks]
        if self.cleanup_logged_at_ms is not None:
            times.append(self.cleanup_logged_at_ms)
        return times


class ReceiverTracker:
    """Tracks the blocks of the receiver streams `stream_ids`; with `wal_directory`, logs every event there
    first (e.g. `<checkpoint dir>/receivedBlockMetadata/`)."""

    def __init__(
        self,
        stream_ids: Iterable[int],
        wal_directory: str | os.PathLike[str] | None = None,
        *,
        clock: Callable[[], int] = current_millis,
        wal_rolling_interval_ms: int = DEFAULT_ROLLING_INTERVAL_MS,
    ) -> None:
        self._streams = {stream_id: _StreamBlocks() for stream_id in stream_ids}
        self._clock = clock
        self._lock = threading.Lock()
        self._wal = (
            WriteAheadLog(wal_directory, rolling_interval_ms=wal_rolling_interval_ms)
            if wal_directory is not None
            else None
        )
        self._state = TrackerState.CREATED
        self._must_recover = self._wal is not None and bool(self._wal.segments())

    @property
    def state(self) -> TrackerState:
        return self._state

    @property
    def stream_ids(self) -> frozenset[int]:
        return frozenset(self._streams)

    @property
    def wal_enabled(self) -> bool:
        return self._wal is not None

    def add_block(self, info: ReceivedBlockInfo) -> bool:
        """Track a stored block as the next of its stream. True when accepted (also for a block already
        tracked, e.g. a retried report: it keeps its number); False when the WAL write failed."""
        with self._lock:
            self._activate("add a block")
            stream = self._stream(info.stream_id)
            if info.block_id in stream.block_ids:
                return True
            block = TrackedBlock(stream.next_sequence, info, self._clock())
            if self._wal is not None:
                event = BlockAdditionEvent(info.stream_id, block.sequence_number, info, block.logged_at_ms)
                try:
                    self._wal.write(dumps_records(event), block.logged_at_ms)
                except (OSError, WalError):
                    _log.exception("could not log block %s of stream %s; not accepted", info.block_id, info.stream_id)
                    return False
            stream.append(block)
            return True

    def blocks_after(self, stream_id: int, position: int) -> list[ReceivedBlockInfo]:
        """The blocks numbered position + 1, position + 2, ... in order (position -1: from the first)."""
        with self._lock:
            self._activate("read blocks")
            stream = self._stream(stream_id)
            self._check_position(stream_id, stream, position)
            if position < stream.cleaned_up_to:
                raise BlocksAlreadyCleanedError(
                    f"stream {stream_id}: blocks {position + 1}..{stream.cleaned_up_to} were dropped when a "
                    f"checkpoint holding position {stream.cleaned_up_to} completed; position {position} comes from "
                    f"an older checkpoint - restore from the latest completed checkpoint instead"
                )
            return [block.info for block in stream.blocks[position - stream.cleaned_up_to :]]

    def mark_checkpointed(self, stream_id: int, position: int, time_ms: int) -> list[ReceivedBlockInfo]:
        """A checkpoint taken at `time_ms` holding `position` completed: drop blocks numbered <= position and
        return their infos, oldest first (empty when an earlier call dropped them already). `time_ms` is logged
        with the event; it is not a cleaning threshold, because blocks stored before the checkpoint may not have
        been emitted yet."""
        with self._lock:
            self._activate("mark a checkpoint")
            stream = self._stream(stream_id)
            self._check_position(stream_id, stream, position)
            if position <= stream.cleaned_up_to:
                return []
            logged_at_ms = self._clock()
            if self._wal is not None:
                event = BlockCleanupEvent(stream_id, position, time_ms, logged_at_ms)
                self._wal.write(dumps_records(event), logged_at_ms)
            removed = stream.drop_through(position)
            stream.cleanup_logged_at_ms = logged_at_ms
            self._clean_own_log()
            return removed

    def resume_after(self, stream_id: int, position: int) -> None:
        """Step 5: a restored source resumes after `position` (the last block its checkpoint emitted)."""
        with self._lock:
            self._activate("resume a stream")
            stream = self._stream(stream_id)
            if position < stream.next_sequence:
                return
            logged_at_ms = self._clock()
            if self._wal is not None:
                self._wal.write(
                    dumps_records(BlockCleanupEvent(stream_id, position, logged_at_ms, logged_at_ms)), logged_at_ms
                )
            _log.warning(
                "stream %s resumes after block %d, which its tracker never numbered (%s): the blocks stored "
                "after the checkpoint by the run that took it are not here; numbering goes on from %d",
                stream_id,
                position,
                "its write-ahead log holds no such block"
                if self._wal is not None
                else "the write-ahead log is off: receiver.write-ahead-log.enable",
                position + 1,
            )
            stream.drop_through(position)
            stream.cleanup_logged_at_ms = logged_at_ms

    def last_position(self, stream_id: int) -> Any:
        """The newest upstream position stored with a block of the stream (None: none was)."""
        with self._lock:
            return self._stream(stream_id).last_position

    def seed_position(self, stream_id: int, position: Any) -> None:
        """A restored source's checkpointed position, for a tracker that knows none newer (its write-ahead log
        is off, or holds no block with a position): the receiver resumes after what the checkpoint emitted."""
        with self._lock:
            stream = self._stream(stream_id)
            if stream.last_position is None:
                stream.last_position = position

    def wal_clean_threshold_ms(self, stream_id: int) -> int | None:
        """The threshold for `cleanup_old_blocks` of the stream's receiver (its data WAL): the oldest WAL time
        of a block still tracked, None when no tracked block has a WAL handle (clean nothing yet). Blocks stored
        but not yet reported were written later, so they are safe too."""
        with self._lock:
            stream = self._stream(stream_id)
            times = [
                block.info.store_result.wal_handle.time_ms
                for block in stream.blocks
                if isinstance(block.info.store_result, WalBasedStoreResult)
            ]
            return min(times, default=None)

    def tracked_blocks(self, stream_id: int) -> list[TrackedBlock]:
        """The stream's tracked blocks with their sequence numbers, in order."""
        with self._lock:
            return list(self._stream(stream_id).blocks)

    def next_sequence_number(self, stream_id: int) -> int:
        with self._lock:
            return self._stream(stream_id).next_sequence

    def recover(self) -> int:
        """Rebuild every stream's blocks from the WAL (after a JobMaster restart); returns how many blocks are
        tracked afterwards. Only before the first add_block, blocks_after or mark_checkpointed."""
        with self._lock:
            if self._state is not TrackerState.CREATED:
                raise IllegalTrackerStateError(
                    f"cannot recover a receiver tracker that is {self._state.value}; recover() must come first"
                )
            if self._wal is not None:
                self._replay([loads_records(data) for data in self._wal.read_all()])
            self._must_recover = False
            self._state = TrackerState.ACTIVE
            return sum(len(stream.blocks) for stream in self._streams.values())

    def stop(self) -> None:
        """Close the WAL; every call but `stop` raises afterwards. Idempotent."""
        with self._lock:
            self._state = TrackerState.STOPPED
            if self._wal is not None:
                self._wal.close()

    # -- internals (lock held) --

    def _activate(self, action: str) -> None:
        if self._state is TrackerState.STOPPED:
            raise IllegalTrackerStateError(f"cannot {action}: the receiver tracker is {self._state.value}")
        if self._state is TrackerState.CREATED:
            if self._must_recover and self._wal is not None:  # (only a log can hold events to recover)
                raise IllegalTrackerStateError(
                    f"cannot {action}: the receiver tracker's write-ahead log in {self._wal.directory} holds "
                    f"events of an earlier run; call recover() first"
                )
            self._state = TrackerState.ACTIVE

    def _stream(self, stream_id: int) -> _StreamBlocks:
        try:
            return self._streams[stream_id]
        except KeyError:
            known = ", ".join(str(s) for s in sorted(self._streams)) or "none"
            raise UnknownStreamError(
                f"stream {stream_id} is not a receiver stream of this job (known streams: {known})"
            ) from None

    @staticmethod
    def _check_position(stream_id: int, stream: _StreamBlocks, position: int) -> None:
        if position < -1:
            raise InvalidPositionError(f"stream {stream_id}: a position is -1 (no block yet) or more, got {position}")
        if position >= stream.next_sequence:
            raise InvalidPositionError(
                f"stream {stream_id}: position {position} is past the last block ever added "
                f"({stream.next_sequence - 1}); was the tracker's state lost (write-ahead log off)?"
            )

    def _replay(self, events: list[Any]) -> None:
        """Cleanups first, then additions: the log may still hold AddBlock events older than a stream's latest
        CleanupEvent (they shared a segment with needed events) while earlier CleanupEvents are gone."""
        for event in events:
            if isinstance(event, BlockCleanupEvent):
                stream = self._stream(event.stream_id)
                stream.drop_through(event.position)
                stream.cleanup_logged_at_ms = event.time_ms
            elif not isinstance(event, BlockAdditionEvent):
                raise IllegalTrackerStateError(f"unexpected event in the receiver tracker's log: {event!r}")
        for event in events:
            if not isinstance(event, BlockAdditionEvent):
                continue
            stream = self._stream(event.stream_id)
            if event.sequence_number <= stream.cleaned_up_to:
                continue  # kept by the log though its block was cleaned
            expected = stream.cleaned_up_to + 1 + len(stream.blocks)
            if event.sequence_number != expected:
                raise IllegalTrackerStateError(
                    f"the receiver tracker's write-ahead log has block {event.sequence_number} of stream "
                    f"{event.stream_id} where block {expected} should come; the log is incomplete"
                )
            stream.append(TrackedBlock(event.sequence_number, event.info, event.time_ms))

    def _clean_own_log(self) -> None:
        if self._wal is None:
            return
        needed = [time for stream in self._streams.values() for time in stream.needed_log_times()]
        if needed:
            self._wal.clean(min(needed))
