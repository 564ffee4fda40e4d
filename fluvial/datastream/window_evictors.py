"""Evictors: remove elements from a pane before and/or after the window function runs (Flink's Evictor).

Representation, the contract between the window operator and every evictor:
- `elements` is a mutable `list` of `(value, timestamp)` pairs in arrival order - TimestampedValue
  (a NamedTuple, so a plain 2-tuple works as well), `timestamp` None for a record without one;
- an evictor removes entries IN PLACE (`del elements[i]`, slice assignment); it never adds or reorders;
- `size` is `len(elements)` when the call starts (kept for Flink's signature).
The operator, when a pane fires: reads the pane's contents into such a list, calls `evict_before`, runs the
window function on the values left, calls `evict_after`, and writes the list back as the pane's new contents.
A pane with an evictor therefore keeps all its elements (no incremental aggregation).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import Duration

T = TypeVar("T")
W = TypeVar("W")


class TimestampedValue(NamedTuple):
    """One element of a pane as evictors see it."""

    value: Any
    timestamp: int | None

    def get_value(self) -> Any:
        return self.value

    def get_timestamp(self) -> int | None:
        return self.timestamp

    def has_timestamp(self) -> bool:
        return self.timestamp is not None


class EvictorContext(abc.ABC):
    """What the window operator gives an evictor."""

    @abc.abstractmethod
    def get_current_processing_time(self) -> int: ...

    @abc.abstractmethod
    def get_current_watermark(self) -> int: ...


class Evictor(abc.ABC, Generic[T, W]):
    """Removes elements from a firing pane. Picklable configuration shared by all keys and windows."""

    EvictorContext = EvictorContext

    @abc.abstractmethod
    def evict_before(self, elements: list, size: int, window: W, evictor_context: EvictorContext) -> None:
        """Called before the window function; remove entries of `elements` in place."""

    @abc.abstractmethod
    def evict_after(self, elements: list, size: int, window: W, evictor_context: EvictorContext) -> None:
        """Called after the window function; remove entries of `elements` in place."""


class _Described:
    def _params(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._params() == self._params()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(map(repr, self._params()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self._params()))})"


class _BeforeOrAfter(_Described, Evictor[Any, Any]):
    """Evicts either before or after the window function, chosen by `do_evict_after`."""

    do_evict_after: bool

    def evict_before(self, elements: list, size: int, window: Any, evictor_context: EvictorContext) -> None:
        if not self.do_evict_after:
            self._evict(elements)

    def evict_after(self, elements: list, size: int, window: Any, evictor_context: EvictorContext) -> None:
        if self.do_evict_after:
            self._evict(elements)

    @abc.abstractmethod
    def _evict(self, elements: list) -> None: ...


class CountEvictor(_BeforeOrAfter):
    """Keeps the last `max_count` elements (removes the oldest ones beyond it)."""

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        if isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 0:
            raise InvalidJobError(
                f"CountEvictor max_count must be an int >= 0, got {max_count!r}: pass the number of elements to keep"
            )
        self.max_count = max_count
        self.do_evict_after = bool(do_evict_after)

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return CountEvictor(max_count, do_evict_after)

    def _evict(self, elements: list) -> None:
        excess = len(elements) - self.max_count
        if excess > 0:
            del elements[:excess]

    def _params(self) -> tuple:
        return (self.max_count, self.do_evict_after)


class TimeEvictor(_BeforeOrAfter):
    """Keeps the elements whose timestamp is > (newest element timestamp - window_size).

    The reference is the newest element in the pane, not the window's end (Flink's semantics). Elements
    without a timestamp are kept; a pane without any timestamp is left alone.
    """

    def __init__(self, window_size: Any, do_evict_after: bool = False) -> None:
        if isinstance(window_size, Duration):
            millis = window_size.millis
        elif isinstance(window_size, int) and not isinstance(window_size, bool):
            millis = window_size
        else:
            raise InvalidJobError(
                f"TimeEvictor window_size must be a Duration or an int of milliseconds, got {window_size!r}: "
                "pass e.g. Time.seconds(10)"
            )
        if millis < 0:
            raise InvalidJobError(f"TimeEvictor window_size must be >= 0, got {millis} ms: pass e.g. Time.seconds(10)")
        self.window_size = millis
        self.do_evict_after = bool(do_evict_after)

    @staticmethod
    def of(window_size: Any, do_evict_after: bool = False) -> TimeEvictor:
        return TimeEvictor(window_size, do_evict_after)

    def _evict(self, elements: list) -> None:
        stamps = [element[1] for element in elements if element[1] is not None]
        if not stamps:
            return
        cutoff = max(stamps) - self.window_size
        elements[:] = [element for element in elements if element[1] is None or element[1] > cutoff]

    def _params(self) -> tuple:
        return (self.window_size, self.do_evict_after)


class DeltaEvictor(_BeforeOrAfter):
    """Removes the elements whose delta to the newest element is >= `threshold`.

    `delta_function` is a callable `(old_value, newest_value) -> float` or an object with `get_delta(a, b)`.
    """

    def __init__(self, threshold: float, delta_function: Any, do_evict_after: bool = False) -> None:
        get_delta = getattr(delta_function, "get_delta", None)
        if not callable(get_delta) and not callable(delta_function):
            raise InvalidJobError(
                f"DeltaEvictor needs a delta function (a, b) -> float or an object with get_delta, "
                f"got {delta_function!r}"
            )
        self.threshold = threshold
        self.delta_function = delta_function
        self.do_evict_after = bool(do_evict_after)

    @staticmethod
    def of(threshold: float, delta_function: Any, do_evict_after: bool = False) -> DeltaEvictor:
        return DeltaEvictor(threshold, delta_function, do_evict_after)

    def _delta(self) -> Callable[[Any, Any], float]:
        get_delta = getattr(self.delta_function, "get_delta", None)
        return get_delta if callable(get_delta) else self.delta_function

    def _evict(self, elements: list) -> None:
        if not elements:
            return
        delta, newest, threshold = self._delta(), elements[-1][0], self.threshold
        elements[:] = [element for element in elements if delta(element[0], newest) < threshold]

    def _params(self) -> tuple:
        return (self.threshold, self.delta_function, self.do_evict_after)
