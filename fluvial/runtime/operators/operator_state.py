"""Operator state for user functions (Flink's CheckpointedFunction): a function with
`initialize_state(context)` and `snapshot_state(context)` keeps named lists that are checkpointed with the
operator and, on restore at another parallelism, split among the subtasks (list state) or given whole to each
(union list state), and named broadcast maps of which every subtask restores one copy. The broadcast views are
also what broadcast process functions see (`operators.broadcast`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fluvial.checkpoint.snapshots import BROADCAST_PREFIX, UNION_PREFIX
from fluvial.common.errors import StateError
from fluvial.datastream import subtask_state as api_state


class OperatorListState:
    """A list of items belonging to the subtask (not to a key)."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def get(self) -> Iterable[Any]:
        return list(self._items)

    def add(self, value: Any) -> None:
        self._items.append(value)

    def add_all(self, values: Iterable[Any]) -> None:
        self._items.extend(values)

    def update(self, values: Iterable[Any]) -> None:
        self._items[:] = list(values)

    def clear(self) -> None:
        self._items.clear()

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._items))


class ReadOnlyBroadcastView(api_state.ReadOnlyBroadcastState[Any, Any]):
    """A broadcast state's map, readable only (the data side of a broadcast process function): subtasks cannot
    diverge."""

    __slots__ = ("_entries", "_name")

    def __init__(self, entries: dict[Any, Any], name: str) -> None:
        self._entries = entries
        self._name = name

    def get(self, key: Any) -> Any:
        return self._entries.get(key)

    def contains(self, key: Any) -> bool:
        return key in self._entries

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list(self._entries.items())

    def keys(self) -> Iterable[Any]:
        return list(self._entries)

    def values(self) -> Iterable[Any]:
        return list(self._entries.values())

    def is_empty(self) -> bool:
        return not self._entries

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._entries))

    def _refuse_write(self, *_: Any) -> None:
        raise StateError(
            f"broadcast state {self._name!r} is read-only on the data side of a broadcast process "
            "function: change it in process_broadcast_element, where every subtask sees the same "
            "records"
        )

    clear = put = put_all = remove = _refuse_write


class WritableBroadcastView(ReadOnlyBroadcastView, api_state.BroadcastState[Any, Any]):
    """A broadcast state's map as the broadcast side sees it."""

    __slots__ = ()

    def put(self, key: Any, value: Any) -> None:
        self._entries[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self._entries.update(dict_value)

    def remove(self, key: Any) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()


class OperatorStateStore(api_state.OperatorStateStore):
    def __init__(self, restored: dict[str, list[Any]] | None) -> None:
        self._lists: dict[str, list[Any]] = {
            name: list(items) for name, items in (restored or {}).items() if not name.startswith(BROADCAST_PREFIX)
        }
        self._maps: dict[str, dict[Any, Any]] = {
            name[len(BROADCAST_PREFIX) :]: dict(items)
            for name, items in (restored or {}).items()
            if name.startswith(BROADCAST_PREFIX)
        }
        self.restored = restored is not None

    def _state(self, name: str) -> OperatorListState:
        return OperatorListState(self._lists.setdefault(name, []))

    def get_list_state(self, state_descriptor: Any) -> OperatorListState:
        return self._state(state_descriptor.name)

    def get_union_list_state(self, state_descriptor: Any) -> OperatorListState:
        return self._state(UNION_PREFIX + state_descriptor.name)

    def get_broadcast_state(self, state_descriptor: Any) -> WritableBroadcastView:
        name = state_descriptor.name
        return WritableBroadcastView(self._maps.setdefault(name, {}), name)

    def snapshot(self) -> dict[str, list[Any]]:
        state = {name: list(items) for name, items in self._lists.items()}
        state.update((BROADCAST_PREFIX + name, list(entries.items())) for name, entries in self._maps.items())
        return state


class FunctionInitializationContext:
    def __init__(self, store: OperatorStateStore, keyed_store: Any) -> None:
        self._store = store
        self._keyed = keyed_store

    def is_restored(self) -> bool:
        return self._store.restored

    def get_operator_state_store(self) -> OperatorStateStore:
        return self._store

    def get_keyed_state_store(self) -> Any:
        return self._keyed


class FunctionSnapshotContext:
    def __init__(self, checkpoint_id: int, timestamp: int = 0) -> None:
        self._checkpoint_id = checkpoint_id
        self._timestamp = timestamp

    def get_checkpoint_id(self) -> int:
        return self._checkpoint_id

    def get_checkpoint_timestamp(self) -> int:
        return self._timestamp
