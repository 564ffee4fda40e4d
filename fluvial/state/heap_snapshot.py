"""The heap backend's pending snapshot: its tables frozen on the task thread, written off it (the asynchronous
part of a checkpoint, fluvial.state.snapshot)."""

from __future__ import annotations

from typing import Any

from fluvial.state.backend import KeyedStateSnapshot
from fluvial.state.snapshot import KeyedTablesStateHandle, KeyGroupsStateHandle, StateWriter, partition_by_key_group


class FrozenHeapState:
    """A heap backend's state frozen for a checkpoint (the PendingKeyedSnapshot of the heap): `write` pickles it
    off the task thread — whole tables for a checkpoint, by key group when `by_key_group` (a savepoint)."""

    __slots__ = ("max_parallelism", "key_group_range", "by_key_group", "_tables", "_kinds")

    def __init__(
        self, max_parallelism: int, key_group_range: range, tables: dict[str, dict[Any, Any]], kinds: dict[str, str]
    ) -> None:
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.by_key_group = False
        self._tables = tables
        self._kinds = kinds

    def write(self, writer: StateWriter) -> KeyedTablesStateHandle | KeyGroupsStateHandle:
        """The asynchronous part. Both forms hold their bytes inline (the checkpointer stores the handle)."""
        if self.by_key_group:
            return KeyGroupsStateHandle.of(self.to_snapshot(), self.key_group_range)
        return KeyedTablesStateHandle.of(self.max_parallelism, self.key_group_range, self._kinds, self._tables)

    def discard(self) -> None:
        self._tables = {}

    def to_snapshot(self) -> KeyedStateSnapshot:
        """Partitioned by key group (the canonical in-memory form)."""
        return partition_by_key_group(self._tables, self.max_parallelism, self._kinds)
