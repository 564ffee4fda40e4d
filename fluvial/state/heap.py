"""Keyed state as Python objects in dicts (Flink's HashMapStateBackend).

Layout - why one flat dict per state name:
key groups are the unit of snapshot and redistribution, not of access. Computing a key's group on every
access (a stable hash, a mix, a modulo) would cost about 30% of a keyed pipeline's throughput, so the hot path
never does it: each state name owns ONE plain dict `key -> value`, and a handle call is a dict lookup on
`backend.current_key`. Key groups are computed only in `snapshot()`, which partitions each dict by key group,
and `restore()`, which keeps the groups this subtask owns. The price is paid once per entry per checkpoint
instead of once per record.

Values are stored as they are: a ListState entry is a Python list appended in place, a MapState entry a dict,
an AggregatingState entry the accumulator itself.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, Iterator

from fluvial.common.errors import StateError
from fluvial.common.key_groups import UPPER_BOUND_MAX_PARALLELISM, assign_to_key_group
from fluvial.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
    StateKind,
    ValueState,
    ValueStateDescriptor,
)
from fluvial.state.backend import NO_KEY, KeyedStateSnapshot

_MISSING: Any = object()

# Values of these types cannot change in place, so a snapshot may share them with the live table.
_IMMUTABLE: frozenset[type] = frozenset({int, float, str, bytes, bool, type(None), complex, frozenset})


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


class _HeapState:
    """Shared by all heap handles: the backend (for `current_key`) and the state's own table."""

    __slots__ = ("_backend", "_table", "_name")

    def __init__(self, backend: "HeapKeyedStateBackend", table: dict, name: str) -> None:
        self._backend = backend
        self._table = table
        self._name = name

    def _key(self) -> Any:
        key = self._backend.current_key
        if key is NO_KEY:
            raise StateError(
                f"keyed state {self._name!r} used outside a keyed context: use it in a function applied to a "
                "KeyedStream (after key_by)"
            )
        return key

    def clear(self) -> None:
        self._table.pop(self._key(), None)


class HeapValueState(_HeapState, ValueState):
    __slots__ = ()

    def value(self) -> Any:
        return self._table.get(self._key())

    def update(self, value: Any) -> None:
        if value is None:
            self._table.pop(self._key(), None)
        else:
            self._table[self._key()] = value


class HeapListState(_HeapState, ListState):
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


class HeapMapState(_HeapState, MapState):
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


class HeapReducingState(_HeapState, ReducingState):
    __slots__ = ("_reduce",)

    def __init__(self, backend: "HeapKeyedStateBackend", table: dict, name: str, reduce: Callable) -> None:
        _HeapState.__init__(self, backend, table, name)
        self._reduce = reduce

    def get(self) -> Any:
        return self._table.get(self._key())

    def add(self, value: Any) -> None:
        key = self._key()
        current = self._table.get(key, _MISSING)
        self._table[key] = value if current is _MISSING else self._reduce(current, value)


class HeapAggregatingState(_HeapState, AggregatingState):
    """Stores the accumulator; `get()` computes the result from it on each call."""

    __slots__ = ("_agg",)

    def __init__(self, backend: "HeapKeyedStateBackend", table: dict, name: str, agg: Any) -> None:
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


def _build_handle(backend: "HeapKeyedStateBackend", descriptor: StateDescriptor, table: dict) -> State:
    name = descriptor.name
    if isinstance(descriptor, ValueStateDescriptor):
        return HeapValueState(backend, table, name)
    if isinstance(descriptor, ListStateDescriptor):
        return HeapListState(backend, table, name)
    if isinstance(descriptor, MapStateDescriptor):
        return HeapMapState(backend, table, name)
    if isinstance(descriptor, ReducingStateDescriptor):
        return HeapReducingState(backend, table, name, descriptor.get_reduce_function().reduce)
    if isinstance(descriptor, AggregatingStateDescriptor):
        return HeapAggregatingState(backend, table, name, descriptor.get_agg_function())
    raise StateError(
        f"state {name!r} has an unknown descriptor type {type(descriptor).__name__}: use a Value-, List-, Map-, "
        "Reducing- or AggregatingStateDescriptor"
    )


