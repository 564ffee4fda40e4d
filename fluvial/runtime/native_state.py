"""Incremental RocksDB checkpoints: the asynchronous upload of a native checkpoint, and restoring from one.

A native checkpoint (hard links, taken synchronously by the backend) is uploaded file by file: SST files are
immutable, so an SST already uploaded for the checkpoint the backend diffed against is referenced, not sent
again; new SSTs go to the storage's shared directory (reference-counted by the completed-checkpoint store);
the small other files (MANIFEST, CURRENT, OPTIONS) go with the checkpoint. Restoring downloads the files into
a local directory and opens them; a heap backend restores from such a checkpoint through a temporary RocksDB.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NativeRocksDBState:
    """One subtask's incremental RocksDB state in a checkpoint: where each of its files is stored."""

    sst_files: dict[str, Any]  # name -> shared StateHandle
    other_files: dict[str, Any]  # name -> private StateHandle
    max_parallelism: int
    key_group_range: range

    def shared_handles(self) -> list[Any]:
        return list(self.sst_files.values())


class NativeUploads:
    """Per operator: the SST handles each checkpoint uploaded or referenced, so the next checkpoint can
    reference the files of its base checkpoint. Thread-safe (uploads run on the checkpoint pool)."""

    def __init__(self) -> None:
        self._by_checkpoint: dict[tuple[str, int], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def record(self, operator_id: str, checkpoint_id: int, sst_handles: dict[str, Any]) -> None:
        with self._lock:
            self._by_checkpoint[(operator_id, checkpoint_id)] = dict(sst_handles)
            for key in [k for k in self._by_checkpoint if k[0] == operator_id and k[1] < checkpoint_id - 16]:
                del self._by_checkpoint[key]

    def of(self, operator_id: str, checkpoint_id: int | None) -> dict[str, Any]:
        if checkpoint_id is None:
            return {}
        with self._lock:
            return dict(self._by_checkpoint.get((operator_id, checkpoint_id), {}))


def upload_native(snapshot: Any, storage: Any, checkpoint_id: int, name: str, uploads: NativeUploads,
                  operator_id: str) -> NativeRocksDBState:
    """Store a native checkpoint's files; then delete the local copy."""
    try:
        base = uploads.of(operator_id, snapshot.base_checkpoint_id)
        sst: dict[str, Any] = {}
        for file_name in snapshot.sst_files:
            reused = base.get(file_name) if file_name not in snapshot.new_sst_files else None
            sst[file_name] = reused if reused is not None else storage.write_shared(
                f"{name}-{file_name}", _read(snapshot.directory, file_name))
        other = {
            file_name: storage.write_state(checkpoint_id, f"{name}-{file_name}", _read(snapshot.directory, file_name))
            for file_name in snapshot.other_files
        }
        uploads.record(operator_id, checkpoint_id, sst)
        return NativeRocksDBState(sst, other, snapshot.max_parallelism, snapshot.key_group_range)
    finally:
        snapshot.discard()


def download_native(state: NativeRocksDBState) -> str:
    """A local directory holding the checkpoint's files (the caller removes it once restored)."""
    from fluvial.checkpoint.storage import read_state_handle

    directory = tempfile.mkdtemp(prefix="fluvial-rocksdb-restore-")
    for file_name, handle in {**state.sst_files, **state.other_files}.items():
        with open(os.path.join(directory, file_name), "wb") as out:
            out.write(read_state_handle(handle))
    return directory


def restore_keyed_backend(backend: Any, restore: Any) -> None:
    """Hand a keyed backend what a checkpoint holds for it: canonical snapshots and/or native RocksDB copies."""
    try:
        if restore.native_keyed:
            if hasattr(backend, "restore_native"):
                single = restore.native_base is not None and len(restore.native_keyed) == 1
                backend.restore_native(restore.native_keyed, restore.checkpoint_id if single else None)
            else:
                restore.keyed.extend(_canonical(restore.native_keyed, backend))
        if restore.keyed:
            backend.restore(restore.keyed)
    finally:
        for directory in restore.native_keyed:
            shutil.rmtree(directory, ignore_errors=True)


def _canonical(directories: list[str], backend: Any) -> list[Any]:
    """Native checkpoints read into a temporary RocksDB, then snapshotted by key group (for the heap)."""
    from fluvial.state.rocksdb import RocksDBKeyedStateBackend

    scratch = tempfile.mkdtemp(prefix="fluvial-rocksdb-convert-")
    temporary = RocksDBKeyedStateBackend(backend.max_parallelism, backend.key_group_range,
                                         os.path.join(scratch, "db"), incremental=False)
    try:
        temporary.restore_native(directories)
        return [temporary.snapshot()]
    finally:
        temporary.dispose()
        shutil.rmtree(scratch, ignore_errors=True)


def _read(directory: str, file_name: str) -> bytes:
    with open(os.path.join(directory, file_name), "rb") as source:
        return source.read()
