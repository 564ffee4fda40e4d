"""Keyed state as Python objects in dicts (Flink's HashMapStateBackend).

Layout - why one flat dict per state name:
key groups are the unit of snapshot and redistribution, not of access. Computing a key's group on every
access (a stable hash, a mix, a modulo) would cost about 30% of a keyed pipeline's throughput, so the hot path
never does it: each state name owns ONE plain dict `key -> value`, and a handle call is a dict lookup on
`backend.current_key`. A checkpoint pickles each frozen dict whole, in chunks (KeyedTablesStateHandle); key
groups are computed only for a savepoint (the canonical by-key-group form) and at a restore that rescales,
which keeps the groups this subtask owns. A restore at the same parallelism computes none.

Values are stored as they are: a ListState entry is a Python list appended in place, a MapState entry a dict,
an AggregatingState entry the accumulator itself. A state whose descriptor enables TTL stores its values
wrapped with their last-access time and gets the TTL handles of `fluvial.state.heap_ttl`; every other state keeps
the plain handles below, untouched by TTL.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, Generic, TypeVar

from fluvial.common.errors import StateError
from fluvial.common.time import current_millis
from fluvial.datastream.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    State,
    StateDescriptor,
    StateKind,
    ValueState,
)
from fluvial.state.backend import (
    NO_KEY,
    KeyedStateSnapshot,
    StateReader,
    build_state_handle,
    check_key_groups,
    no_key_error,
)
from fluvial.state.changelog_handles import ChangelogStateBackendHandle, restore_with_changelog
from fluvial.state.heap_snapshot import FrozenHeapState
from fluvial.state.heap_ttl import IncrementalCleanup, build_ttl_handle
from fluvial.state.snapshot import (
    CANONICAL_HANDLES,
    KeyedTablesStateHandle,
    SnapshotType,
)
from fluvial.state.ttl import TtlPolicy, TtlValue, layout_for

_MISSING: Any = object()
S = TypeVar("S")  # what a heap state stores per key: the value, a list, a dict, an accumulator

# Values of these types cannot change in place, so a snapshot may share them with the live table.
_IMMUTABLE: frozenset[type] = frozenset({int, float, str, bytes, bool, type(None), complex, frozenset})

# What a TTL table's snapshot copy holds: fresh objects made for the snapshot, so they need no further copy.
_FRESH_TTL_COPIES: frozenset[type] = frozenset({TtlValue, list, dict})


def _private_copy(value: Any) -> Any:
    """A copy of `value` that in-place changes to the live state cannot reach.

    Cheap checks first: immutable scalars are shared, flat lists/dicts/tuples of them are copied shallowly
    (ListState, MapState and [sum, count]-style accumulators); only anything else pays for `deepcopy`.
    """
    t = type(value)
    if t in _IMMUTABLE:
        return value
    if t is list:
        for element in value:
            if type(element) not in _IMMUTABLE:
                return copy.deepcopy(value)
        return value.copy()
    if t is dict:
        for element in value.values():
            if type(element) not in _IMMUTABLE:
                return copy.deepcopy(value)
        return value.copy()
    if t is tuple:
        for element in value:
            if type(element) not in _IMMUTABLE:
                return copy.deepcopy(value)
        return value
    return copy.deepcopy(value)


class _HeapState(Generic[S]):
    """Shared by all heap handles: the backend (for `current_key`) and the state's own table."""

    __slots__ = ("_backend", "_table", "_name")

    def __init__(self, backend: HeapKeyedStateBackend, table: dict[Any, S], name: str) -> None:
        self._backend = backend
        self._table = table
        self._name = name

    def _key(self) -> Any:
        key = self._backend.current_key
        if key is NO_KEY:
            raise no_key_error(self._name)
        return key

    def clear(self) -> None:
        self._table.pop(self._key(), None)


class HeapValueState(_HeapState[Any], ValueState[Any]):
    __slots__ = ()

    def value(self) -> Any:
        return self._table.get(self._key())

    def update(self, value: Any) -> None:
        if value is None:
            self._table.pop(self._key(), None)
        else:
            self._table[self._key()] = value


