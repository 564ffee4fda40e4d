"""Keyed state scoped to a namespace (a window) as well as a key: what triggers (`get_partitioned_state`) and
ProcessWindowFunction's `window_state()` use, and where window contents live.

Each state name is one table in the keyed backend, `key -> {namespace: value}`, so snapshots partition it by
the user's key (the key group stays the key's) and a key's windows travel together when rescaled. The store's
`namespace` is set by the window operator before each use, as the backend's current key is.

Every change writes the key's cell back (`table[key] = cell`): on the heap that is one dict store, and on
RocksDB, whose tables hand out copies, it is what makes the change persist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

from fluvial.common.errors import StateError
from fluvial.datastream import state as s

if TYPE_CHECKING:
    from fluvial.state.backend import KeyedStateBackend

_TABLE_PREFIX = "window:"


class NamespacedStateStore:
    def __init__(self, backend: KeyedStateBackend) -> None:
        self.backend = backend
        self.namespace: Any = None
        self._handles: dict[str, Any] = {}
        self._kinds: dict[str, s.StateKind] = {}

    def table(self, name: str) -> MutableMapping[Any, dict[Any, Any]]:
        """key -> {namespace: value} for a state name: on the heap a dict whose cells are live, on RocksDB a
        table handing out copies."""
        return self.backend.value_table(_TABLE_PREFIX + name)

    def cell(self, name: str) -> dict[Any, Any] | None:
        """The current key's {namespace: value} map for a state name (write it back after changing it)."""
        return self.table(name).get(self.backend.current_key)

    def _write_back(self, name: str, cell: dict[Any, Any]) -> None:
        table, key = self.table(name), self.backend.current_key
        if cell:
            table[key] = cell
        else:
            table.pop(key, None)

    def get(self, name: str, default: Any = None) -> Any:
        cell = self.cell(name)
        return default if cell is None else cell.get(self.namespace, default)

    def put(self, name: str, value: Any) -> None:
        cell = self.cell(name) or {}
        cell[self.namespace] = value
        self._write_back(name, cell)

    def clear(self, name: str, namespace: Any = None) -> None:
        cell = self.cell(name)
        if cell is not None:
            cell.pop(self.namespace if namespace is None else namespace, None)
            self._write_back(name, cell)

    def merge_namespaces(self, name: str, target: Any, sources: Iterable[Any], merge: Any) -> None:
        """Fold the values of `sources` into `target` with `merge(a, b)` (session windows merging)."""
        cell = self.cell(name)
        if cell is None:
            return
        merged = cell.get(target, _ABSENT)
        for source in sources:
            if source == target:
                continue
            value = cell.pop(source, _ABSENT)
            if value is _ABSENT:
                continue
            merged = value if merged is _ABSENT else merge(merged, value)
        if merged is not _ABSENT:
            cell[target] = merged
        self._write_back(name, cell)

    def get_state(self, descriptor: s.StateDescriptor) -> Any:
        name = descriptor.name
        known = self._kinds.get(name)
        if known is not None and known is not descriptor.kind:
            raise StateError(
                f"window state '{name}' is {known.value} state; it was asked for as {descriptor.kind.value}"
            )
        handle = self._handles.get(name)
        if handle is None:
            handle = _HANDLES[descriptor.kind](self, descriptor)
            self._handles[name] = handle
            self._kinds[name] = descriptor.kind
        return handle


_ABSENT = object()


class _Handle:
    def __init__(self, store: NamespacedStateStore, descriptor: s.StateDescriptor) -> None:
        self._store = store
        self._descriptor = descriptor
        self._name = descriptor.name

    def clear(self) -> None:
        self._store.clear(self._name)


class _ValueState(_Handle, s.ValueState[Any]):
    def value(self) -> Any:
        return self._store.get(self._name)

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._store.put(self._name, value)


class _ListState(_Handle, s.ListState[Any]):
    def get(self) -> Iterable[Any]:
        items: Iterable[Any] = self._store.get(self._name, [])
        return items

    def add(self, value: Any) -> None:
        current = self._store.get(self._name)
        if current is None:
            current = []
        current.append(value)
        self._store.put(self._name, current)

    def add_all(self, values: Iterable[Any]) -> None:
        for value in values:
            self.add(value)

    def update(self, values: Iterable[Any]) -> None:
        items = list(values)
        if items:
            self._store.put(self._name, items)
        else:
            self.clear()


class _ReducingState(_Handle, s.ReducingState[Any]):
    def __init__(self, store: NamespacedStateStore, descriptor: Any) -> None:
        super().__init__(store, descriptor)
        function = descriptor.get_reduce_function()
        self._reduce = getattr(function, "reduce", function)

    def get(self) -> Any:
        return self._store.get(self._name)

    def add(self, value: Any) -> None:
        current = self._store.get(self._name, _ABSENT)
        self._store.put(self._name, value if current is _ABSENT else self._reduce(current, value))


class _AggregatingState(_Handle, s.AggregatingState[Any, Any]):
    def __init__(self, store: NamespacedStateStore, descriptor: Any) -> None:
        super().__init__(store, descriptor)
        self._function = descriptor.get_agg_function()

    def get(self) -> Any:
        accumulator = self._store.get(self._name, _ABSENT)
        return None if accumulator is _ABSENT else self._function.get_result(accumulator)

    def add(self, value: Any) -> None:
        accumulator = self._store.get(self._name, _ABSENT)
        if accumulator is _ABSENT:
            accumulator = self._function.create_accumulator()
        self._store.put(self._name, self._function.add(value, accumulator))


class _MapState(_Handle, s.MapState[Any, Any]):
    def _map(self) -> dict[Any, Any] | None:
        current: dict[Any, Any] | None = self._store.get(self._name)
        return current

    def _map_to_change(self) -> dict[Any, Any]:
        current = self._map()
        return {} if current is None else current

    def get(self, key: Any) -> Any:
        current = self._map()
        return None if current is None else current.get(key)

    def put(self, key: Any, value: Any) -> None:
        current = self._map_to_change()
        current[key] = value
        self._store.put(self._name, current)

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        current = self._map_to_change()
        current.update(dict_value)
        self._store.put(self._name, current)

    def remove(self, key: Any) -> None:
        current = self._map()
        if current is not None:
            current.pop(key, None)
            if current:
                self._store.put(self._name, current)
            else:
                self.clear()

    def contains(self, key: Any) -> bool:
        current = self._map()
        return current is not None and key in current

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list((self._map() or {}).items())

    def keys(self) -> Iterable[Any]:
        return list((self._map() or {}).keys())

    def values(self) -> Iterable[Any]:
        return list((self._map() or {}).values())

    def is_empty(self) -> bool:
        return not self._map()


_HANDLES: dict[s.StateKind, Callable[[NamespacedStateStore, Any], s.State]] = {
    s.StateKind.VALUE: _ValueState,
    s.StateKind.LIST: _ListState,
    s.StateKind.REDUCING: _ReducingState,
    s.StateKind.AGGREGATING: _AggregatingState,
    s.StateKind.MAP: _MapState,
}
