"""Where a receiver's pushed blocks are stored (Spark's ReceivedBlockHandler and its two implementations).

The pushing thread of a BlockGenerator calls `store_block(block_id, records)` for each block and then reports
the returned result to the ReceiverTracker (AddBlock). The receiver source task later reads the block back with
`read_block(result)`, possibly after a failover, possibly from another handler object over the same write-ahead
log directory (a TaskManager that was lost takes its BlockStore with it; the WAL on disk survives).

- BlockManagerBasedBlockHandler: the block store only. Fast; a block is lost with its TaskManager.
- WriteAheadLogBasedBlockHandler: the block, serialized once, goes to the block store and to the WAL in
  parallel; `store_block` returns only when both hold it, so a block the tracker hears about survives the loss
  of the TaskManager.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fluvial.common.errors import FluvialError
from fluvial.common.time import current_millis
from fluvial.common.wire import dumps_records, loads_records
from fluvial.receiver.blocks import StreamBlockId
from fluvial.receiver.wal import WalRecordHandle, WriteAheadLog

DEFAULT_STORE_TIMEOUT_S = 30.0


class BlockStoreError(FluvialError):
    """A block could not be stored (the store or the write-ahead log failed or took too long)."""


class BlockStoreTimeoutError(BlockStoreError, TimeoutError):
    """Storing a block took longer than the handler's timeout."""


class BlockNotFoundError(FluvialError, LookupError):
    """A block is in neither the block store nor a write-ahead log."""


