"""The checkpoint seam of keyed state (Flink's SnapshotStrategy): how a backend's state leaves it, and comes back.

Every keyed backend owns both halves of its snapshot (DESIGN 2.3):
1. synchronous, on the task thread: `backend.snapshot(checkpoint_id, snapshot_type)` freezes the state as
   cheaply as the backend can (the heap copies its tables; RocksDB hard-links a native checkpoint) and returns a
   PendingKeyedSnapshot. Nothing it returns changes when processing goes on.
2. asynchronous, on a checkpoint I/O thread: `pending.write(writer)` serializes and stores what was frozen
   through the StateWriter and returns a KeyedStateHandle — a picklable description of where the state is.
   `pending.discard()` instead, when the checkpoint was abandoned before its asynchronous part ran.
3. restore, on the task thread before the first record: `backend.restore(handles)` with the handles of any
   number of old subtasks; the backend keeps the key groups of its own range (this is how rescaling works).
Handles are self-describing (their files carry their own location and checksum), so restoring needs no writer.

Two handle kinds exist, and every backend restores both (state moves between backends through a savepoint):
- KeyGroupsStateHandle: the canonical form, every key group pickled on its own (protocol 5), so a subtask
  restoring a share of it unpickles only its own key groups. Savepoints are always in this form.
- IncrementalRocksDBStateHandle: the files of a native RocksDB checkpoint, new SST files in the shared
  directory (referenced by later checkpoints), the rest private to the checkpoint.
"""

from __future__ import annotations

import enum
import pickle
from dataclasses import dataclass
from typing import Any, Protocol

from fluvial.state.backend import KeyedStateSnapshot


class SnapshotType(enum.Enum):
    CHECKPOINT = "checkpoint"  # the backend's fastest form (incremental where it can)
    SAVEPOINT = "savepoint"  # canonical and self-contained: it must outlive the job and move between backends


class StateWriter(Protocol):
    """Where one operator of one subtask writes its state for one checkpoint (off the task thread)."""

    def write(self, name: str, data: bytes) -> Any:
        """Store `data` privately for this checkpoint; returns its state handle."""
        ...

    def write_shared(self, name: str, data: bytes) -> Any:
        """Store `data` where later checkpoints may refer to it (reference-counted); returns its handle."""
        ...


class KeyedStateHandle(Protocol):
    max_parallelism: int
    key_group_range: range

    def shared_handles(self) -> list[Any]:
        """The handles of shared files this state refers to (registered with the checkpoint store)."""
        ...


class PendingKeyedSnapshot(Protocol):
    def write(self, writer: StateWriter) -> KeyedStateHandle: ...

    def discard(self) -> None: ...


@dataclass(frozen=True)
class KeyGroupsStateHandle:
    """Canonical keyed state: `key_groups` maps a key group to the protocol-5 pickle of {state: {key: value}}.
    The bytes are inline: the whole handle is stored as one blob by the checkpointer."""

    max_parallelism: int
    key_group_range: range
    state_kinds: dict[str, str]
    key_groups: dict[int, bytes]

    @staticmethod
    def of(snapshot: KeyedStateSnapshot, key_group_range: range) -> "KeyGroupsStateHandle":
        dumps = pickle.dumps
        groups = {group: dumps(states, protocol=5) for group, states in snapshot.key_groups.items()}
        return KeyGroupsStateHandle(snapshot.max_parallelism, key_group_range, dict(snapshot.state_kinds), groups)

    def to_snapshot(self, key_group_range: range | None = None) -> KeyedStateSnapshot:
        """The key groups of `key_group_range` (all by default), unpickled: only those are paid for."""
        loads = pickle.loads
        groups = {group: loads(data) for group, data in self.key_groups.items()
                  if key_group_range is None or group in key_group_range}
        return KeyedStateSnapshot(self.max_parallelism, groups, dict(self.state_kinds))

    def shared_handles(self) -> list[Any]:
        return []


@dataclass(frozen=True)
class IncrementalRocksDBStateHandle:
    """One subtask's native RocksDB checkpoint: where each of its files is stored."""

    sst_files: dict[str, Any]  # name -> shared StateHandle
    other_files: dict[str, Any]  # name -> private StateHandle
    max_parallelism: int
    key_group_range: range

    def shared_handles(self) -> list[Any]:
        return list(self.sst_files.values())


class WrittenSnapshot:
    """A PendingKeyedSnapshot whose form is ready on the task thread already (used where freezing and writing
    are one step, e.g. a backend with no state to write off-thread)."""

    __slots__ = ("_handle",)

    def __init__(self, handle: KeyedStateHandle) -> None:
        self._handle = handle

    def write(self, writer: StateWriter) -> KeyedStateHandle:
        return self._handle

    def discard(self) -> None:
        pass
