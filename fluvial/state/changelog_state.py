"""The state handles of the changelog state backend (Flink's ChangelogValueState, ChangelogListState, ...): each
wraps the wrapped backend's handle, answers reads through it, and appends every write to the backend's log as one
change (the ops of `fluvial.state.changelog_handles`). Internal operators' value tables are wrapped the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from fluvial.datastream.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    StateKind,
    ValueState,
)
from fluvial.state.changelog_handles import (
    DELETE,
    LIST_ADD,
    LIST_ADD_ALL,
    MAP_PUT,
    MAP_PUT_ALL,
    MAP_REMOVE,
    SET,
)

if TYPE_CHECKING:
    from fluvial.state.changelog import ChangelogKeyedStateBackend


class LoggedState:
    """Shared by the logged handles: the wrapped handle, the wrapped backend (whose `current_key` is the key), the
    log (a flat list, four slots per change: see `changelog_handles`) and the name. Reads go straight to the
    wrapped handle; a write appends its four slots with one `extend` (no object is made per change, so the log
    costs the garbage collector nothing)."""

    __slots__ = ("_delegate", "_keys", "_log", "_name", "_backend")

    def __init__(self, delegate: Any, backend: ChangelogKeyedStateBackend, name: str) -> None:
        self._delegate = delegate
        self._backend = backend
        self._keys = backend._inner
        self._log = backend._log
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._delegate, attribute)

    def clear(self) -> None:
        self._delegate.clear()
        self._log.extend((DELETE, self._name, self._keys.current_key, None))


class _LoggedValueState(LoggedState, ValueState[Any]):
    __slots__ = ()

    def value(self) -> Any:
        return self._delegate.value()

    def update(self, value: Any) -> None:
        self._delegate.update(value)
        self._log.extend((SET if value is not None else DELETE, self._name, self._keys.current_key, value))


class _LoggedListState(LoggedState, ListState[Any]):
    __slots__ = ()

    def get(self) -> Any:
        return self._delegate.get()

    def add(self, value: Any) -> None:
        self._delegate.add(value)
        self._log.extend((LIST_ADD, self._name, self._keys.current_key, value))

    def add_all(self, values: Iterable[Any]) -> None:
        items = list(values)
        self._delegate.add_all(items)
        if items:
            self._log.extend((LIST_ADD_ALL, self._name, self._keys.current_key, items))

    def update(self, values: Iterable[Any]) -> None:
        items = list(values)
        self._delegate.update(items)
        self._log.extend((SET if items else DELETE, self._name, self._keys.current_key, items or None))


class _LoggedMapState(LoggedState, MapState[Any, Any]):
    __slots__ = ()

    def get(self, key: Any) -> Any:
        return self._delegate.get(key)

    def contains(self, key: Any) -> bool:
        return self._delegate.contains(key)  # type: ignore[no-any-return]

    def items(self) -> Any:
        return self._delegate.items()

    def keys(self) -> Any:
        return self._delegate.keys()

    def values(self) -> Any:
        return self._delegate.values()

    def is_empty(self) -> bool:
        return self._delegate.is_empty()  # type: ignore[no-any-return]

    def put(self, key: Any, value: Any) -> None:
        self._delegate.put(key, value)
        self._log.extend((MAP_PUT, self._name, self._keys.current_key, (key, value)))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        entries = dict(dict_value)
        self._delegate.put_all(entries)
        if entries:
            self._log.extend((MAP_PUT_ALL, self._name, self._keys.current_key, entries))

    def remove(self, key: Any) -> None:
        self._delegate.remove(key)
        self._log.extend((MAP_REMOVE, self._name, self._keys.current_key, key))


class _StoredLogging(LoggedState):
    """Writes logged as the key's whole stored value, read back from the wrapped backend after the write (the
    accumulator of a reducing or aggregating state; the TTL-wrapped value, timestamp included, of a TTL state).
    Put first among a logged handle's bases, its writers replace the handle's own."""

    __slots__ = ()

    def _log_stored(self) -> None:
        key = self._keys.current_key
        stored = self._backend._raw(self._name).get(key)
        self._log.extend((SET if stored is not None else DELETE, self._name, key, stored))

    def update(self, value: Any) -> None:
        self._delegate.update(value)
        self._log_stored()

    def add(self, value: Any) -> None:
        self._delegate.add(value)
        self._log_stored()

    def add_all(self, values: Iterable[Any]) -> None:
        self._delegate.add_all(values)
        self._log_stored()

    def put(self, key: Any, value: Any) -> None:
        self._delegate.put(key, value)
        self._log_stored()

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self._delegate.put_all(dict_value)
        self._log_stored()

    def remove(self, key: Any) -> None:
        self._delegate.remove(key)
        self._log_stored()


class _LoggedReducingState(_StoredLogging, ReducingState[Any]):
    __slots__ = ()

    def get(self) -> Any:
        return self._delegate.get()


class _LoggedAggregatingState(_StoredLogging, AggregatingState[Any, Any]):
    __slots__ = ()

    def get(self) -> Any:
        return self._delegate.get()


class _TtlValueState(_StoredLogging, _LoggedValueState):
    __slots__ = ()


class _TtlListState(_StoredLogging, _LoggedListState):
    __slots__ = ()


class _TtlMapState(_StoredLogging, _LoggedMapState):
    __slots__ = ()


LOGGED: dict[StateKind, type[LoggedState]] = {
    StateKind.VALUE: _LoggedValueState,
    StateKind.LIST: _LoggedListState,
    StateKind.MAP: _LoggedMapState,
    StateKind.REDUCING: _LoggedReducingState,
    StateKind.AGGREGATING: _LoggedAggregatingState,
}
LOGGED_WITH_TTL: dict[StateKind, type[LoggedState]] = {
    StateKind.VALUE: _TtlValueState,
    StateKind.LIST: _TtlListState,
    StateKind.MAP: _TtlMapState,
    StateKind.REDUCING: _LoggedReducingState,
    StateKind.AGGREGATING: _LoggedAggregatingState,
}


class LoggedTable(MutableMapping[Any, Any]):
    """An internal operator's value table whose writes are logged. `get` is the wrapped table's own (reads cost
    nothing more); `log` is the backend's log list (cut in place, never replaced)."""

    def __init__(self, table: MutableMapping[Any, Any], log: list[Any], name: str) -> None:
        self._table = table
        self.log = log
        self._name = name
        self.get = table.get  # type: ignore[method-assign]

    def __getitem__(self, key: Any) -> Any:
        return self._table[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._table[key] = value
        self.log.extend((SET, self._name, key, value))

    def __delitem__(self, key: Any) -> None:
        del self._table[key]
        self.log.extend((DELETE, self._name, key, None))

    def __contains__(self, key: object) -> bool:
        return key in self._table

    def __iter__(self) -> Iterator[Any]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)
