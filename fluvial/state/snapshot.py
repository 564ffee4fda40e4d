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

Three handle kinds exist, and every backend restores each (state moves between backends through a savepoint,
or a checkpoint restored as one):
- KeyGroupsStateHandle: the canonical form, every key group pickled on its own (protocol 5), so a subtask
  restoring a share of it unpickles only its own key groups. Savepoints are always in this form.
- KeyedTablesStateHandle: the heap's checkpoint form, each state's table pickled whole, in chunks. Writing it
  costs C-speed pickling only; partitioning by key group — a Python loop over every entry, the bulk of the old
  cost — moves to restore, and only a restore into a key-group range that does not cover the handle's
  (rescaling) pays it. Checkpoints are taken often and restored rarely.
- IncrementalRocksDBStateHandle: the files of a native RocksDB checkpoint, new SST files in the shared
  directory (referenced by later checkpoints), the rest private to the checkpoint.
"""

from __future__ import annotations

import enum
import itertools
import pickle
from dataclasses import dataclass
from typing import Any, Protocol

from fluvial.common.errors import UnreadableStateError
from fluvial.common.key_groups import assign_to_key_group
from fluvial.state.backend import KeyedStateSnapshot

TABLE_CHUNK_ENTRIES = 8192
"""Entries per pickled chunk of a KeyedTablesStateHandle. Pickle's memo (every object it has seen) makes one
pickle of millions of entries several times slower than many small ones; 8K entries keep the memo in cache."""


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
    def of(snapshot: KeyedStateSnapshot, key_group_range: range) -> KeyGroupsStateHandle:
        dumps = pickle.dumps
        groups = {group: dumps(states, protocol=5) for group, states in snapshot.key_groups.items()}
        return KeyGroupsStateHandle(snapshot.max_parallelism, key_group_range, dict(snapshot.state_kinds), groups)

    def to_snapshot(self, key_group_range: range | None = None) -> KeyedStateSnapshot:
        """The key groups of `key_group_range` (all by default), unpickled: only those are paid for."""
        groups = {
            group: _loads(data, f"key group {group}")
            for group, data in self.key_groups.items()
            if key_group_range is None or group in key_group_range
        }
        return KeyedStateSnapshot(self.max_parallelism, groups, dict(self.state_kinds))

    def shared_handles(self) -> list[Any]:
        return []


@dataclass(frozen=True)
class KeyedTablesStateHandle:
    """Keyed state of one subtask as whole tables: `tables` maps a state name to the protocol-5 pickles of its
    `{key: value}` entries, TABLE_CHUNK_ENTRIES at a time. Inline bytes, like KeyGroupsStateHandle."""

    max_parallelism: int
    key_group_range: range
    state_kinds: dict[str, str]
    tables: dict[str, list[bytes]]

    @staticmethod
    def of(
        max_parallelism: int, key_group_range: range, state_kinds: dict[str, str], tables: dict[str, dict[Any, Any]]
    ) -> KeyedTablesStateHandle:
        return KeyedTablesStateHandle(
            max_parallelism,
            key_group_range,
            dict(state_kinds),
            {name: _pickle_chunks(table) for name, table in tables.items()},
        )

    def covered_by(self, key_group_range: range) -> bool:
        """Whether every key group of this handle lies in `key_group_range` (then every entry belongs there)."""
        own = self.key_group_range
        return len(own) == 0 or (own.start in key_group_range and own[-1] in key_group_range)

    def load_tables(self, key_group_range: range | None = None) -> dict[str, dict[Any, Any]]:
        """Every table, unpickled (fresh objects: nobody else holds them); only the entries of
        `key_group_range` when given and it does not cover this handle's range (rescaling)."""
        tables: dict[str, dict[Any, Any]] = {}
        for name, chunks in self.tables.items():
            table = tables[name] = {}
            for chunk in chunks:
                table.update(_loads(chunk, f"state '{name}'"))
        if key_group_range is None or self.covered_by(key_group_range):
            return tables
        wanted = set(key_group_range)
        mp = self.max_parallelism
        return {
            name: {
                key: value for (key, value), group in zip(table.items(), key_groups_of(table, mp)) if group in wanted
            }
            for name, table in tables.items()
        }

    def to_snapshot(self, key_group_range: range | None = None) -> KeyedStateSnapshot:
        """The key groups of `key_group_range` (all by default): every entry is unpickled and partitioned."""
        snapshot = partition_by_key_group(self.load_tables(), self.max_parallelism, self.state_kinds)
        return snapshot if key_group_range is None else snapshot.select(key_group_range)

    def shared_handles(self) -> list[Any]:
        return []


CANONICAL_HANDLES = (KeyGroupsStateHandle, KeyedTablesStateHandle)
"""The handle kinds that hold pickled entries (rather than native files): each has `to_snapshot(range)`."""


def _loads(data: bytes, what: str) -> Any:
    """Unpickle restored keyed state; UnreadableStateError naming `what` when that is impossible."""
    try:
        return pickle.loads(data)
    except Exception as error:  # noqa: BLE001 - any unpickling failure means the same: the state is unusable
        raise UnreadableStateError(
            f"keyed state ({what}) cannot be unpickled ({type(error).__name__}: {error}): it is damaged, or was "
            "pickled by code this program no longer has (a renamed or removed class)"
        ) from error


def _pickle_chunks(table: dict[Any, Any]) -> list[bytes]:
    entries = iter(table.items())
    chunks: list[bytes] = []
    dumps, islice = pickle.dumps, itertools.islice
    while True:
        chunk = dict(islice(entries, TABLE_CHUNK_ENTRIES))
        if not chunk:
            return chunks
        chunks.append(dumps(chunk, protocol=5))


def key_groups_of(keys: Any, max_parallelism: int) -> list[int]:
    """The key group of each key, in order. This loop runs once per entry of a state, so it inlines the int-key
    case of `assign_to_key_group` (murmur fmix32 of the int's hash)."""
    groups: list[int] = []
    append = groups.append
    for key in keys:
        if type(key) is int:
            h = hash(key) & 0xFFFFFFFF
            h ^= h >> 16
            h = (h * 0x85EBCA6B) & 0xFFFFFFFF
            h ^= h >> 13
            h = (h * 0xC2B2AE35) & 0xFFFFFFFF
            append((h ^ (h >> 16)) % max_parallelism)
        else:
            append(assign_to_key_group(key, max_parallelism))
    return groups


def partition_by_key_group(
    tables: dict[str, dict[Any, Any]], max_parallelism: int, state_kinds: dict[str, str]
) -> KeyedStateSnapshot:
    """Tables split by key group (the canonical in-memory form)."""
    groups: dict[int, dict[str, dict[Any, Any]]] = {}
    for name, table in tables.items():
        buckets: list[dict[Any, Any] | None] = [None] * max_parallelism
        for (key, value), key_group in zip(table.items(), key_groups_of(table, max_parallelism)):
            entries = buckets[key_group]
            if entries is None:
                entries = buckets[key_group] = {}
            entries[key] = value
        for key_group, entries in enumerate(buckets):
            if entries is None:
                continue
            states = groups.get(key_group)
            if states is None:
                states = groups[key_group] = {}
            states[name] = entries
    return KeyedStateSnapshot(max_parallelism, groups, dict(state_kinds))


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