@runtime_checkable
class BlockStoreResult(Protocol):
    """What `store_block` returns: which block, how many records (None when unknown)."""

    @property
    def block_id(self) -> StreamBlockId: ...

    @property
    def num_records(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class BlockManagerBasedStoreResult:
    block_id: StreamBlockId
    num_records: int | None


@dataclass(frozen=True, slots=True)
class WalBasedStoreResult:
    """The block is in the block store and at `wal_handle` in the write-ahead log."""

    block_id: StreamBlockId
    num_records: int | None
    wal_handle: WalRecordHandle


class BlockStore:
    """The blocks one TaskManager holds in memory: block id -> records. Thread-safe.

    A block is kept either as the records list (`put`) or as its serialized bytes (`put_serialized`, what the
    WAL-based handler stores so the store and the log hold the same snapshot); `get` returns records either way.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blocks: dict[StreamBlockId, list[Any] | bytes] = {}

    def put(self, block_id: StreamBlockId, records: list[Any]) -> None:
        with self._lock:
            self._blocks[block_id] = records

    def put_serialized(self, block_id: StreamBlockId, data: bytes) -> None:
        with self._lock:
            self._blocks[block_id] = data

    def get(self, block_id: StreamBlockId) -> list[Any] | None:
        """The block's records, or None when this store does not hold it."""
        with self._lock:
            stored = self._blocks.get(block_id)
        if isinstance(stored, bytes):
            return loads_records(stored)
        return stored

    def remove(self, block_id: StreamBlockId) -> bool:
        """Drop a block; False when it was not here."""
        with self._lock:
            return self._blocks.pop(block_id, None) is not None

    def remove_all(self, block_ids: Iterable[StreamBlockId]) -> int:
        """Drop several blocks (those the tracker cleaned after a checkpoint); returns how many were here."""
        with self._lock:
            return sum(self._blocks.pop(block_id, None) is not None for block_id in block_ids)

    def __contains__(self, block_id: object) -> bool:
        with self._lock:
            return block_id in self._blocks

    def __len__(self) -> int:
        with self._lock:
            return len(self._blocks)


class ReceivedBlockHandler(Protocol):
    """Stores a receiver's blocks; called from the BlockGenerator's one pushing thread."""

    def store_block(self, block_id: StreamBlockId, records: Iterable[Any]) -> BlockStoreResult:
        """Store the block; when this returns the block is where the result says. Raises BlockStoreError."""
        ...

    def read_block(self, result: BlockStoreResult) -> list[Any]:
        """The records of a block stored earlier, from wherever they still are. Raises BlockNotFoundError."""
        ...

    def cleanup_old_blocks(self, threshold_time_ms: int) -> None:
        """Drop stored data written before `threshold_time_ms` that no checkpoint can need any more."""
        ...


def _as_list(records: Iterable[Any]) -> list[Any]:
    return records if isinstance(records, list) else list(records)


class BlockManagerBasedBlockHandler:
    """Blocks go to the TaskManager's BlockStore only."""

    def __init__(self, store: BlockStore) -> None:
        self._store = store

    @property
    def store(self) -> BlockStore:
        return self._store

    def store_block(self, block_id: StreamBlockId, records: Iterable[Any]) -> BlockManagerBasedStoreResult:
        records = _as_list(records)
        self._store.put(block_id, records)
        return BlockManagerBasedStoreResult(block_id, len(records))

    def read_block(self, result: BlockStoreResult) -> list[Any]:
        records = self._store.get(result.block_id)
        if records is None:
            raise BlockNotFoundError(
                f"block {result.block_id} is no longer in the block store and was stored without a write-ahead "
                f"log; enable receiver.write-ahead-log.enable to survive the loss of a TaskManager"
            )
        return records

    def cleanup_old_blocks(self, threshold_time_ms: int) -> None:
        """Nothing to do by time: the store drops blocks by id (`BlockStore.remove_all`) once the tracker has
        cleaned them, as Spark's BlockManager does on the driver's request."""

    def close(self) -> None:
        """Nothing to release; here so both handlers close alike."""


class WriteAheadLogBasedBlockHandler:
    """Each block, serialized once (pickle protocol 5), goes to the block store and the write-ahead log in
    parallel on a pool of two threads; `store_block` waits at most `store_timeout_s` for both.

    Hazards:
    - On a timeout or a failure the other write may still finish later. A block left in the store is removed
      when its put completes; a record left in the WAL is unreferenced and goes with its segment on `clean`.
    - The WAL records are written under `clock()`; `cleanup_old_blocks(t)` deletes segments whose records are
      all older than t, so t must come from the same clock (ReceiverTracker.wal_clean_threshold_ms does that).
    The handler does not own the WAL: whoever opened it closes it (after `close()` here).
    """

    def __init__(
        self,
        store: BlockStore,
        wal: WriteAheadLog,
        store_timeout_s: float = DEFAULT_STORE_TIMEOUT_S,
        *,
        clock: Callable[[], int] = current_millis,
    ) -> None:
        if store_timeout_s <= 0:
            raise ValueError(f"the block store timeout must be > 0 s, got {store_timeout_s}")
        self._store = store
        self._wal = wal
        self._store_timeout_s = store_timeout_s
        self._clock = clock
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="wal-block-handler")
        self._closed = False

    @property
    def store(self) -> BlockStore:
        return self._store

    @property
    def wal(self) -> WriteAheadLog:
        return self._wal

    def store_block(self, block_id: StreamBlockId, records: Iterable[Any]) -> WalBasedStoreResult:
        if self._closed:
            raise BlockStoreError(f"cannot store block {block_id}: the write-ahead log block handler is closed")
        records = _as_list(records)
        data = dumps_records(records)
        in_store = self._pool.submit(self._store.put_serialized, block_id, data)
        in_wal = self._pool.submit(self._wal.write, data, self._clock())
        both: tuple[concurrent.futures.Future[Any], ...] = (in_store, in_wal)
        done, pending = concurrent.futures.wait(both, timeout=self._store_timeout_s)
        failed = [future for future in done if future.exception() is not None]
        if pending or failed:
            in_store.add_done_callback(lambda _future: self._store.remove(block_id))
        if failed:
            where = "block store" if failed[0] is in_store else "write-ahead log"
            raise BlockStoreError(
                f"storing block {block_id} failed in the {where}: {failed[0].exception()}"
            ) from failed[0].exception()
        if pending:
            still = " and ".join(
                name for name, future in (("block store", in_store), ("write-ahead log", in_wal)) if future in pending
            )
            raise BlockStoreTimeoutError(
                f"storing block {block_id} timed out after {self._store_timeout_s} s waiting for the {still}; "
                f"raise the handler's store timeout or look for a slow disk"
            )
        return WalBasedStoreResult(block_id, len(records), in_wal.result())

    def read_block(self, result: BlockStoreResult) -> list[Any]:
        """From the block store when it still holds the block, else from the write-ahead log."""
        records = self._store.get(result.block_id)
        if records is not None:
            return records
        if not isinstance(result, WalBasedStoreResult):
            raise BlockNotFoundError(
                f"block {result.block_id} is no longer in the block store and its store result "
                f"({type(result).__name__}) has no write-ahead log handle"
            )
        return loads_records(self._wal.read(result.wal_handle))

    def cleanup_old_blocks(self, threshold_time_ms: int) -> None:
        self._wal.clean(threshold_time_ms)

    def close(self) -> None:
        """Stop the writer threads (after any write in progress). `store_block` raises afterwards."""
        self._closed = True
        self._pool.shutdown(wait=True)
