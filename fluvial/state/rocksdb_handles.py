"""State handles and raw value tables over RocksDB: the same semantics as the heap handles, on bytes.

Every read unpickles a fresh copy and every write pickles the value, so nothing a caller holds ever aliases the
stored state. The consequence for callers (the one real difference from the heap backend): changing a value in
place after reading it changes only the caller's copy. Write it back - `update`, `put`, `table[k] = v`.

The key bytes of the current key (key group + serialized key) are computed once per distinct key object and
cached on the backend, so several handle calls for one record pay for hashing and pickling the key once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from rocksdict import WriteBatch

from fluvial.datastream.state import AggregatingState, ListState, MapState, ReducingState, ValueState
from fluvial.state.rocksdb_layout import dump_value, load, prefix_end

if TYPE_CHECKING:
    from fluvial.state.rocksdb import RocksDBKeyedStateBackend

_MISSING: Any = object()


class _RocksDBState:
    """Shared by all handles: the backend (for `current_key` and the db), the state id bytes and the name.

    `_sid` is reassigned by the backend when a native restore renumbers the states; nothing else changes it.
    """

    __slots__ = ("_backend", "_sid", "_name")

    def __init__(self, backend: RocksDBKeyedStateBackend, sid: bytes, name: str) -> None:
        self._backend = backend
        self._sid = sid
        self._name = name

    def _db_key(self) -> bytes:
        """key group | state id | serialized current key; StateError outside a keyed context."""
        backend = self._backend
        if backend.current_key is not backend._cached_key:
            backend._cache_key(backend.current_key, self._name)
        return backend._cached_group + self._sid + backend._cached_bytes

    def clear(self) -> None:
        self._backend._delete(self._db_key())


class RocksDBValueState(_RocksDBState, ValueState[Any]):
    __slots__ = ()

    def value(self) -> Any:
        raw = self._backend._get(self._db_key())
        return None if raw is None else load(raw)

    def update(self, value: Any) -> None:
        if value is None:
            self._backend._delete(self._db_key())
        else:
            self._backend._put(self._db_key(), dump_value(value, self._name))


class RocksDBListState(_RocksDBState, ListState[Any]):
    """One pickled list per key: `add` reads, appends and writes the whole list (O(length) per add).

    rocksdict exposes no merge operator, so Flink's append-by-merge is not available; state with long lists per
    key (window contents) should use few, large writes (`add_all`, `update`) rather than many `add`s.
    `get()` returns a fresh list each call.
    """

    __slots__ = ()

    def get(self) -> Iterable[Any]:
        raw = self._backend._get(self._db_key())
        return [] if raw is None else load(raw)

    def add(self, value: Any) -> None:
        self.add_all((value,))

    def add_all(self, values: Iterable[Any]) -> None:
        new = list(values)
        if not new:
            return  # no entry for an empty add, as on the heap
        backend = self._backend
        db_key = self._db_key()
        raw = backend._get(db_key)
        if raw is not None:
            current = load(raw)
            current.extend(new)
            new = current
        backend._put(db_key, dump_value(new, self._name))

    def update(self, values: Iterable[Any]) -> None:
        new = list(values)
        if new:
            self._backend._put(self._db_key(), dump_value(new, self._name))
        else:
            self._backend._delete(self._db_key())


class RocksDBMapState(_RocksDBState, MapState[Any, Any]):
    """One RocksDB entry per user map key (Flink's layout), so `get`/`put` touch one entry, not the whole map.

    User map keys are compared by their serialized bytes (1 and True are different map keys here, unlike in a
    dict). `items()`, `keys()` and `values()` return lists read at the call: changing the map while iterating
    them is safe, and they do not see the change.
    """

    __slots__ = ()

    def _entry_key(self, user_key: Any) -> bytes:
        return self._db_key() + self._backend._serialize(user_key)

    def get(self, key: Any) -> Any:
        raw = self._backend._get(self._entry_key(key))
        return None if raw is None else load(raw)

    def put(self, key: Any, value: Any) -> None:
        self._backend._put(self._entry_key(key), dump_value(value, self._name))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        if not dict_value:
            return
        prefix = self._db_key()
        serialize = self._backend._serialize
        batch = WriteBatch(raw_mode=True)
        for key, value in dict_value.items():
            batch.put(prefix + serialize(key), dump_value(value, self._name))
        self._backend._db.write(batch)

    def remove(self, key: Any) -> None:
        self._backend._delete(self._entry_key(key))

    def contains(self, key: Any) -> bool:
        return self._backend._get(self._entry_key(key)) is not None

    def _entries(self) -> list[tuple[bytes, bytes]]:
        prefix = self._db_key()
        start = len(prefix)
        return [(k[start:], v) for k, v in self._backend._scan(prefix, prefix_end(prefix))]

    def items(self) -> Iterable[tuple[Any, Any]]:
        return [(load(k), load(v)) for k, v in self._entries()]

    def keys(self) -> Iterable[Any]:
        return [load(k) for k, _ in self._entries()]

    def values(self) -> Iterable[Any]:
        return [load(v) for _, v in self._entries()]

    def is_empty(self) -> bool:
        prefix = self._db_key()
        return not self._backend._any(prefix, prefix_end(prefix))

    def clear(self) -> None:
        prefix = self._db_key()
        self._backend._delete_all(prefix, prefix_end(prefix))


class RocksDBReducingState(_RocksDBState, ReducingState[Any]):
    __slots__ = ("_reduce",)

    def __init__(
        self, backend: RocksDBKeyedStateBackend, sid: bytes, name: str, reduce: Callable[[Any, Any], Any]
    ) -> None:
        _RocksDBState.__init__(self, backend, sid, name)
        self._reduce = reduce

    def get(self) -> Any:
        raw = self._backend._get(self._db_key())
        return None if raw is None else load(raw)

    def add(self, value: Any) -> None:
        backend = self._backend
        db_key = self._db_key()
        raw = backend._get(db_key)
        backend._put(db_key, dump_value(value if raw is None else self._reduce(load(raw), value), self._name))


class RocksDBAggregatingState(_RocksDBState, AggregatingState[Any, Any]):
    """Stores the pickled accumulator; `get()` computes the result from it on each call."""

    __slots__ = ("_agg",)

    def __init__(self, backend: RocksDBKeyedStateBackend, sid: bytes, name: str, agg: Any) -> None:
        _RocksDBState.__init__(self, backend, sid, name)
        self._agg = agg

    def get(self) -> Any:
        raw = self._backend._get(self._db_key())
        return None if raw is None else self._agg.get_result(load(raw))

    def add(self, value: Any) -> None:
        backend = self._backend
        db_key = self._db_key()
        raw = backend._get(db_key)
        accumulator = self._agg.create_accumulator() if raw is None else load(raw)
        backend._put(db_key, dump_value(self._agg.add(value, accumulator), self._name))


# ---------------------------------------------------------------------------------------------------------------
# Raw tables for internal operators (`backend.value_table(name)`).


class RocksDBValueTable(MutableMapping[Any, Any]):
    """`key -> value` of one state, backed by RocksDB. A VIEW OF COPIES, NOT A DICT OF LIVE OBJECTS.

    HAZARD: `table[k]` / `table.get(k)` return a freshly unpickled copy. Mutating it in place (appending to a
    list, setting a window in a dict) changes nothing stored until you write it back with `table[k] = value`.
    The heap backend's table is the live dict, so code that forgets the write-back works there and silently
    loses updates here; the contract tests run both backends to catch it.

    Cost: get/set/delete are one RocksDB point operation each (`del` and `pop` add a read, to raise KeyError or
    return the old value). `len()`, iteration, `items()` and `values()` scan the whole state once (one seek per
    key group) and return snapshots taken at the call, so the table may be changed while iterating them.
    """

    __slots__ = ("_backend", "_sid", "_name")

    def __init__(self, backend: RocksDBKeyedStateBackend, sid: bytes, name: str) -> None:
        self._backend = backend
        self._sid = sid
        self._name = name

    def _db_key(self, key: Any) -> bytes:
        backend = self._backend
        if key is not backend._cached_key:
            backend._cache_key(key, self._name)
        return backend._cached_group + self._sid + backend._cached_bytes

    def get(self, key: Any, default: Any = None) -> Any:
        raw = self._backend._get(self._db_key(key))
        return default if raw is None else load(raw)

    def __getitem__(self, key: Any) -> Any:
        raw = self._backend._get(self._db_key(key))
        if raw is None:
            raise KeyError(key)
        return load(raw)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._backend._put(self._db_key(key), dump_value(value, self._name))

    def __delitem__(self, key: Any) -> None:
        db_key = self._db_key(key)
        backend = self._backend
        if backend._get(db_key) is None:
            raise KeyError(key)
        backend._delete(db_key)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        db_key = self._db_key(key)
        backend = self._backend
        raw = backend._get(db_key)
        if raw is None:
            if default is _MISSING:
                raise KeyError(key)
            return default
        backend._delete(db_key)
        return load(raw)

    def __contains__(self, key: object) -> bool:
        return self._backend._get(self._db_key(key)) is not None

    def __iter__(self) -> Iterator[Any]:
        return iter([key for key, _ in self._backend._state_entries(self._sid, values=False)])

    def __len__(self) -> int:
        return sum(1 for _ in self._backend._state_entries(self._sid, values=False))

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return list(self._backend._state_entries(self._sid, values=True))

    def values(self) -> list[Any]:  # type: ignore[override]
        return [value for _, value in self._backend._state_entries(self._sid, values=True)]

    def clear(self) -> None:
        self._backend._clear_state(self._sid)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"


class RocksDBMapKindTable(RocksDBValueTable):
    """`value_table(name)` of a MapState name: each value is the whole user map, as a dict.

    Reading assembles the dict from the key's entries; writing replaces all of them. An empty dict is no
    entry (the heap table would keep `{}`; store only entries that mean "has state", per the contract).
    """

    __slots__ = ()

    def get(self, key: Any, default: Any = None) -> Any:
        mapping = self._read(self._db_key(key))
        return default if mapping is None else mapping

    def __getitem__(self, key: Any) -> Any:
        mapping = self._read(self._db_key(key))
        if mapping is None:
            raise KeyError(key)
        return mapping

    def __setitem__(self, key: Any, value: Any) -> None:
        prefix = self._db_key(key)
        backend = self._backend
        backend._delete_all(prefix, prefix_end(prefix))
        batch = WriteBatch(raw_mode=True)
        for user_key, user_value in dict(value).items():
            batch.put(prefix + backend._serialize(user_key), dump_value(user_value, self._name))
        backend._db.write(batch)

    def __delitem__(self, key: Any) -> None:
        self.pop(key)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        prefix = self._db_key(key)
        mapping = self._read(prefix)
        if mapping is None:
            if default is _MISSING:
                raise KeyError(key)
            return default
        self._backend._delete_all(prefix, prefix_end(prefix))
        return mapping

    def __contains__(self, key: object) -> bool:
        prefix = self._db_key(key)
        return self._backend._any(prefix, prefix_end(prefix))

    def _read(self, prefix: bytes) -> dict[Any, Any] | None:
        start = len(prefix)
        mapping = {load(k[start:]): load(v) for k, v in self._backend._scan(prefix, prefix_end(prefix))}
        return mapping or None
