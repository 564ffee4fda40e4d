"""Keyed state in an embedded RocksDB (Flink's EmbeddedRocksDBStateBackend), through rocksdict.

One RocksDB database per subtask, in raw bytes mode. The byte layout is in `rocksdb_layout` (key group |
state id | key [| user map key], Flink's), the handles in `rocksdb_handles`, native checkpoints in
`rocksdb_native`. This module is the backend: state registration, the key cache, snapshots and restores.

Differences from the heap backend that callers must know (everything else behaves identically; one contract
test suite runs over both, tests/contract/test_keyed_state_backends.py):
1. Values are pickled on write and unpickled on read, so a value read from a handle or a `value_table` is a
   COPY: mutating it in place changes nothing stored until it is written back. Values must be picklable.
2. Keys (and user map keys) are compared by their serialized bytes, as in Flink: `1`, `1.0` and `True` are
   three different keys here (one on the heap), so key by values of one type.
3. A key must belong to this subtask's key groups (Flink's check): using state for a key of another key group
   raises StateError, because a snapshot of this subtask would not carry it to the right subtask.
4. State TTL is not supported: a descriptor with an enabled StateTtlConfig is a StateError. Restoring a heap
   snapshot of TTL state keeps the values and drops their timestamps (the heap's migration for a state whose
   handle has no TTL).
5. The WAL is off (Flink's choice): durability comes from checkpoints; a crashed database is never reopened,
   the task restores from its last checkpoint.

Snapshots (the seam of `fluvial.state.snapshot`, written in `rocksdb_snapshot`): `snapshot(id, type)` takes
a native checkpoint (memtable flush + hard links, cheap whatever the size) on the task thread; off it, an
incremental checkpoint uploads the SST files that are new since the last confirmed checkpoint, and a savepoint
(or a non-incremental checkpoint) is scanned into the portable by-key-group form shared with the heap backend.
`restore(handles, reader)` takes both forms back, rescaling included (`restore_native` for native files).
`snapshot_key_groups()` scans the live database in memory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rocksdict import AccessType, Checkpoint, Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from fluvial.common.errors import StateError
from fluvial.common.key_groups import assign_to_key_group
from fluvial.datastream.state import (
    State,
    StateDescriptor,
    StateKind,
)
from fluvial.state.backend import NO_KEY, KeyedStateSnapshot, build_state_handle, check_key_groups, no_key_error
from fluvial.state.changelog_handles import ChangelogStateBackendHandle, restore_with_changelog
from fluvial.state.rocksdb_handles import (
    RocksDBAggregatingState,
    RocksDBListState,
    RocksDBMapKindTable,
    RocksDBMapState,
    RocksDBReducingState,
    RocksDBValueState,
    RocksDBValueTable,
)
from fluvial.state.rocksdb_layout import (
    DATA_START,
    MAX_PARALLELISM_KEY,
    MAX_STATE_ID,
    META_PREFIX,
    PREFIX_BYTES,
    STATE_META_PREFIX,
    KeySerializer,
    dump_value,
    key_group_prefix,
    load,
    prefix_end,
    split_key,
    state_id_bytes,
    state_meta_key,
)
from fluvial.state.rocksdb_native import (
    RocksDBSnapshot,
    copy_checkpoint,
    list_checkpoint_files,
    remove_database_directory,
)
from fluvial.state.rocksdb_options import apply_profile
from fluvial.state.rocksdb_snapshot import CanonicalScan, IncrementalUpload, UploadedFiles, download_native
from fluvial.state.snapshot import CANONICAL_HANDLES, IncrementalRocksDBStateHandle, SnapshotType
from fluvial.state.ttl import TtlPolicy, layout_for

__all__ = ["RocksDBKeyedStateBackend", "RocksDBSnapshot"]

_NOTHING: Any = object()  # the key cache's "no key cached"; never NO_KEY, which must always raise
_RESTORE_BATCH = 50_000  # entries per WriteBatch when restoring: bounds the batch's memory


class _DisposedDatabase:
    """Stands in for the database after `dispose()`, so a handle kept past its task fails with a clear error."""

    __slots__ = ()

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise StateError("keyed state used after its RocksDB state backend was disposed: the task has closed")

    get = put = delete = write = _fail

    def __getattr__(self, name: str) -> Any:
        self._fail()


def _open_database(path: str, read_only: bool = False, profile: str = "DEFAULT") -> Rdict:
    """`profile`: the name of a Flink option profile (fluvial.state.rocksdb_options)."""
    options = Options(raw_mode=True)
    apply_profile(options, profile)
    options.create_if_missing(not read_only)
    if read_only:
        return Rdict(path, options, access_type=AccessType.read_only(False))
    db = Rdict(path, options)
    write_options = WriteOptions()
    write_options.disable_wal = True  # type: ignore[method-assign,assignment]  # a property; the stub says method
    db.set_write_options(write_options)
    return db


def _scan(db: Rdict, lower: bytes, upper: bytes, values: bool = True) -> Iterator[Any]:
    """Entries (or keys, when not `values`) of `db` in [lower, upper), in key order.

    A generator on purpose: rocksdict's iterator only borrows the ReadOptions' upper bound, so the options must
    stay alive for the whole iteration (returning the iterator alone lets them be freed, and the scan then runs
    past `upper` - observed, not hypothetical).
    """
    read_options = ReadOptions()
    read_options.set_iterate_upper_bound(upper)
    if values:
        yield from db.items(from_key=lower, read_opt=read_options)
    else:
        yield from db.keys(from_key=lower, read_opt=read_options)


def _read_meta(db: Rdict) -> tuple[int | None, dict[str, tuple[int, StateKind]]]:
    """(max parallelism, state name -> (state id, kind)) as stored in `db`."""
    states: dict[str, tuple[int, StateKind]] = {}
    start = len(STATE_META_PREFIX)
    for key, value in _scan(db, STATE_META_PREFIX, prefix_end(STATE_META_PREFIX)):
        state_id, kind = load(value)
        states[key[start:].decode("utf-8", "surrogatepass")] = (state_id, StateKind(kind))
    raw = db.get(MAX_PARALLELISM_KEY)
    return (None if raw is None else load(raw)), states


def _group_map_entries(pairs: Iterator[tuple[bytes, bytes]], values: bool) -> Iterator[tuple[Any, Any]]:
    """(key, {user key: value}) from the map entries of one state, which arrive grouped by key."""
    prefix: bytes | None = None
    key: Any = None
    mapping: dict[Any, Any] = {}
    for raw_key, raw_value in pairs:
        if prefix is None or not raw_key.startswith(prefix):  # pickles are prefix-free: a new key
            if prefix is not None:
                yield key, mapping
            key, end = split_key(raw_key, PREFIX_BYTES)
            prefix, mapping = raw_key[:end], {}
        if values:
            mapping[load(raw_key[len(prefix) :])] = load(raw_value)
    if prefix is not None:
        yield key, mapping


_ROCKSDB_HANDLES = {
    StateKind.VALUE: RocksDBValueState,
    StateKind.LIST: RocksDBListState,
    StateKind.MAP: RocksDBMapState,
    StateKind.REDUCING: RocksDBReducingState,
    StateKind.AGGREGATING: RocksDBAggregatingState,
}


def scan_key_groups(
    db: Any, max_parallelism: int, by_sid: dict[bytes, tuple[str, StateKind]], kinds: dict[str, str]
) -> KeyedStateSnapshot:
    """Every entry of `db`, decoded and grouped by key group: one ordered scan.

    Entries arrive sorted by (key group, state id, key), so the target dict changes only when the 4-byte
    prefix does. Values are freshly unpickled, hence private to the snapshot.
    """
    groups: dict[int, dict[str, dict[Any, Any]]] = {}
    head = META_PREFIX  # no data key starts with it, so the first entry opens its state
    entries: dict[Any, Any] = {}
    is_map = False
    map_prefix = b""
    mapping: dict[Any, Any] = {}
    for raw_key, raw_value in _scan(db, DATA_START, META_PREFIX):
        if not raw_key.startswith(head):
            head = raw_key[:PREFIX_BYTES]
            name, kind = by_sid[head[2:]]
            is_map = kind is StateKind.MAP
            entries = groups.setdefault(int.from_bytes(head[:2], "big"), {}).setdefault(name, {})
            map_prefix = b""
        if not is_map:
            entries[load(raw_key[PREFIX_BYTES:])] = load(raw_value)
            continue
        if not map_prefix or not raw_key.startswith(map_prefix):
            key, end = split_key(raw_key, PREFIX_BYTES)
            map_prefix = raw_key[:end]
            mapping = entries[key] = {}
        mapping[load(raw_key[len(map_prefix) :])] = load(raw_value)
    return KeyedStateSnapshot(max_parallelism, groups, kinds)


def read_checkpoint_meta(directory: str) -> tuple[int | None, dict[bytes, tuple[str, StateKind]], dict[str, str]]:
    """(max parallelism, state id bytes -> (name, kind), name -> kind value) of a native checkpoint directory."""
    db = _open_database(directory, read_only=True)
    try:
        max_parallelism, states = _read_meta(db)
    finally:
        db.close()
    by_sid = {state_id_bytes(state_id): (name, kind) for name, (state_id, kind) in states.items()}
    return max_parallelism, by_sid, {name: kind.value for name, (_, kind) in states.items()}


def scan_checkpoint(directory: str, max_parallelism: int) -> KeyedStateSnapshot:
    """The canonical form of a native checkpoint directory (opened read-only; it is not modified)."""
    _, by_sid, kinds = read_checkpoint_meta(directory)
    db = _open_database(directory, read_only=True)
    try:
        return scan_key_groups(db, max_parallelism, by_sid, kinds)
    finally:
        db.close()


class RocksDBKeyedStateBackend:
    """Keyed state of one subtask in a RocksDB database at `db_path` (see the module docstring).

    `db_path` is owned by the backend: an old database found there is deleted (a fresh instance per task
    attempt, as in Flink), and `dispose()` deletes the directory. `incremental` makes `checkpoint_native` report
    only the SST files that are new since the last confirmed checkpoint; when False every checkpoint is full.
    """

    __slots__ = (
        "max_parallelism",
        "key_group_range",
        "current_key",
        "db_path",
        "incremental",
        "profile",
        "_db",
        "_get",
        "_put",
        "_delete",
        "_serialize",
        "_group_prefixes",
        "_cached_key",
        "_cached_group",
        "_cached_bytes",
        "_ids",
        "_kinds",
        "_by_sid",
        "_next_id",
        "_handles",
        "_tables",
        "_disposed",
        "_pending",
        "_base_id",
        "_base_sst",
        "_uploads",
    )

    def __init__(
        self,
        max_parallelism: int,
        key_group_range: range,
        db_path: str,
        incremental: bool = True,
        profile: str = "DEFAULT",
    ) -> None:
        check_key_groups(max_parallelism, key_group_range)
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.current_key: Any = NO_KEY
        self.db_path = os.fspath(db_path)
        self.incremental = incremental
        self.profile = profile
        remove_database_directory(self.db_path)
        self._use_database(_open_database(self.db_path, profile=profile))
        self._db.put(MAX_PARALLELISM_KEY, dump_value(max_parallelism, "meta"))
        self._serialize = KeySerializer()
        self._group_prefixes = [key_group_prefix(group) for group in range(max_parallelism)]
        self._cached_key: Any = _NOTHING
        self._cached_group = b""
        self._cached_bytes = b""
        self._ids: dict[str, bytes] = {}  # state name -> state id bytes
        self._kinds: dict[str, StateKind] = {}
        self._by_sid: dict[bytes, tuple[str, StateKind]] = {}
        self._next_id = 0
        self._handles: dict[str, State] = {}
        self._tables: dict[str, RocksDBValueTable] = {}
        self._disposed = False
        self._pending: dict[int, frozenset[str]] = {}  # checkpoint id -> its SST names, until confirmed
        self._base_id: int | None = None  # the confirmed checkpoint new SST files are counted against
        self._base_sst: frozenset[str] = frozenset()
        self._uploads = UploadedFiles()

    def _use_database(self, db: Any) -> None:
        """Make `db` the database; handles call the bound `_get`/`_put`/`_delete` (a pyo3 method lookup per
        call costs as much as a third of a point read)."""
        self._db = db
        self._get = db.get
        self._put = db.put
        self._delete = db.delete

    # -- keys and registration ------------------------------------------------------------------------------

    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    def _cache_key(self, key: Any, state_name: str) -> None:
        """Compute and cache the key group prefix and bytes of `key` (called once per distinct key object)."""
        if key is NO_KEY:
            raise no_key_error(state_name)
        if type(key) is int:  # assign_to_key_group inlined for the common key type (murmur fmix32 of hash)
            h = hash(key) & 0xFFFFFFFF
            h ^= h >> 16
            h = (h * 0x85EBCA6B) & 0xFFFFFFFF
            h ^= h >> 13
            h = (h * 0xC2B2AE35) & 0xFFFFFFFF
            key_group = (h ^ (h >> 16)) % self.max_parallelism
        else:
            key_group = assign_to_key_group(key, self.max_parallelism)
        if key_group not in self.key_group_range:
            raise StateError(
                f"keyed state {state_name!r} used for key {key!r} of key group {key_group}, which this subtask "
                f"does not own (it owns {self.key_group_range}): only keys routed here by key_by have state here"
            )
        self._cached_group = self._group_prefixes[key_group]
        self._cached_bytes = self._serialize(key)
        self._cached_key = key  # last: a failure above leaves the previous cache intact

    def _register(self, name: str, kind: StateKind) -> bytes:
        """The state id of `name`, registered (and stored in the db's meta) on first use."""
        if self._disposed:
            raise StateError(f"state {name!r} requested from a disposed state backend: the task has closed")
        known = self._kinds.get(name)
        if known is None:
            if self._next_id > MAX_STATE_ID:
                raise StateError(
                    f"state {name!r} would be state number {self._next_id + 1} of one operator; RocksDB state "
                    f"allows {MAX_STATE_ID + 1}: use fewer state names"
                )
            self._add_state(name, kind, self._next_id)
            return self._ids[name]
        if known is not kind:
            raise StateError(
                f"state {name!r} is already registered as {known.value} state and cannot also be {kind.value} "
                "state: give each state descriptor its own name"
            )
        return self._ids[name]

    def _add_state(self, name: str, kind: StateKind, state_id: int) -> None:
        sid = state_id_bytes(state_id)
        self._db.put(state_meta_key(name), dump_value((state_id, kind.value), "meta"))
        self._ids[name] = sid
        self._kinds[name] = kind
        self._by_sid[sid] = (name, kind)
        self._next_id = max(self._next_id, state_id + 1)

    def get_state(self, descriptor: StateDescriptor) -> State:
        """The handle for `descriptor`: the same handle for the same name; StateError for another kind or TTL."""
        if not isinstance(descriptor, StateDescriptor):
            raise StateError(
                f"get_state needs a state descriptor, got {type(descriptor).__name__}: pass e.g. "
                "ValueStateDescriptor('name')"
            )
        name = descriptor.name
        if TtlPolicy.of(descriptor) is not None:
            raise StateError(
                f"state {name!r} enables time-to-live, which the RocksDB state backend does not support: use "
                "HashMapStateBackend for state with TTL, or remove enable_time_to_live from its descriptor"
            )
        handle = self._handles.get(name)
        if handle is not None and self._kinds[name] is descriptor.kind:
            return handle
        sid = self._register(name, descriptor.kind)
        handle = self._build_handle(descriptor, sid)
        self._handles[name] = handle
        return handle

    def _build_handle(self, descriptor: StateDescriptor, sid: bytes) -> State:
        return build_state_handle(descriptor, _ROCKSDB_HANDLES, self, sid)

    def value_table(self, name: str) -> RocksDBValueTable:
        """A `key -> value` MutableMapping over state `name` (registered as value state when new).

        NOT THE LIVE STATE: every read returns an unpickled copy, so ALWAYS write a changed value back
        (`table[k] = v`); in-place mutation without the write-back is lost. See RocksDBValueTable for costs.
        Returns the same object for the same name until `dispose()`. For a MapState name, each value is the
        key's whole user map as a dict.
        """
        table = self._tables.get(name)
        if table is None:
            kind = self._kinds.get(name, StateKind.VALUE)
            sid = self._register(name, kind)
            table_type = RocksDBMapKindTable if kind is StateKind.MAP else RocksDBValueTable
            table = self._tables[name] = table_type(self, sid, name)
        return table

    # -- iteration -------------------------------------------------------------------------------------------

    def _scan(self, lower: bytes, upper: bytes) -> Any:
        return _scan(self._db, lower, upper)

    def _any(self, lower: bytes, upper: bytes) -> bool:
        for _ in _scan(self._db, lower, upper, values=False):
            return True
        return False

    def _delete_all(self, lower: bytes, upper: bytes) -> None:
        """Point-delete every entry in [lower, upper) (Flink clears map state the same way, not by range
        tombstones, which would slow every later read of the range)."""
        batch = WriteBatch(raw_mode=True)
        for key in _scan(self._db, lower, upper, values=False):
            batch.delete(key)
        if len(batch):
            self._db.write(batch)

    def _state_entries(self, sid: bytes, values: bool) -> Iterator[tuple[Any, Any]]:
        """(key, value) of one state in key group order; values are None when not `values`."""
        is_map = self._by_sid[sid][1] is StateKind.MAP
        for key_group in self.key_group_range:
            lower = key_group_prefix(key_group) + sid
            upper = prefix_end(lower)
            if is_map:
                yield from _group_map_entries(_scan(self._db, lower, upper), values)
            elif values:
                for raw_key, raw_value in _scan(self._db, lower, upper):
                    yield load(raw_key[PREFIX_BYTES:]), load(raw_value)
            else:
                for raw_key in _scan(self._db, lower, upper, values=False):
                    yield load(raw_key[PREFIX_BYTES:]), None

    def _clear_state(self, sid: bytes) -> None:
        for key_group in self.key_group_range:
            lower = key_group_prefix(key_group) + sid
            self._delete_all(lower, prefix_end(lower))

    def keys(self, state_name: str) -> Iterator[Any]:
        """Keys with an entry in `state_name`, read first so the caller may change state while iterating."""
        sid = self._ids.get(state_name)
        if sid is None:
            return iter(())
        return iter([key for key, _ in self._state_entries(sid, values=False)])

    def apply_to_all_keys(self, descriptor: StateDescriptor, function: Callable[[Any, State], None]) -> None:
        """`function(key, handle)` for each key of `descriptor`'s state; `current_key` is restored afterwards."""
        handle = self.get_state(descriptor)
        previous = self.current_key
        try:
            for key in self.keys(descriptor.name):
                self.current_key = key
                function(key, handle)
        finally:
            self.current_key = previous

    # -- full snapshots (portable, shared with the heap backend) -------------------------------------------

    # -- checkpoints (the seam of fluvial.state.snapshot) -------------------------------------------------

    def snapshot(self, checkpoint_id: int, snapshot_type: SnapshotType = SnapshotType.CHECKPOINT) -> Any:
        """The synchronous part: a native checkpoint (hard links). An incremental backend's checkpoint uploads
        its new files; a savepoint, or any checkpoint of a non-incremental backend, is scanned into canonical
        form off the task thread."""
        incremental = self.incremental and snapshot_type is SnapshotType.CHECKPOINT
        native = self.checkpoint_native(checkpoint_id, f"{self.db_path}.chk-{checkpoint_id}", as_base=incremental)
        return IncrementalUpload(native, self._uploads) if incremental else CanonicalScan(native)

    def restore(
        self,
        handles: Sequence[Any],
        reader: Callable[[Any], bytes],
        checkpoint_id: int | None = None,
        owned: bool = False,
    ) -> None:
        """Restore from canonical and native handles. A native checkpoint of this job's own (`owned`) with exactly
        this subtask's key groups becomes the base of the next incremental checkpoint; any other is copied in
        and the next checkpoint uploads everything (Flink's NO_CLAIM: never build on files the job does not own).
        A changelog checkpoint restores with its log replayed."""
        if any(isinstance(handle, ChangelogStateBackendHandle) for handle in handles):
            restore_with_changelog(self, handles, reader)
            return
        natives = [h for h in handles if isinstance(h, IncrementalRocksDBStateHandle)]
        canonical = [h.to_snapshot(self.key_group_range) for h in handles if isinstance(h, CANONICAL_HANDLES)]
        if natives:
            directories = [download_native(handle, reader) for handle in natives]
            try:
                as_base = (
                    owned
                    and checkpoint_id is not None
                    and len(natives) == 1
                    and natives[0].key_group_range == self.key_group_range
                )
                self.restore_native(directories, checkpoint_id if as_base else None)
                if as_base and checkpoint_id is not None:
                    self._uploads.record(checkpoint_id, natives[0].sst_files)
            finally:
                for directory in directories:
                    shutil.rmtree(directory, ignore_errors=True)
        if canonical:
            self.restore_key_groups(canonical)

    def snapshot_key_groups(self) -> KeyedStateSnapshot:
        """Every entry, decoded and grouped by key group: one ordered scan of the live database (on the task
        thread; checkpoints scan a native checkpoint off it instead, see `snapshot`)."""
        kinds = {name: kind.value for name, kind in self._kinds.items()}
        return scan_key_groups(self._db, self.max_parallelism, self._by_sid, kinds)

    def restore_key_groups(self, snapshots: list[KeyedStateSnapshot]) -> None:
        """Write in the key groups of `snapshots` that this subtask owns (heap or RocksDB snapshots alike).

        A key's entry replaces any entry it already has, as on the heap (for a map: the whole user map).
        Keys are not re-hashed: each entry goes to the key group the snapshot filed it under.
        """
        for snapshot in snapshots:
            if snapshot.max_parallelism != self.max_parallelism:
                raise StateError(
                    f"cannot restore keyed state taken with max parallelism {snapshot.max_parallelism} into an "
                    f"operator with max parallelism {self.max_parallelism}: max parallelism cannot change between "
                    f"a savepoint and its restore; set_max_parallelism({snapshot.max_parallelism}) on the operator"
                )
        replace_maps = self._any(DATA_START, META_PREFIX)  # a fresh backend has no old map entries to replace
        for snapshot in snapshots:
            for name, kind in snapshot.state_kinds.items():
                self._register(name, StateKind(kind))
            batch = WriteBatch(raw_mode=True)
            for key_group, states in snapshot.key_groups.items():
                if key_group not in self.key_group_range:
                    continue
                for name, entries in states.items():
                    batch = self._restore_entries(
                        batch, key_group_prefix(key_group) + self._ids[name], name, entries, replace_maps
                    )
            self._db.write(batch)

    def _restore_entries(
        self, batch: WriteBatch, prefix: bytes, name: str, entries: dict[str, Any], replace_maps: bool
    ) -> WriteBatch:
        """Add one state's entries of one key group to `batch`; returns the batch to go on with (a full batch is
        written and replaced, bounding its memory)."""
        kind = self._kinds[name]
        layout = layout_for(kind)
        unwrap = False
        for value in entries.values():  # one entry tells: a backend writes one state in one layout
            unwrap = bool(layout.is_wrapped(value))
            break
        serialize = self._serialize
        for key, value in entries.items():
            if unwrap:
                value = layout.to_plain(value)
            db_key = prefix + serialize(key)
            if kind is StateKind.MAP:
                if replace_maps:
                    self._delete_all(db_key, prefix_end(db_key))
                for user_key, user_value in value.items():
                    batch.put(db_key + serialize(user_key), dump_value(user_value, name))
            else:
                batch.put(db_key, dump_value(value, name))
            if len(batch) >= _RESTORE_BATCH:
                self._db.write(batch)
                batch = WriteBatch(raw_mode=True)
        return batch

    # -- native checkpoints (incremental) --------------------------------------------------------------------

    def checkpoint_native(self, checkpoint_id: int, target_dir: str, as_base: bool = True) -> RocksDBSnapshot:
        """The synchronous part of a native checkpoint: flush the memtable, then hard-link a RocksDB checkpoint
        into `target_dir` (which must not exist; RocksDB creates it). Milliseconds, whatever the state size.

        Uploading `files_to_upload()` is the asynchronous part (see `rocksdb_native`). The returned snapshot
        is diffed against the last checkpoint confirmed with `notify_checkpoint_complete`.
        """
        if self._disposed:
            raise StateError(f"checkpoint {checkpoint_id} requested from a disposed RocksDB state backend")
        target_dir = os.fspath(target_dir)
        if os.path.exists(target_dir):
            raise StateError(
                f"checkpoint directory {target_dir!r} already exists: RocksDB creates it, so pass a new path per "
                "checkpoint"
            )
        os.makedirs(os.path.dirname(os.path.abspath(target_dir)), exist_ok=True)
        self._db.flush(True)  # so the SST files hold everything; with the WAL off the memtable would be lost
        Checkpoint(self._db).create_checkpoint(target_dir)
        sst_files, other_files = list_checkpoint_files(target_dir)
        if self.incremental and self._base_id is not None:
            base_id, new = self._base_id, [name for name in sst_files if name not in self._base_sst]
        else:
            base_id, new = None, list(sst_files)
        if as_base:  # once confirmed complete, the next incremental checkpoint diffs against it
            self._pending[checkpoint_id] = frozenset(sst_files)
        return RocksDBSnapshot(
            checkpoint_id, target_dir, sst_files, other_files, new, base_id, self.max_parallelism, self.key_group_range
        )

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint `checkpoint_id` is complete (all its files stored): later checkpoints reuse its SST files.

        Older pending checkpoints are subsumed, as in Flink. An id this backend did not take is ignored.
        """
        files = self._pending.get(checkpoint_id)
        if files is None:
            return
        self._base_id, self._base_sst = checkpoint_id, files
        for pending in [p for p in self._pending if p <= checkpoint_id]:
            del self._pending[pending]

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Forget a checkpoint that will never complete; it never becomes a base."""
        self._pending.pop(checkpoint_id, None)

    def restore_native(self, snapshot_dirs: str | Sequence[str], checkpoint_id: int | None = None) -> None:
        """Open the database from native checkpoint directories (local copies; they are not modified).

        Steps (Flink's rescaling restore of RocksDB):
        1. the first directory is copied into `db_path` (SST files hard-linked) and opened as the database;
        2. key groups outside `key_group_range` are dropped with two range deletions (scale out: each new
           subtask keeps its share of one old database);
        3. every further directory (scale in: several old subtasks) is opened read-only and its entries in
           `key_group_range` are copied in, with state ids renumbered by state name;
        4. states registered before this call keep their handles (re-pointed at the restored ids).
        With `checkpoint_id`, the restored SST files become the base of the next incremental checkpoint (they
        are stored already); without it the next checkpoint uploads everything. The backend must hold no
        state yet (a native restore replaces the database).
        """
        directories = (
            [os.fspath(snapshot_dirs)]
            if isinstance(snapshot_dirs, (str, os.PathLike))
            else [os.fspath(d) for d in snapshot_dirs]
        )
        if not directories:
            raise StateError("restore_native needs at least one checkpoint directory")
        if self._disposed:
            raise StateError("restore_native called on a disposed RocksDB state backend: the task has closed")
        if self._any(DATA_START, META_PREFIX):
            raise StateError(
                "restore_native replaces the database, but this backend already holds keyed state: restore "
                "before the first record"
            )
        self._db.close()
        remove_database_directory(self.db_path)
        copy_checkpoint(directories[0], self.db_path)
        self._use_database(_open_database(self.db_path, profile=self.profile))
        max_parallelism, restored = _read_meta(self._db)
        self._check_max_parallelism(max_parallelism, directories[0])
        if self.key_group_range.start > 0:
            self._db.delete_range(DATA_START, key_group_prefix(self.key_group_range.start))
        self._db.delete_range(key_group_prefix(self.key_group_range.stop), META_PREFIX)
        self._adopt_states(restored)
        for directory in directories[1:]:
            self._ingest(directory)
        self._pending.clear()
        if checkpoint_id is None:
            self._base_id, self._base_sst = None, frozenset()
        else:
            self._base_id, self._base_sst = checkpoint_id, frozenset(list_checkpoint_files(directories[0])[0])

    def _check_max_parallelism(self, restored: int | None, directory: str) -> None:
        if restored != self.max_parallelism:
            raise StateError(
                f"cannot restore the RocksDB checkpoint in {directory!r} (max parallelism {restored}) into an "
                f"operator with max parallelism {self.max_parallelism}: max parallelism cannot change between a "
                "checkpoint and its restore"
            )

    def _adopt_states(self, restored: dict[str, tuple[int, StateKind]]) -> None:
        """Make the restored registrations this backend's, keeping states registered before the restore."""
        earlier = dict(self._kinds)
        self._ids.clear()
        self._kinds.clear()
        self._by_sid.clear()
        self._next_id = 0
        for name, (state_id, kind) in restored.items():
            if name in earlier and earlier[name] is not kind:
                raise StateError(
                    f"state {name!r} is already registered as {earlier[name].value} state and cannot also be "
                    f"{kind.value} state: give each state descriptor its own name"
                )
            self._add_state(name, kind, state_id)
        for name, kind in earlier.items():
            self._register(name, kind)
        for name, handle in self._handles.items():
            handle._sid = self._ids[name]  # type: ignore[attr-defined]
        for name, table in self._tables.items():
            table._sid = self._ids[name]

    def _ingest(self, directory: str) -> None:
        """Copy this subtask's key groups from another old subtask's checkpoint, renumbering state ids."""
        source = _open_database(directory, read_only=True)
        try:
            max_parallelism, states = _read_meta(source)
            self._check_max_parallelism(max_parallelism, directory)
            renumber = {
                state_id_bytes(state_id): self._register(name, kind) for name, (state_id, kind) in states.items()
            }
            batch = WriteBatch(raw_mode=True)
            lower = key_group_prefix(self.key_group_range.start)
            for raw_key, raw_value in _scan(source, lower, key_group_prefix(self.key_group_range.stop)):
                batch.put(raw_key[:2] + renumber[raw_key[2:PREFIX_BYTES]] + raw_key[PREFIX_BYTES:], raw_value)
                if len(batch) >= _RESTORE_BATCH:
                    self._db.write(batch)
                    batch = WriteBatch(raw_mode=True)
            self._db.write(batch)
        finally:
            source.close()

    # -- lifecycle -------------------------------------------------------------------------------------------

    def dispose(self) -> None:
        """Close and delete the database. Handles and tables raise StateError afterwards; so does `get_state`."""
        if not self._disposed:
            self._db.close()
            remove_database_directory(self.db_path)
        self._use_database(_DisposedDatabase())
        self._ids.clear()
        self._kinds.clear()
        self._by_sid.clear()
        self._handles.clear()
        self._tables.clear()
        self._pending.clear()
        self.current_key = NO_KEY
        self._cached_key = _NOTHING
        self._disposed = True
