"""Block handlers: the block store alone, and the block store plus the write-ahead log in parallel."""

from __future__ import annotations

import threading
import time

import pytest

from fluvial.receiver.blocks import StreamBlockId
from fluvial.receiver.handler import (
    BlockManagerBasedBlockHandler,
    BlockManagerBasedStoreResult,
    BlockNotFoundError,
    BlockStore,
    BlockStoreError,
    BlockStoreResult,
    BlockStoreTimeoutError,
    WalBasedStoreResult,
    WriteAheadLogBasedBlockHandler,
)
from fluvial.receiver.wal import WriteAheadLog

pytestmark = pytest.mark.timeout(30)

BLOCK = StreamBlockId(3, 1_000)


class SlowStore(BlockStore):
    def __init__(self, meet: threading.Barrier | None = None, delay_s: float = 0.0) -> None:
        super().__init__()
        self.meet, self.delay_s, self.done = meet, delay_s, threading.Event()

    def put_serialized(self, block_id, data):
        if self.meet is not None:
            self.meet.wait()
        time.sleep(self.delay_s)
        super().put_serialized(block_id, data)
        self.done.set()


class SlowWal(WriteAheadLog):
    def __init__(self, directory, meet: threading.Barrier | None = None, delay_s: float = 0.0, **kwargs) -> None:
        super().__init__(directory, **kwargs)
        self.meet, self.delay_s, self.done = meet, delay_s, threading.Event()
        self.failure: Exception | None = None

    def write(self, data, time_ms):
        if self.meet is not None:
            self.meet.wait()
        time.sleep(self.delay_s)
        if self.failure is not None:
            raise self.failure
        handle = super().write(data, time_ms)
        self.done.set()
        return handle


@pytest.fixture
def wal(tmp_path):
    log = WriteAheadLog(tmp_path / "receivedData" / "3")
    yield log
    log.close()


def test_block_store_is_keyed_by_block_id():
    store = BlockStore()
    store.put(BLOCK, ["a", "b"])
    assert store.get(BLOCK) == ["a", "b"]
    assert store.get(StreamBlockId(3, 1_200)) is None
    assert BLOCK in store and len(store) == 1
    assert store.remove(BLOCK) is True
    assert store.remove(BLOCK) is False
    assert store.get(BLOCK) is None


def test_block_store_takes_concurrent_puts():
    store = BlockStore()

    def put_many(receiver: int) -> None:
        for unique in range(200):
            store.put(StreamBlockId(receiver, unique), [receiver, unique])

    threads = [threading.Thread(target=put_many, args=(receiver,)) for receiver in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store) == 800
    assert store.get(StreamBlockId(2, 199)) == [2, 199]
    assert store.remove_all(StreamBlockId(1, unique) for unique in range(300)) == 200


def test_block_manager_handler_stores_and_counts():
    handler = BlockManagerBasedBlockHandler(BlockStore())
    result = handler.store_block(BLOCK, iter([1, 2, 3]))
    assert result == BlockManagerBasedStoreResult(BLOCK, 3)
    assert isinstance(result, BlockStoreResult)
    assert handler.read_block(result) == [1, 2, 3]


def test_block_manager_handler_cannot_read_a_lost_block():
    handler = BlockManagerBasedBlockHandler(BlockStore())
    result = handler.store_block(BLOCK, [1])
    handler.store.remove(BLOCK)
    with pytest.raises(BlockNotFoundError, match="input-3-1000"):
        handler.read_block(result)


def test_wal_handler_stores_in_both_and_reports_the_handle(wal):
    store = BlockStore()
    handler = WriteAheadLogBasedBlockHandler(store, wal, clock=lambda: 4_242)
    result = handler.store_block(BLOCK, [("a", 1), ("b", 2)])
    handler.close()
    assert isinstance(result, WalBasedStoreResult)
    assert (result.block_id, result.num_records, result.wal_handle.time_ms) == (BLOCK, 2, 4_242)
    assert store.get(BLOCK) == [("a", 1), ("b", 2)]
    assert handler.read_block(result) == [("a", 1), ("b", 2)]
    assert list(wal.read_all()) == [wal.read(result.wal_handle)]


