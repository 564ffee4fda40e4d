"""The RocksDB backend's snapshots (the seam of `fluvial.state.snapshot`): what its pending snapshots write, and
how its handles come back into a database.

Both start the same way on the task thread: a native checkpoint (memtable flush + hard links, milliseconds
whatever the state size). Then, off the task thread:
- IncrementalUpload (checkpoints of an incremental backend): each SST file is uploaded once — a file already
  uploaded for the base checkpoint (the last one confirmed complete) is referenced, not sent again; new SSTs go
  to the storage's shared directory (reference-counted by the completed-checkpoint store), the small other
  files (MANIFEST, CURRENT, OPTIONS) with the checkpoint. Result: an IncrementalRocksDBStateHandle.
- CanonicalScan (savepoints, and every checkpoint of a non-incremental backend): the native checkpoint is
  opened read-only and scanned into the canonical by-key-group form. Result: a KeyGroupsStateHandle.
Either way the local checkpoint directory is deleted afterwards (or by `discard`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from fluvial.state.backend import KeyedStateSnapshot
from fluvial.state.rocksdb_native import RocksDBSnapshot
from fluvial.state.snapshot import IncrementalRocksDBStateHandle, KeyGroupsStateHandle, StateWriter

StateReader = Callable[[Any], bytes]


class UploadedFiles:
    """Per checkpoint: the handle of every SST file it uploaded or referenced, so the next checkpoint can
    reference the files of its base. Thread-safe: uploads run on a checkpoint I/O thread."""

    KEEP = 16  # checkpoints remembered: a base older than this would be re-uploaded, never lost

    def __init__(self) -> None:
        self._by_checkpoint: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def record(self, checkpoint_id: int, sst_handles: dict[str, Any]) -> None:
        with self._lock:
            self._by_checkpoint[checkpoint_id] = dict(sst_handles)
            for old in [cid for cid in self._by_checkpoint if cid < checkpoint_id - self.KEEP]:
                del self._by_checkpoint[old]

    def of(self, checkpoint_id: int | None) -> dict[str, Any]:
        if checkpoint_id is None:
            return {}
        with self._lock:
            return dict(self._by_checkpoint.get(checkpoint_id, {}))


class IncrementalUpload:
    """PendingKeyedSnapshot of an incremental RocksDB checkpoint."""

    __slots__ = ("_snapshot", "_uploads")

    def __init__(self, snapshot: RocksDBSnapshot, uploads: UploadedFiles) -> None:
        self._snapshot = snapshot
        self._uploads = uploads

    def write(self, writer: StateWriter) -> IncrementalRocksDBStateHandle:
        snapshot = self._snapshot
        try:
            base = self._uploads.of(snapshot.base_checkpoint_id)
            new = set(snapshot.new_sst_files)
            sst: dict[str, Any] = {}
            for file_name in snapshot.sst_files:
                reused = base.get(file_name) if file_name not in new else None
                sst[file_name] = (
                    reused
                    if reused is not None
                    else writer.write_shared(file_name, _read(snapshot.directory, file_name))
                )
            other = {
                file_name: writer.write(file_name, _read(snapshot.directory, file_name))
                for file_name in snapshot.other_files
            }
            self._uploads.record(snapshot.checkpoint_id, sst)
            return IncrementalRocksDBStateHandle(sst, other, snapshot.max_parallelism, snapshot.key_group_range)
        finally:
            snapshot.discard()

    def discard(self) -> None:
        self._snapshot.discard()


class CanonicalScan:
    """PendingKeyedSnapshot in canonical form, read from a native checkpoint off the task thread."""

    __slots__ = ("_snapshot",)

    def __init__(self, snapshot: RocksDBSnapshot) -> None:
        self._snapshot = snapshot

    def write(self, writer: StateWriter) -> KeyGroupsStateHandle:
        from fluvial.state.rocksdb import scan_checkpoint

        snapshot = self._snapshot
        try:
            canonical = scan_checkpoint(snapshot.directory, snapshot.max_parallelism)
            return KeyGroupsStateHandle.of(canonical, snapshot.key_group_range)
        finally:
            snapshot.discard()

    def discard(self) -> None:
        self._snapshot.discard()


def download_native(handle: IncrementalRocksDBStateHandle, reader: StateReader) -> str:
    """A private local directory holding the checkpoint's files (the caller removes it once restored)."""
    directory = tempfile.mkdtemp(prefix="fluvial-rocksdb-restore-")
    for file_name, file_handle in {**handle.sst_files, **handle.other_files}.items():
        with open(os.path.join(directory, file_name), "wb") as out:
            out.write(reader(file_handle))
    return directory


def native_to_key_groups(
    handle: IncrementalRocksDBStateHandle, reader: StateReader, key_group_range: range
) -> KeyedStateSnapshot:
    """The canonical form of a native checkpoint's key groups in `key_group_range` (how a heap backend restores
    RocksDB state)."""
    from fluvial.state.rocksdb import scan_checkpoint

    directory = download_native(handle, reader)
    try:
        snapshot = scan_checkpoint(directory, handle.max_parallelism)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    groups = {group: states for group, states in snapshot.key_groups.items() if group in key_group_range}
    return KeyedStateSnapshot(snapshot.max_parallelism, groups, snapshot.state_kinds)


def _read(directory: str, file_name: str) -> bytes:
    with open(os.path.join(directory, file_name), "rb") as source:
        return source.read()
