"""State that belongs to a parallel subtask rather than to a key (PyFlink's names in
`pyflink.datastream.state`): the broadcast states of broadcast process functions and the operator state
store of CheckpointedFunctions."""

from __future__ import annotations

import abc
from typing import Any, TypeVar

from fluvial.datastream.state import ReadableMapState

K = TypeVar("K")
V = TypeVar("V")

__all__ = ["BroadcastState", "OperatorStateStore", "ReadOnlyBroadcastState"]


class ReadOnlyBroadcastState(ReadableMapState[K, V]):
    """The broadcast state as the data side of a broadcast process function sees it: readable only, so every
    parallel subtask keeps the same contents."""


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    """The broadcast state as the broadcast side sees it: writable."""

    @abc.abstractmethod
    def put(self, key: K, value: V) -> None:
        """Map `key` to `value` in the broadcast state.

        Args:
            key: The key.
            value: The value.
        """

    @abc.abstractmethod
    def put_all(self, dict_value: dict[K, V]) -> None:
        """Put every entry of a dict into the broadcast state.

        Args:
            dict_value: The entries.
        """

    @abc.abstractmethod
    def remove(self, key: K) -> None:
        """Remove `key` from the broadcast state.

        Args:
            key: The key.
        """

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


class OperatorStateStore(abc.ABC):
    """State of a parallel subtask (Flink's OperatorStateStore): what a CheckpointedFunction's
    `initialize_state(context)` gets from `context.get_operator_state_store()`."""

    @abc.abstractmethod
    def get_list_state(self, state_descriptor: Any) -> Any:
        """Items split among the subtasks when the job is restored at another parallelism."""

    @abc.abstractmethod
    def get_union_list_state(self, state_descriptor: Any) -> Any:
        """Items given whole to every subtask on restore."""

    @abc.abstractmethod
    def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState:
        """A map that is the same on every subtask (the function must keep it so): on restore, at any
        parallelism, every subtask gets one copy."""
