"""Native RocksDB checkpoints: what one is made of, how it is diffed against the last one, how it is copied back.

A RocksDB checkpoint is a directory holding hard links to the database's SST files plus copies of the small
files that describe them (MANIFEST-*, CURRENT, OPTIONS-*, an empty WAL, rocksdict-config.json). SST files are
immutable and named by a file number that one database lineage never reuses, so two checkpoints of one
lineage that list the same SST name hold the same bytes. That is what makes a checkpoint incremental: only SST
files the storage does not already hold need uploading (Flink's incremental RocksDB checkpoints).

Protocol between the backend and the runtime (DESIGN 2.3, synchronous then asynchronous part):
1. synchronous, on the task thread: `backend.checkpoint_native(id, dir)` flushes the memtable and creates the
   checkpoint (hard links: milliseconds, whatever the state size) and returns a RocksDBSnapshot;
2. asynchronous, anywhere: upload `snapshot.files_to_upload()` (the new SST files and every non-SST file);
   reference `snapshot.reused_sst_files` from the base checkpoint's upload; then `snapshot.discard()`;
3. when the checkpoint completes: `backend.notify_checkpoint_complete(id)` makes it the base of the next diff.
   An unconfirmed checkpoint never becomes a base, so a failed upload cannot make a later checkpoint reference
   files that were never stored.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from fluvial.common.errors import StateError


@dataclass(frozen=True, slots=True)
class RocksDBSnapshot:
    """One native checkpoint of a RocksDB keyed backend, in `directory` (owned by the caller from now on).

    - `sst_files`: every SST file of the checkpoint, name -> size in bytes;
    - `other_files`: every other file (MANIFEST, CURRENT, OPTIONS, WAL, rocksdict config): always uploaded;
    - `new_sst_files`: the SST files not in the base checkpoint (all of them when the backend is not
      incremental or has no confirmed base yet), sorted;
    - `base_checkpoint_id`: the confirmed checkpoint the diff is against (None: no base, a full upload).

    Hazard: SST names are unique within one database lineage only. Two restores of one checkpoint (two failover
    attempts, two subtasks after rescaling) each write their own `000123.sst` with different content. Store an
    uploaded file under a path unique to its upload and resolve a reused file through the base checkpoint's
    handles, never by bare name across lineages.
    """

    checkpoint_id: int
    directory: str
    sst_files: dict[str, int]
    other_files: list[str]
    new_sst_files: list[str]
    base_checkpoint_id: int | None
    max_parallelism: int
    key_group_range: range

    @property
    def reused_sst_files(self) -> list[str]:
        """SST files already uploaded with the base checkpoint: reference them, do not upload them."""
        new = set(self.new_sst_files)
        return sorted(name for name in self.sst_files if name not in new)

    @property
    def total_sst_bytes(self) -> int:
        return sum(self.sst_files.values())

    @property
    def new_sst_bytes(self) -> int:
        return sum(self.sst_files[name] for name in self.new_sst_files)

    def files_to_upload(self) -> list[str]:
        """Names (relative to `directory`) the asynchronous part must upload: new SSTs and all non-SST files."""
        return [*self.new_sst_files, *self.other_files]

    def discard(self) -> None:
        """Delete the local checkpoint directory (after the upload, or when the checkpoint is aborted)."""
        shutil.rmtree(self.directory, ignore_errors=True)


def list_checkpoint_files(directory: str) -> tuple[dict[str, int], list[str]]:
    """(SST name -> size, sorted other file names) of a checkpoint directory."""
    sst: dict[str, int] = {}
    other: list[str] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if not entry.is_file():
                continue
            if entry.name.endswith(".sst"):
                sst[entry.name] = entry.stat().st_size
            else:
                other.append(entry.name)
    return dict(sorted(sst.items())), sorted(other)


def copy_checkpoint(source: str, target: str) -> None:
    """Make `target` a private copy of checkpoint directory `source`, which is left untouched.

    SST files are hard-linked (immutable, so sharing an inode is safe; falls back to a copy across file
    systems); every other file is copied, because the database opened on `target` writes its own MANIFEST,
    CURRENT and WAL files and must never write through a link into `source`.
    """
    os.makedirs(target)
    with os.scandir(source) as entries:
        for entry in entries:
            if not entry.is_file():
                continue
            destination = os.path.join(target, entry.name)
            if entry.name.endswith(".sst"):
                try:
                    os.link(entry.path, destination)
                    continue
                except OSError:
                    pass
            shutil.copy2(entry.path, destination)


def remove_database_directory(path: str) -> None:
    """Remove a previous instance's database at `path` before a new one is created there.

    Refuses a non-empty directory that is not a RocksDB database, so a mistyped path cannot delete user data.
    """
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        raise StateError(f"RocksDB state directory {path!r} is a file: pass a directory path for the database")
    names = os.listdir(path)
    if names and "CURRENT" not in names:
        raise StateError(
            f"RocksDB state directory {path!r} is not empty and holds no RocksDB database: give each backend "
            "its own new or empty directory (the backend deletes an old database there, nothing else)"
        )
    shutil.rmtree(path)
