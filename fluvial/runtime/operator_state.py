"""Operator state for user functions (Flink's CheckpointedFunction): a function with
`initialize_state(context)` and `snapshot_state(context)` keeps named lists that are checkpointed with the
operator and, on restore at another parallelism, split among the subtasks (list state) or given whole to each
(union list state)."""

from __future__ import annotations

from typing import Any, Iterable

from fluvial.checkpoint.snapshots import UNION_PREFIX
from fluvial.datastream import subtask_state as api_state


class OperatorListState:
    """A list of items belonging to the subtask (not to a key)."""

    def __init__(self, items: list) -> None:
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

    def __iter__(self):
        return iter(list(self._items))


class OperatorStateStore(api_state.OperatorStateStore):
    def __init__(self, restored: dict[str, list] | None) -> None:
        self._lists: dict[str, list] = {name: list(items) for name, items in (restored or {}).items()}
        self.restored = restored is not None

    def _state(self, name: str) -> OperatorListState:
        return OperatorListState(self._lists.setdefault(name, []))

    def get_list_state(self, state_descriptor: Any) -> OperatorListState:
        return self._state(state_descriptor.name)

    def get_union_list_state(self, state_descriptor: Any) -> OperatorListState:
        return self._state(UNION_PREFIX + state_descriptor.name)

    def snapshot(self) -> dict[str, list]:
        return {name: list(items) for name, items in self._lists.items()}


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
