"""Functions applied to a fired window pane (PyFlink's window functions in `pyflink.datastream.functions`).

Each returns (or yields) an iterable of results; the runtime emits them with the window's max_timestamp() as
their timestamp. `inputs` / `elements` is an iterable over the pane's values (after eviction), or - behind
`reduce(..., window_function=...)` / `aggregate(..., window_function=...)` - the single pre-aggregated value.
All run on the task thread with the pane's key set; `open`/`close` come from Function.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from fluvial.datastream.functions import AggregateFunction, Function, ReduceFunction

IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "KeyedStateStore",
    "ProcessAllWindowFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "WindowFunction",
]


class KeyedStateStore(abc.ABC):
    """Where a process window function gets state: `window_state()` is scoped to the key and the window (cleared
    when the window is cleaned up, after `clear(context)`), `global_state()` to the key only."""

    @abc.abstractmethod
    def get_state(self, state_descriptor: Any) -> Any: ...

    @abc.abstractmethod
    def get_list_state(self, state_descriptor: Any) -> Any: ...

    @abc.abstractmethod
    def get_map_state(self, state_descriptor: Any) -> Any: ...

    @abc.abstractmethod
    def get_reducing_state(self, state_descriptor: Any) -> Any: ...

    @abc.abstractmethod
    def get_aggregating_state(self, state_descriptor: Any) -> Any: ...


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """`apply(key, window, inputs)` over a keyed window pane."""

    @abc.abstractmethod
    def apply(self, key: KEY, window: W, inputs: Iterable[IN]) -> Iterable[OUT]:
        """Compute a window's results from all its records.

        Args:
            key: The window's key.
            window: The window (a TimeWindow, CountWindow or GlobalWindow).
            inputs: Its records.

        Returns:
            The results to emit.
        """


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """`apply(window, inputs)` over a pane of a non-keyed (`window_all`) stream."""

    @abc.abstractmethod
    def apply(self, window: W, inputs: Iterable[IN]) -> Iterable[OUT]:
        """Compute a window's results from all its records (non-keyed windows).

        Args:
            window: The window.
            inputs: Its records.

        Returns:
            The results to emit.
        """


class _WindowContext(abc.ABC, Generic[W]):
    """What a process window function knows about the pane being evaluated (or cleared)."""

    @abc.abstractmethod
    def window(self) -> W: ...

    @abc.abstractmethod
    def current_processing_time(self) -> int: ...

    @abc.abstractmethod
    def current_watermark(self) -> int: ...

    @abc.abstractmethod
    def window_state(self) -> KeyedStateStore:
        """State scoped to the current key and window."""

    @abc.abstractmethod
    def global_state(self) -> KeyedStateStore:
        """State scoped to the current key, shared by all its windows."""


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """`process(key, context, elements)` over a keyed pane, with the window and per-window state in context.

    Yield `(output_tag, value)` to emit to a side output, as in PyFlink's process functions.
    """

    class Context(_WindowContext[W]):
        pass

    @abc.abstractmethod
    def process(self, key: KEY, context: ProcessWindowFunction.Context, elements: Iterable[IN]) -> Iterable[OUT]:
        """Compute a window's results, with its context.

        Args:
            key: The window's key.
            context: `window()`, `current_watermark()`, `current_processing_time()`, per-window and global state,
                `output(tag, value)`.
            elements: The window's records.

        Returns:
            The results to emit.
        """

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        """Called when the window is cleaned up (its end + allowed lateness passed); delete per-window state."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """`process(context, elements)` over a pane of a non-keyed (`window_all`) stream."""

    class Context(_WindowContext[W]):
        pass

    @abc.abstractmethod
    def process(self, context: ProcessAllWindowFunction.Context, elements: Iterable[IN]) -> Iterable[OUT]:
        """Compute a non-keyed window's results, with its context.

        Args:
            context: `window()`, `current_watermark()`, state, side outputs.
            elements: The window's records.

        Returns:
            The results to emit.
        """

    def clear(self, context: ProcessAllWindowFunction.Context) -> None:
        """Called when the window is cleaned up; delete per-window state."""
