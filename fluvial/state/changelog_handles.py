"""What a checkpoint of the changelog state backend is made of, and how it comes back (FLIP-158).

A ChangelogStateBackendHandle (Flink's ChangelogStateBackendHandle) is the last materialization — a full snapshot
of the wrapped keyed backend, stored once in the checkpoint storage's shared area and referenced by every
checkpoint until the next materialization — plus the log segments written since it. A segment is the changes one
checkpoint added to the log (Flink's changelog "state change set"), pickled once on the task thread and stored
once, on the first checkpoint I/O thread that needs it, through a StateChangelogStorage (inline in the checkpoint
for `memory`, a file under the DSTL base path for `filesystem`). Later checkpoints refer to the same stored segment,
so a checkpoint uploads only what changed since the one before.

Every stored piece that is a file is listed in `shared_handles()`, so the checkpoint store counts its references
and removes it once no retained checkpoint needs it (the log before a materialization is truncated that way).

A change is four consecutive slots `op, state name, key, argument` of a flat list (a tuple per change would cost
the garbage collector, and pickle, several times more); ops mirror what the wrapped backends store per key: SET
(the key's whole stored value), DELETE, LIST_ADD (one item appended), LIST_ADD_ALL (a list of items appended),
MAP_PUT (a (user key, value) pair put), MAP_PUT_ALL (a dict of entries put), MAP_REMOVE (one user key removed). Replay applies them in order over the restored materialization, per key, and writes the keys
they touched back in one `restore_key_groups` (so TTL layouts and RocksDB's map layout are handled by the backend
itself).
"""

from __future__ import annotations

import pickle
import threading
import time
import zlib
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fluvial.common.errors import UnreadableStateError
from fluvial.common.key_groups import assign_to_key_group
from fluvial.state.backend import KeyedStateSnapshot
from fluvial.state.snapshot import _loads

SET = 0
DELETE = 1
LIST_ADD = 2
LIST_ADD_ALL = 3
MAP_PUT = 4
MAP_PUT_ALL = 5
MAP_REMOVE = 6
SLOTS = 4  # per change in the flat log


class StateChangelogStorage(Protocol):
    """Where log segments are stored (Flink's StateChangelogStorage): `upload` runs on a checkpoint I/O thread and
    returns a state handle the restore's reader reads back (inline bytes, or a file)."""

    def upload(self, name: str, data: bytes) -> Any: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class ChangelogSegmentHandle:
    """One stored log segment: the changes of segment `number` (numbers grow by one per segment)."""

    number: int
    handle: Any  # ByteStreamStateHandle or FileStateHandle
    entries: int
    compressed: bool


@dataclass(frozen=True)
class MaterializedStateHandle:
    """A materialization: the wrapped backend's snapshot handle, pickled and stored in the shared area
    (`handle`), the shared files that handle refers to (RocksDB's SST files), and the first segment number whose
    changes it does not contain."""

    materialization_id: int
    handle: Any
    inner_shared: tuple[Any, ...]
    up_to_segment: int
    size: int


@dataclass(frozen=True)
class ChangelogStateBackendHandle:
    """One subtask's keyed state in a changelog checkpoint: the materialization (None: the state started empty
    and every change is in the segments) and the segments after it, in order."""

    max_parallelism: int
    key_group_range: range
    materialized: MaterializedStateHandle | None
    changes: tuple[ChangelogSegmentHandle, ...]

    def shared_handles(self) -> list[Any]:
        """The stored files this checkpoint refers to (inline pieces own no storage)."""
        handles: list[Any] = []
        if self.materialized is not None:
            handles.append(self.materialized.handle)
            handles.extend(self.materialized.inner_shared)
        handles.extend(segment.handle for segment in self.changes)
        return [handle for handle in handles if hasattr(handle, "path")]

    def next_segment(self) -> int:
        """The number the next segment written after this checkpoint gets."""
        if self.changes:
            return self.changes[-1].number + 1
        return 0 if self.materialized is None else self.materialized.up_to_segment