def test_wal_handler_writes_store_and_wal_in_parallel_and_awaits_both(tmp_path):
    meet = threading.Barrier(2, timeout=5)  # broken (and the test failed) unless both writes run at once
    store = SlowStore(meet, delay_s=0.3)
    wal = SlowWal(tmp_path, meet, delay_s=0.6)
    handler = WriteAheadLogBasedBlockHandler(store, wal, store_timeout_s=10)

    started = time.monotonic()
    result = handler.store_block(BLOCK, ["r"])
    elapsed = time.monotonic() - started
    handler.close()

    assert store.done.is_set() and wal.done.is_set()  # returned only after the slower of the two
    assert elapsed >= 0.6  # the slower write's time at least; the barrier above proves the two ran at once
    assert wal.read(result.wal_handle)
    wal.close()


def test_wal_handler_timeout_names_the_block_and_the_timeout(tmp_path):
    wal = SlowWal(tmp_path, delay_s=1.0)
    store = BlockStore()
    handler = WriteAheadLogBasedBlockHandler(store, wal, store_timeout_s=0.2)
    with pytest.raises(BlockStoreTimeoutError, match=r"block input-3-1000 timed out after 0\.2 s.*write-ahead log"):
        handler.store_block(BLOCK, ["late"])
    handler.close()  # waits for the slow write, whose store copy is then dropped
    assert wal.done.is_set()
    assert BLOCK not in store
    wal.close()


def test_wal_handler_reports_a_failed_wal_write(tmp_path):
    wal = SlowWal(tmp_path)
    wal.failure = OSError("disk full")
    store = BlockStore()
    handler = WriteAheadLogBasedBlockHandler(store, wal)
    with pytest.raises(BlockStoreError, match="input-3-1000.*write-ahead log: disk full"):
        handler.store_block(BLOCK, ["x"])
    handler.close()
    assert BLOCK not in store
    wal.close()


def test_wal_handler_reads_from_the_wal_after_the_task_manager_is_lost(tmp_path):
    directory = tmp_path / "receivedData" / "3"
    first_wal = WriteAheadLog(directory)
    first = WriteAheadLogBasedBlockHandler(BlockStore(), first_wal)
    results = [first.store_block(StreamBlockId(3, unique), [unique, f"r{unique}"]) for unique in range(3)]
    first.close()
    first_wal.close()

    # a new TaskManager: an empty block store, the same WAL directory
    second_wal = WriteAheadLog(directory)
    second = WriteAheadLogBasedBlockHandler(BlockStore(), second_wal)
    assert [second.read_block(result) for result in results] == [[0, "r0"], [1, "r1"], [2, "r2"]]
    assert len(second.store) == 0
    second.close()
    second_wal.close()


def test_wal_handler_prefers_the_store_and_fails_clearly_without_a_handle(wal):
    store = BlockStore()
    handler = WriteAheadLogBasedBlockHandler(store, wal)
    result = handler.store_block(BLOCK, [1])
    store.put(BLOCK, ["from the store"])
    assert handler.read_block(result) == ["from the store"]
    with pytest.raises(BlockNotFoundError, match="input-3-7"):
        handler.read_block(BlockManagerBasedStoreResult(StreamBlockId(3, 7), 1))
    handler.close()


def test_wal_handler_cleanup_cleans_the_wal_by_time(tmp_path):
    wal = WriteAheadLog(tmp_path, rolling_interval_ms=100)
    times = iter([0, 150])
    handler = WriteAheadLogBasedBlockHandler(BlockStore(), wal, clock=lambda: next(times))
    old = handler.store_block(StreamBlockId(3, 0), ["old"])
    new = handler.store_block(StreamBlockId(3, 1), ["new"])
    handler.cleanup_old_blocks(new.wal_handle.time_ms)
    assert [segment.start_ms for segment in wal.segments()] == [150]
    assert old.wal_handle.path != new.wal_handle.path
    handler.close()
    with pytest.raises(BlockStoreError, match="closed"):
        handler.store_block(StreamBlockId(3, 2), ["after close"])
    wal.close()