class HeapKeyedStateBackend:
    """Keyed state of one subtask, held as Python objects. See the module docstring for the layout.

    `current_key` is a plain attribute the runtime assigns once per record; NO_KEY means "not keyed now".
    """

    __slots__ = ("max_parallelism", "key_group_range", "current_key", "_tables", "_kinds", "_handles", "_disposed")

    def __init__(self, max_parallelism: int, key_group_range: range) -> None:
        if not 1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
            raise StateError(
                f"max parallelism {max_parallelism} is outside 1..{UPPER_BOUND_MAX_PARALLELISM}: "
                "use a value in that range"
            )
        if key_group_range.step != 1 or key_group_range.start < 0 or key_group_range.stop > max_parallelism:
            raise StateError(
                f"key group range {key_group_range} does not fit in range(0, {max_parallelism}): compute it with "
                "key_group_range_for_operator(max_parallelism, parallelism, index)"
            )
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.current_key: Any = NO_KEY
        self._tables: dict[str, dict[Any, Any]] = {}
        self._kinds: dict[str, StateKind] = {}
        self._handles: dict[str, State] = {}
        self._disposed = False

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
        if not isinstance(descriptor, StateDescriptor):
            raise StateError(
                f"get_state needs a state descriptor, got {type(descriptor).__name__}: pass e.g. "
                "ValueStateDescriptor('name')"
            )
        handle = self._handles.get(descriptor.name)
        if handle is not None and self._kinds[descriptor.name] is descriptor.kind:
            return handle
        table = self._register(descriptor.name, descriptor.kind)
        handle = _build_handle(self, descriptor, table)
        self._handles[descriptor.name] = handle
        return handle

    def value_table(self, name: str) -> dict[Any, Any]:
        """The live `key -> value` dict of state `name` (registered as value state when new).

        For internal runtime operators that want zero-overhead `table.get(k)` / `table[k] = v`. Contract: the
        dict is the state itself - it is snapshotted, restored into and cleared with it, and stays the same
        object until `dispose()`. Store only entries that mean "has state" (no placeholder values), and write
        changed values back rather than relying on in-place mutation, so the code also works on backends whose
        table is a serializing view. A name already registered with another kind returns that kind's table.
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

    def snapshot(self) -> KeyedStateSnapshot:
        """Partition every table by key group, with private copies of the values (the synchronous part).

        This loop runs once per entry per checkpoint, so it inlines the int-key case of `assign_to_key_group`
        (murmur fmix32 of the int's hash) and skips the copy call for immutable values.
        """
        max_parallelism = self.max_parallelism
        immutable = _IMMUTABLE
        groups: dict[int, dict[str, dict[Any, Any]]] = {}
        for name, table in self._tables.items():
            buckets: list[dict[Any, Any] | None] = [None] * max_parallelism
            for key, value in table.items():
                if type(key) is int:
                    h = hash(key) & 0xFFFFFFFF
                    h ^= h >> 16
                    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
                    h ^= h >> 13
                    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
                    key_group = (h ^ (h >> 16)) % max_parallelism
                else:
                    key_group = assign_to_key_group(key, max_parallelism)
                entries = buckets[key_group]
                if entries is None:
                    entries = buckets[key_group] = {}
                entries[key] = value if type(value) in immutable else _private_copy(value)
            for key_group, entries in enumerate(buckets):
                if entries is None:
                    continue
                states = groups.get(key_group)
                if states is None:
                    states = groups[key_group] = {}
                states[name] = entries
        kinds = {name: kind.value for name, kind in self._kinds.items()}
        return KeyedStateSnapshot(max_parallelism, groups, kinds)

    def restore(self, snapshots: list[KeyedStateSnapshot]) -> None:
        """Merge in the key groups of `snapshots` that this subtask owns; the others belong to other subtasks.

        Values are copied, so restoring the same snapshot object twice (a test harness, an in-memory
        checkpoint) never lets one backend's changes leak into the snapshot or the other backend.
        """
        for snapshot in snapshots:
            if snapshot.max_parallelism != self.max_parallelism:
                raise StateError(
                    f"cannot restore keyed state taken with max parallelism {snapshot.max_parallelism} into an "
                    f"operator with max parallelism {self.max_parallelism}: max parallelism cannot change between "
                    f"a savepoint and its restore; set_max_parallelism({snapshot.max_parallelism}) on the operator"
                )
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

    def dispose(self) -> None:
        """Drop all state. Handles and value tables become empty; `get_state` afterwards is an error."""
        for table in self._tables.values():
            table.clear()
        self._tables.clear()
        self._kinds.clear()
        self._handles.clear()
        self.current_key = NO_KEY
        self._disposed = True