class PendingSegment:
    """A segment cut from the log at a checkpoint: pickled (and maybe compressed) on the task thread, stored by
    the first checkpoint whose asynchronous part gets to it; later checkpoints reuse the stored handle."""

    __slots__ = ("number", "entries", "_data", "_compressed", "_lock", "stored")

    def __init__(self, number: int, changes: list[Any], kinds: dict[str, str], compress: bool) -> None:
        data = pickle.dumps((kinds, changes), protocol=5)
        self.number = number
        self.entries = len(changes) // SLOTS
        self._compressed = compress
        self._data: bytes | None = zlib.compress(data, 1) if compress else data
        self._lock = threading.Lock()
        self.stored: ChangelogSegmentHandle | None = None

    @staticmethod
    def of_stored(handle: ChangelogSegmentHandle) -> PendingSegment:
        """A segment restored from a checkpoint: already stored."""
        segment = PendingSegment.__new__(PendingSegment)
        segment.number, segment.entries, segment._compressed = handle.number, handle.entries, handle.compressed
        segment._data, segment._lock, segment.stored = None, threading.Lock(), handle
        return segment

    def persist(self, storage: StateChangelogStorage, owner: str) -> int:
        """Store the segment unless it is stored already; the bytes written now (0 when it was)."""
        with self._lock:
            if self.stored is not None:
                return 0
            data = self._data
            assert data is not None
            handle = storage.upload(f"{owner}-changelog-{self.number}", data)
            self.stored = ChangelogSegmentHandle(self.number, handle, self.entries, self._compressed)
            self._data = None
            return len(data)


class _SharedWriter:
    """The StateWriter a materialization writes the wrapped backend's snapshot through: every file goes to the
    shared area (a materialization outlives the checkpoint that first refers to it), and bytes are counted."""

    __slots__ = ("_writer", "_prefix", "written")

    def __init__(self, writer: Any, prefix: str) -> None:
        self._writer = writer
        self._prefix = prefix
        self.written = 0

    def write(self, name: str, data: bytes) -> Any:
        self.written += len(data)
        return self._writer.write_shared(f"{self._prefix}-{name}", data)

    def write_shared(self, name: str, data: bytes) -> Any:
        self.written += len(data)
        return self._writer.write_shared(f"{self._prefix}-{name}", data)


class Materialization:
    """One materialization in flight (Flink's PeriodicMaterializationManager's unit): the wrapped backend's
    pending snapshot, taken on the task thread, stored once by `persist` — on the materialization thread, or on a
    checkpoint I/O thread when a checkpoint cannot do without it (the first one after a restore that rescaled)."""

    __slots__ = ("materialization_id", "up_to_segment", "_pending", "_lock", "result", "error", "started", "duration")

    def __init__(self, materialization_id: int, up_to_segment: int, pending: Any) -> None:
        self.materialization_id = materialization_id
        self.up_to_segment = up_to_segment
        self._pending = pending
        self._lock = threading.Lock()
        self.result: MaterializedStateHandle | None = None
        self.error: BaseException | None = None
        self.started = time.monotonic()
        self.duration = 0.0

    def persist(self, writer: Any, owner: str) -> int:
        """Store the snapshot unless stored already; the bytes written now. Raises what storing raised (and
        keeps it in `error`)."""
        with self._lock:
            if self.result is not None:
                return 0
            if self.error is not None:
                raise self.error
            try:
                shared = _SharedWriter(writer, f"{owner}-materialized-{self.materialization_id}")
                inner = self._pending.write(shared)
                blob = pickle.dumps(inner, protocol=5)
                handle = writer.write_shared(f"{owner}-materialized-{self.materialization_id}", blob)
            except BaseException as error:
                self.error = error
                raise
            self._pending = None
            self.duration = time.monotonic() - self.started
            size = shared.written + len(blob)
            self.result = MaterializedStateHandle(
                self.materialization_id, handle, tuple(inner.shared_handles()), self.up_to_segment, size
            )
            return size

    def discard(self) -> None:
        with self._lock:
            if self.result is None and self._pending is not None:
                self._pending.discard()
                self._pending = None


def load_materialized(materialized: MaterializedStateHandle, reader: Callable[[Any], bytes]) -> Any:
    """The wrapped backend's snapshot handle of a materialization."""
    return _loads(reader(materialized.handle), f"materialization {materialized.materialization_id}")


def load_segment(segment: ChangelogSegmentHandle, reader: Callable[[Any], bytes]) -> tuple[dict[str, str], list[Any]]:
    """(state name -> kind, changes) of a stored segment."""
    data = reader(segment.handle)
    if segment.compressed:
        try:
            data = zlib.decompress(data)
        except zlib.error as error:
            raise UnreadableStateError(f"changelog segment {segment.number} cannot be decompressed: {error}") from None
    kinds, changes = _loads(data, f"changelog segment {segment.number}")
    return kinds, changes


_ABSENT = object()


