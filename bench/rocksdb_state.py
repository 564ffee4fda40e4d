"""RocksDB keyed state at one million keys: writes, full snapshot, native (incremental) checkpoints, restores.

`python -m bench.rocksdb_state`. Targets: an incremental checkpoint after changing 1% of the keys uploads less
than 10% of the full SST bytes, and restoring one million keys takes less than 5 s.
"""

from __future__ import annotations

import gc
import os
import pickle
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

from fluvial.datastream.state import ValueStateDescriptor
from fluvial.state.heap import HeapKeyedStateBackend
from fluvial.state.rocksdb import RocksDBKeyedStateBackend

KEYS = 1_000_000
CHANGED = KEYS // 100
MAX_PARALLELISM = 128
INCREMENTAL_TARGET = 0.10
RESTORE_TARGET_SECONDS = 5.0


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    start = time.perf_counter()
    result = run()
    return result, time.perf_counter() - start


def fill(backend: Any, keys: range | list[int], offset: int = 0) -> None:
    state = backend.get_state(ValueStateDescriptor("count"))
    for key in keys:
        backend.current_key = key
        state.update(key + offset)


def count_keys(backend: Any) -> int:
    return sum(1 for _ in backend.keys("count"))


def main() -> bool:
    root = tempfile.mkdtemp(prefix="fluvial-bench-rocksdb-")
    try:
        return _run(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(root: str) -> bool:
    everything = range(MAX_PARALLELISM)
    backend = RocksDBKeyedStateBackend(MAX_PARALLELISM, everything, os.path.join(root, "db"))
    _, put_seconds = timed(lambda: fill(backend, range(KEYS)))
    snapshot, snapshot_seconds = timed(backend.snapshot)
    snapshot_bytes = len(pickle.dumps(snapshot, protocol=5))

    first, first_seconds = timed(lambda: backend.checkpoint_native(1, os.path.join(root, "chk-1")))
    backend.notify_checkpoint_complete(1)
    changed = random.Random(42).sample(range(KEYS), CHANGED)
    fill(backend, changed, offset=1)
    second, second_seconds = timed(lambda: backend.checkpoint_native(2, os.path.join(root, "chk-2")))
    incremental_ratio = second.new_sst_bytes / first.total_sst_bytes

    full_restore = RocksDBKeyedStateBackend(MAX_PARALLELISM, everything, os.path.join(root, "full-restore"))
    _, full_restore_seconds = timed(lambda: full_restore.restore([snapshot]))
    native_restore = RocksDBKeyedStateBackend(MAX_PARALLELISM, everything, os.path.join(root, "native-restore"))
    _, native_restore_seconds = timed(lambda: native_restore.restore_native(second.directory, 2))
    restored_counts = {count_keys(full_restore), count_keys(native_restore)}

    heap = HeapKeyedStateBackend(MAX_PARALLELISM, everything)
    _, heap_restore_seconds = timed(lambda: heap.restore([snapshot]))

    incremental_ok = incremental_ratio < INCREMENTAL_TARGET
    restore_ok = max(full_restore_seconds, native_restore_seconds) < RESTORE_TARGET_SECONDS and restored_counts == {
        KEYS
    }
    mb = 1024 * 1024
    print(f"RocksDB keyed state, {KEYS:,} int keys in one ValueState (max parallelism {MAX_PARALLELISM})")
    print(f"  put (per-record handle update)   {put_seconds:8.2f} s  ({KEYS / put_seconds:,.0f} updates/s)")
    print(f"  full snapshot()                  {snapshot_seconds:8.2f} s  ({snapshot_bytes / mb:.1f} MB pickled)")
    print(
        f"  native checkpoint 1 (sync part)  {first_seconds * 1000:8.1f} ms ({len(first.sst_files)} SST files, "
        f"{first.total_sst_bytes / mb:.1f} MB)"
    )
    print(
        f"  native checkpoint 2 after {CHANGED:,} changed keys: {second_seconds * 1000:.1f} ms, "
        f"new SST {second.new_sst_bytes / mb:.2f} MB of {second.total_sst_bytes / mb:.1f} MB "
        f"({len(second.new_sst_files)} new, {len(second.reused_sst_files)} reused files)"
    )
    print(
        f"  incremental upload / full SST    {incremental_ratio:8.1%}   (target < {INCREMENTAL_TARGET:.0%}: "
        f"{'meets' if incremental_ok else 'MISSES'})"
    )
    print(f"  restore(full snapshot)           {full_restore_seconds:8.2f} s")
    print(f"  restore_native(checkpoint 2)     {native_restore_seconds:8.2f} s")
    print(f"  heap restore(full snapshot)      {heap_restore_seconds:8.2f} s  (reference)")
    print(
        f"  restores of {KEYS:,} keys          (target < {RESTORE_TARGET_SECONDS} s, all keys back: "
        f"{'meets' if restore_ok else 'MISSES'})"
    )
    for live in (backend, full_restore, native_restore):
        live.dispose()
    return incremental_ok and restore_ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