class HeapListState(_HeapState[list[Any]], ListState[Any]):
    """`get()` returns the live list (no copy per read): iterate it, do not keep or mutate it."""

    __slots__ = ()

    def get(self) -> Iterable[Any]:
        return self._table.get(self._key(), [])

    def add(self, value: Any) -> None:
        key = self._key()
        values = self._table.get(key)
        if values is None:
            self._table[key] = [value]
        else:
            values.append(value)

    def add_all(self, values: Iterable[Any]) -> None:
        key = self._key()
        new = list(values)
        if not new:
            return
        current = self._table.get(key)
        if current is None:
            self._table[key] = new
        else:
            current.extend(new)

    def update(self, values: Iterable[Any]) -> None:
        key = self._key()
        new = list(values)  # a copy: the caller's list must not alias the state
        if new:
            self._table[key] = new
        else:
            self._table.pop(key, None)


class HeapMapState(_HeapState[dict[Any, Any]], MapState[Any, Any]):
    """Views returned by items()/keys()/values() are live: do not change the map while iterating them."""

    __slots__ = ()

    def get(self, key: Any) -> Any:
        mapping = self._table.get(self._key())
        return None if mapping is None else mapping.get(key)

    def put(self, key: Any, value: Any) -> None:
        current = self._key()
        mapping = self._table.get(current)
        if mapping is None:
            self._table[current] = {key: value}
        else:
            mapping[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        if not dict_value:
            return
        current = self._key()
        mapping = self._table.get(current)
        if mapping is None:
            self._table[current] = dict(dict_value)
        else:
            mapping.update(dict_value)

    def remove(self, key: Any) -> None:
        current = self._key()
        mapping = self._table.get(current)
        if mapping is not None:
            mapping.pop(key, None)
            if not mapping:  # an empty map is no entry, so it leaves keys() and snapshots
                del self._table[current]

    def contains(self, key: Any) -> bool:
        mapping = self._table.get(self._key())
        return mapping is not None and key in mapping

    def items(self) -> Iterable[tuple[Any, Any]]:
        return self._table.get(self._key(), {}).items()

    def keys(self) -> Iterable[Any]:
        return self._table.get(self._key(), {}).keys()

    def values(self) -> Iterable[Any]:
        return self._table.get(self._key(), {}).values()

    def is_empty(self) -> bool:
        return not self._table.get(self._key())


class HeapReducingState(_HeapState[Any], ReducingState[Any]):
    __slots__ = ("_reduce",)

    def __init__(
        self, backend: HeapKeyedStateBackend, table: dict[Any, Any], name: str, reduce: Callable[[Any, Any], Any]
    ) -> None:
        _HeapState.__init__(self, backend, table, name)
        self._reduce = reduce

    def get(self) -> Any:
        return self._table.get(self._key())

    def add(self, value: Any) -> None:
        key = self._key()
        current = self._table.get(key, _MISSING)
        self._table[key] = value if current is _MISSING else self._reduce(current, value)


class HeapAggregatingState(_HeapState[Any], AggregatingState[Any, Any]):
    """Stores the accumulator; `get()` computes the result from it on each call."""

    __slots__ = ("_agg",)

    def __init__(self, backend: HeapKeyedStateBackend, table: dict[Any, Any], name: str, agg: Any) -> None:
        _HeapState.__init__(self, backend, table, name)
        self._agg = agg

    def get(self) -> Any:
        accumulator = self._table.get(self._key(), _MISSING)
        return None if accumulator is _MISSING else self._agg.get_result(accumulator)

    def add(self, value: Any) -> None:
        key = self._key()
        accumulator = self._table.get(key, _MISSING)
        if accumulator is _MISSING:
            accumulator = self._agg.create_accumulator()
        self._table[key] = self._agg.add(value, accumulator)


_HEAP_HANDLES = {
    StateKind.VALUE: HeapValueState,
    StateKind.LIST: HeapListState,
    StateKind.MAP: HeapMapState,
    StateKind.REDUCING: HeapReducingState,
    StateKind.AGGREGATING: HeapAggregatingState,
}


def _build_handle(backend: HeapKeyedStateBackend, descriptor: StateDescriptor, table: dict[Any, Any]) -> State:
    return build_state_handle(descriptor, _HEAP_HANDLES, backend, table)


def _describe_ttl(policy: TtlPolicy | None) -> str:
    return "without TTL" if policy is None else f"with a TTL of {policy.ttl} ms ({policy})"


class HeapKeyedStateBackend:
    """Keyed state of one subtask, held as Python objects. See the module docstring for the layout.

    `current_key` is a plain attribute the runtime assigns once per record; NO_KEY means "not keyed now".
    `ttl_clock` is the processing-time clock (ms) of state TTL, read on each access to a TTL state; tests
    assign a manual one.
    """

    __slots__ = (
        "max_parallelism",
        "key_group_range",
        "current_key",
        "ttl_clock",
        "_tables",
        "_kinds",
        "_handles",
        "_disposed",
        "_ttl",
        "_ttl_layout",
        "_cleanups",
        "_record_cleanups",
    )

    def __init__(
        self, max_parallelism: int, key_group_range: range, ttl_clock: Callable[[], int] = current_millis
    ) -> None:
        check_key_groups(max_parallelism, key_group_range)
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.current_key: Any = NO_KEY
        self._tables: dict[str, dict[Any, Any]] = {}
        self._kinds: dict[str, StateKind] = {}
        self._handles: dict[str, State] = {}
        self._disposed = False
        self.ttl_clock = ttl_clock
        self._ttl: dict[str, TtlPolicy] = {}  # names whose handle has TTL
        self._ttl_layout: set[str] = set()  # names whose table holds TtlValues (TTL handles, restored TTL state)
        self._cleanups: dict[str, IncrementalCleanup] = {}
        self._record_cleanups: list[IncrementalCleanup] = []  # also run whenever current_key changes

    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    def _register(self, name: str, kind: StateKind) -> dict[Any, Any]:
        """The table of `name`, created on first use; StateError when `name` already holds another kind."""
        if self._disposed:
            raise StateError(f"state {name!r} requested from a disposed state backend: the task has closed")
        known = self._kinds.get(name)
        if known is None:
            self._kinds[name] = kind
            return self._tables.setdefault(name, {})
        if known is not kind:
            raise StateError(
                f"state {name!r} is already registered as {known.value} state and cannot also be {kind.value} "
                "state: give each state descriptor its own name"
            )
        return self._tables[name]

    def get_state(self, descriptor: StateDescriptor) -> State:
        """The handle for `descriptor`; with an enabled TTL config, a TTL handle (see `fluvial.state.heap_ttl`).

        One name has one TTL policy for the life of the backend: asking again with another TTL config is a
        StateError. A table restored with the other TTL setting is migrated once, here, as Flink 2 does: values
        that gain TTL start their clock now, values that lose it drop their timestamps.
        """
        if not isinstance(descriptor, StateDescriptor):
            raise StateError(
                f"get_state needs a state descriptor, got {type(descriptor).__name__}: pass e.g. "
                "ValueStateDescriptor('name')"
            )
        name = descriptor.name
        handle = self._handles.get(name)
        if handle is not None and self._kinds[name] is descriptor.kind:
            if descriptor.ttl_config is not None or name in self._ttl:
                self._check_same_ttl(name, TtlPolicy.of(descriptor))
            return handle
        policy = TtlPolicy.of(descriptor)
        table = self._register(name, descriptor.kind)
        if (name in self._ttl_layout) is not (policy is not None):
            self._migrate_ttl_layout(name, policy is not None)
        if policy is None:
            handle = _build_handle(self, descriptor, table)
        else:
            handle = build_ttl_handle(self, descriptor, table, policy, self._incremental_cleanup(name, table, policy))
            self._ttl[name] = policy
        self._handles[name] = handle
        return handle

    def _check_same_ttl(self, name: str, policy: TtlPolicy | None) -> None:
        known = self._ttl.get(name)
        if policy != known:
            raise StateError(
                f"state {name!r} is already registered {_describe_ttl(known)} and cannot also be used "
                f"{_describe_ttl(policy)}: use the same StateTtlConfig for every descriptor of one state name"
            )

    def _incremental_cleanup(self, name: str, table: dict[Any, Any], policy: TtlPolicy) -> IncrementalCleanup | None:
        if not policy.incremental_cleanup_size:
            return None
        cleanup = IncrementalCleanup(table, layout_for(self._kinds[name]), policy.ttl, policy.incremental_cleanup_size)
        self._cleanups[name] = cleanup
        if policy.cleanup_for_every_record:
            self._record_cleanups.append(cleanup)
            if type(self) is HeapKeyedStateBackend:
                self.__class__ = _HeapBackendWithRecordCleanup
        return cleanup

    def _migrate_ttl_layout(self, name: str, wrapped: bool) -> None:
        """Put every entry of `name` into the TTL layout (`wrapped`) or out of it. Idempotent per entry."""
        table = self._tables[name]
        layout = layout_for(self._kinds[name])
        if wrapped:
            now = self.ttl_clock()
            for key, stored in table.items():  # replacing values (not keys) while iterating is safe
                table[key] = layout.to_wrapped(stored, now)
            self._ttl_layout.add(name)
        else:
            for key, stored in table.items():
                table[key] = layout.to_plain(stored)
            self._ttl_layout.discard(name)

    def value_table(self, name: str) -> dict[Any, Any]:
        """The live `key -> value` dict of state `name` (registered as value state when new).

        For internal runtime operators that want zero-overhead `table.get(k)` / `table[k] = v`. Contract: the
        dict is the state itself - it is snapshotted, restored into and cleared with it, and stays the same
        object until `dispose()`. Store only entries that mean "has state" (no placeholder values), and write
        changed values back rather than relying on in-place mutation, so the code also works on backends whose
        table is a serializing view. A name already registered with another kind returns that kind's table.
        The table of a state with TTL holds TtlValue-wrapped values (see `fluvial.state.ttl`): internal operators
        keep tables of their own names, without TTL.
        """
        table = self._tables.get(name)
        if table is None:
            table = self._register(name, StateKind.VALUE)
        return table

    def keys(self, state_name: str) -> Iterator[Any]:
        """Keys with an entry in `state_name`, copied first so the caller may change state while iterating."""
        return iter(list(self._tables.get(state_name, ())))

    def apply_to_all_keys(self, descriptor: StateDescriptor, function: Callable[[Any, State], None]) -> None:
        """`function(key, handle)` for each key of `descriptor`'s state; `current_key` is restored afterwards."""
        handle = self.get_state(descriptor)
        previous = self.current_key
        try:
            for key in list(self._tables[descriptor.name]):
                self.current_key = key
                function(key, handle)
        finally:
            self.current_key = previous

    # -- checkpoints (the seam of fluvial.state.snapshot) --------------------------------------------------------

    def snapshot(self, checkpoint_id: int, snapshot_type: SnapshotType = SnapshotType.CHECKPOINT) -> FrozenHeapState:
        """The synchronous part: `freeze()`. A checkpoint is written as whole tables, a savepoint in the canonical
        by-key-group form."""
        frozen = self.freeze()
        frozen.by_key_group = snapshot_type is SnapshotType.SAVEPOINT
        return frozen

    def restore(
        self, handles: Sequence[Any], reader: StateReader, checkpoint_id: int | None = None, owned: bool = False
    ) -> None:
        """Restore from the keyed state handles of any number of old subtasks (heap tables, canonical or native
        RocksDB), keeping the key groups of this subtask's range. Tables whose key groups all lie in that range
        (a restore at the same parallelism) are taken whole, without computing a single key group, and no table
        entry is copied (it was just unpickled). A changelog checkpoint restores with its log replayed."""
        if any(isinstance(handle, ChangelogStateBackendHandle) for handle in handles):
            restore_with_changelog(self, handles, reader)
            return
        snapshots = []
        for handle in handles:
            if isinstance(handle, KeyedTablesStateHandle):
                self._check_max_parallelism(handle.max_parallelism)
                self._restore_tables(handle.state_kinds, handle.load_tables(self.key_group_range))
            elif isinstance(handle, CANONICAL_HANDLES):
                snapshots.append(handle.to_snapshot(self.key_group_range))
            else:
                from fluvial.state.rocksdb_snapshot import native_to_key_groups

                snapshots.append(native_to_key_groups(handle, reader, self.key_group_range))
        if snapshots:
            self.restore_key_groups(snapshots)

    def _restore_tables(self, state_kinds: dict[str, str], tables: dict[str, dict[Any, Any]]) -> None:
        """Merge in tables whose entries all belong to this subtask; they are fresh objects (just unpickled), so
        no copy is needed."""
        for name, kind in state_kinds.items():
            self._register(name, StateKind(kind))
        restored_ttl: dict[str, set[bool]] = {}
        for name, entries in tables.items():
            self._tables[name].update(entries)
            self._note_layout(name, entries, restored_ttl)
        self._after_restore(restored_ttl)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Nothing to do: every heap checkpoint is complete in itself."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Nothing to do: an aborted heap checkpoint leaves nothing behind in the backend."""

    def snapshot_key_groups(self) -> KeyedStateSnapshot:
        """Private copies of every table, partitioned by key group, in memory: `freeze()` then partition."""
        return self.freeze().to_snapshot()

    def freeze(self) -> FrozenHeapState:
        """The synchronous part of a checkpoint: copies that later changes to live state cannot reach, at C
        speed where values are immutable (a dict copy per table). Partitioning by key group — the per-entry
        hashing — is left to `FrozenHeapState.to_snapshot()`, which the asynchronous part runs off the task
        thread. TTL tables are copied with their timestamps (expiry survives a restore), leaving out expired
        values when their config asks for `cleanup_full_snapshot`."""
        now = self.ttl_clock() if self._ttl_layout else 0
        tables: dict[str, dict[Any, Any]] = {}
        for name, table in self._tables.items():
            if name in self._ttl_layout:
                tables[name] = self._ttl_snapshot_copy(name, table, now)
                continue
            frozen = dict(table)
            if not _all_immutable(frozen):
                for key, value in frozen.items():
                    if type(value) not in _IMMUTABLE:
                        frozen[key] = _private_copy(value)
            tables[name] = frozen
        kinds = {name: kind.value for name, kind in self._kinds.items()}
        return FrozenHeapState(self.max_parallelism, self.key_group_range, tables, kinds)

    def _ttl_snapshot_copy(self, name: str, table: dict[Any, Any], now: int) -> dict[Any, Any]:
        layout = layout_for(self._kinds[name])
        policy = self._ttl.get(name)  # None: restored TTL state no handle has claimed yet; keep it all
        copy = _private_copy
        if policy is None or not policy.cleanup_in_full_snapshot:
            return {key: layout.private_copy(stored, copy) for key, stored in table.items()}
        ttl = policy.ttl
        unexpired = layout.unexpired
        entries = {}
        for key, stored in table.items():
            kept = unexpired(stored, ttl, now)
            if kept is not None:
                entries[key] = layout.private_copy(kept, copy)
        return entries

    def restore_key_groups(self, snapshots: list[KeyedStateSnapshot]) -> None:
        """Merge in the key groups of `snapshots` that this subtask owns; the others belong to other subtasks.

        Values are copied, so restoring the same snapshot object twice (a test harness, an in-memory
        checkpoint) never lets one backend's changes leak into the snapshot or the other backend.
        """
        for snapshot in snapshots:
            self._check_max_parallelism(snapshot.max_parallelism)
        restored_ttl: dict[str, set[bool]] = {}  # name -> whether its restored entries carry TTL timestamps
        for snapshot in snapshots:
            for name, kind in snapshot.state_kinds.items():
                self._register(name, StateKind(kind))
            for key_group, states in snapshot.key_groups.items():
                if key_group not in self.key_group_range:
                    continue
                for name, entries in states.items():
                    table = self._tables[name]
                    for key, value in entries.items():
                        table[key] = _private_copy(value)
                    self._note_layout(name, entries, restored_ttl)
        self._after_restore(restored_ttl)

    def _check_max_parallelism(self, max_parallelism: int) -> None:
        if max_parallelism != self.max_parallelism:
            raise StateError(
                f"cannot restore keyed state taken with max parallelism {max_parallelism} into an "
                f"operator with max parallelism {self.max_parallelism}: max parallelism cannot change between "
                f"a savepoint and its restore; set_max_parallelism({max_parallelism}) on the operator"
            )

    def _note_layout(self, name: str, entries: dict[Any, Any], restored_ttl: dict[str, set[bool]]) -> None:
        """Whether restored `entries` of `name` carry TTL timestamps: one entry tells, since a backend writes a
        state in one layout."""
        for value in entries.values():
            wrapped = layout_for(self._kinds[name]).is_wrapped(value)
            if wrapped is not None:
                restored_ttl.setdefault(name, set()).add(wrapped)
            return

    def _after_restore(self, restored_ttl: dict[str, set[bool]]) -> None:
        self._conform_restored_ttl(restored_ttl)
        for cleanup in self._cleanups.values():
            cleanup.reset()  # restored values may be older than what a cleanup has seen

    def _conform_restored_ttl(self, restored_ttl: dict[str, set[bool]]) -> None:
        """Give each restored table one layout: its handle's if it has one, else (no handle yet) TTL when any
        restored entry had TTL, so timestamps survive until `get_state` decides."""
        for name, flags in restored_ttl.items():
            wrapped = (name in self._ttl) if name in self._handles else (True in flags)
            if flags == {wrapped} and (name in self._ttl_layout) is wrapped:
                continue  # the common case: everything already agrees
            self._migrate_ttl_layout(name, wrapped)

    def dispose(self) -> None:
        """Drop all state. Handles and value tables become empty; `get_state` afterwards is an error."""
        for table in self._tables.values():
            table.clear()
        self._tables.clear()
        self._kinds.clear()
        self._handles.clear()
        self._ttl.clear()
        self._ttl_layout.clear()
        self._cleanups.clear()
        self._record_cleanups.clear()
        self.current_key = NO_KEY
        self._disposed = True


_CURRENT_KEY_SLOT = HeapKeyedStateBackend.__dict__["current_key"]  # the slot's member descriptor


class _HeapBackendWithRecordCleanup(HeapKeyedStateBackend):
    """The backend once a TTL state asks for `cleanup_incrementally(n, run_cleanup_for_every_record=True)`.

    Why a class swap: the runtime assigns `backend.current_key` once per record and that must stay one plain
    slot store for every other job. `get_state` swaps `__class__` (same slots, so the swap is legal) to this
    subclass, whose `current_key` property runs the per-record cleanups on each assignment of a key - per
    record and per timer, as Flink's key-selection listener does.
    """

    __slots__ = ()

    @property
    def current_key(self) -> Any:
        return _CURRENT_KEY_SLOT.__get__(self, HeapKeyedStateBackend)

    @current_key.setter
    def current_key(self, key: Any) -> None:
        _CURRENT_KEY_SLOT.__set__(self, key)
        if key is not NO_KEY:
            now = self.ttl_clock()
            for cleanup in self._record_cleanups:
                cleanup.run(now)


def _all_immutable(table: dict[Any, Any]) -> bool:
    """Whether no value of `table` can change in place, checked at C speed: values of immutable types, or
    tuples of them only (a keyed reduce's tuples)."""
    types = set(map(type, table.values()))
    if types <= _IMMUTABLE:
        return True
    return types == {tuple} and set(map(type, chain.from_iterable(table.values()))) <= _IMMUTABLE