def restore_with_changelog(
    backend: Any, handles: Sequence[Any], reader: Callable[[Any], bytes], kinds: dict[str, str] | None = None
) -> tuple[list[ChangelogStateBackendHandle], list[Any], int]:
    """Restore `handles` into a plain keyed backend (heap or RocksDB): the materializations of the changelog
    handles among them and every other handle through `backend.restore`, then the changes logged after each
    materialization replayed. This is also how a job restores a changelog checkpoint with the changelog state
    backend turned off (Flink's deactivated changelog). Returns (changelog handles, other handles, changes
    applied)."""
    changelog = [handle for handle in handles if isinstance(handle, ChangelogStateBackendHandle)]
    plain = [handle for handle in handles if not isinstance(handle, ChangelogStateBackendHandle)]
    inner = plain + [load_materialized(h.materialized, reader) for h in changelog if h.materialized is not None]
    if inner:
        backend.restore(inner, reader, None, False)
    applied = 0
    names = {} if kinds is None else kinds
    for handle in changelog:
        segments = (load_segment(segment, reader) for segment in handle.changes)
        applied += replay(backend, segments, backend.key_group_range, backend.max_parallelism, names)
    return changelog, plain, applied


def replay(
    backend: Any,
    segments: Iterable[tuple[dict[str, str], list[Any]]],
    key_group_range: range,
    max_parallelism: int,
    kinds: dict[str, str],
) -> int:
    """Apply logged changes to `backend` (the wrapped backend, its materialization restored), keeping the keys of
    `key_group_range`; the number of changes applied.

    Each touched key's value is computed from the backend's current value and the changes in order, then every
    result is written back at once: SETs through `restore_key_groups` (by key group, as a snapshot would be),
    DELETEs through the state's value table. `kinds` (state name -> kind) is filled with the logged states'."""
    known = set(kinds)
    results: dict[str, dict[Any, Any]] = {}
    groups: dict[Any, int] = {}
    applied = 0
    tables: dict[str, MutableMapping[Any, Any]] = {}
    for segment_kinds, changes in segments:
        new_kinds = {name: kind for name, kind in segment_kinds.items() if name not in known}
        if new_kinds:
            known.update(new_kinds)
            kinds.update(new_kinds)
            backend.restore_key_groups([KeyedStateSnapshot(max_parallelism, {}, dict(new_kinds))])
        slots = iter(changes)
        for op, name, key, argument in zip(slots, slots, slots, slots, strict=True):
            group = groups.get(key)
            if group is None:
                group = groups[key] = assign_to_key_group(key, max_parallelism)
            if group not in key_group_range:
                continue
            applied += 1
            state = results.get(name)
            if state is None:
                state = results[name] = {}
            current = state.get(key, _ABSENT)
            if current is _ABSENT and op not in (SET, DELETE):
                table = tables.get(name)
                if table is None:
                    table = tables[name] = backend.value_table(name)
                current = table.get(key)
            state[key] = _apply(op, current, argument)
    deletions = []
    snapshot: dict[int, dict[str, dict[Any, Any]]] = {}
    for name, entries in results.items():
        for key, value in entries.items():
            if value is None:
                deletions.append((name, key))
            else:
                snapshot.setdefault(groups[key], {}).setdefault(name, {})[key] = value
    if snapshot:
        backend.restore_key_groups([KeyedStateSnapshot(max_parallelism, snapshot, dict(kinds))])
    for name, key in deletions:
        table = tables.get(name)
        if table is None:
            table = tables[name] = backend.value_table(name)
        if key in table:
            del table[key]
    return applied


def _apply(op: int, current: Any, argument: Any) -> Any:
    """The key's stored value after one change (None: no entry). Never mutates `current`, which may be the
    backend's live object."""
    if op == SET:
        return argument
    if op == DELETE:
        return None
    empty = current is None or current is _ABSENT
    if op == LIST_ADD:
        return [argument] if empty else [*current, argument]
    if op == LIST_ADD_ALL:
        return list(argument) if empty else [*current, *argument]
    if op == MAP_PUT or op == MAP_PUT_ALL:
        mapping = {} if empty else dict(current)
        if op == MAP_PUT:
            mapping[argument[0]] = argument[1]
        else:
            mapping.update(argument)
        return mapping
    if op == MAP_REMOVE:
        if empty:
            return None
        mapping = dict(current)
        mapping.pop(argument, None)
        return mapping or None
    raise UnreadableStateError(f"changelog holds an unknown change type {op!r}: it was written by another version")
