"""Windows and the assigners that put elements into them (PyFlink `pyflink.datastream.window`).

A window is a small immutable value: it names a pane's namespace in keyed state and its place on the time
line, so windows are hashable, ordered, picklable and cheap to build (one is built per record). An assigner is
inert, picklable configuration: `assign_windows` is a pure function of the element, its timestamp and the
context, except for the count assigners, which keep a per-key counter in keyed state like PyFlink's.

Times are integer milliseconds. Sizes, slides, gaps and offsets accept a Duration (`Time.seconds(5)` is one)
or an int of milliseconds.
"""

from __future__ import annotations

import abc
import functools
import operator
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import MAX_WATERMARK, Duration
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.datastream.window_triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
)

T = TypeVar("T")
W = TypeVar("W", bound="Window")

NO_TIMESTAMP_MESSAGE = (
    "record has no timestamp: assign timestamps with assign_timestamps_and_watermarks(...) "
    "or use processing-time windows"
)


# ---------------------------------------------------------------------------------------------------------------
# Windows


class Window(abc.ABC):
    """A finite bucket of elements. Once the clock passes `max_timestamp()` no more elements belong to it."""

    __slots__ = ()

    @abc.abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to the window (inclusive)."""


class TimeWindow(tuple, Window):
    """The interval [start, end) in milliseconds. Immutable: it is a dict key in state.

    A tuple underneath, so hashing, equality and ordering (by start, then end) run in C: window contents are
    looked up by window once per record, and a Python-level `__hash__` there cost a third of a window job.
    (A consequence: `TimeWindow(0, 5) == (0, 5)`; namespaces only ever hold windows, so nothing can confuse them.)
    """

    __slots__ = ()

    def __new__(cls, start: int, end: int) -> TimeWindow:
        return tuple.__new__(cls, (start, end))

    start = property(operator.itemgetter(0), doc="First millisecond in the window.")
    end = property(operator.itemgetter(1), doc="First millisecond after the window.")

    def max_timestamp(self) -> int:
        """The last millisecond in the window: `end - 1`."""
        return self[1] - 1

    def intersects(self, other: TimeWindow) -> bool:
        """True when the windows overlap or touch (end == other.start): touching sessions merge, as in Flink."""
        return self[0] <= other[1] and self[1] >= other[0]

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window containing both."""
        return TimeWindow(min(self[0], other[0]), max(self[1], other[1]))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """The start of the window of `window_size` (shifted by `offset`) that contains `timestamp`.

        The start is aligned to `offset + k * window_size` and is <= timestamp, also for negative timestamps
        (Python's `%` is a floor modulo, which is what Flink's two-branch remainder computes).
        """
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(windows: Iterable[TimeWindow], callback: Any) -> None:
        """Report every group of intersecting windows to `callback` (what session assigners do).

        Windows are sorted by (start, end) and swept once; each run of intersecting windows with more than one
        distinct member is reported as `callback.merge(members, cover)` (or `callback(members, cover)` for a
        plain callable), members in sorted order. Single windows are not reported.
        """
        report = _merge_reporter(callback)
        group: list[TimeWindow] = []
        cover: TimeWindow | None = None
        for candidate in sorted(windows):
            if cover is None:
                group, cover = [candidate], candidate
            elif cover.intersects(candidate):
                if candidate != group[-1]:
                    group.append(candidate)
                cover = cover.cover(candidate)
            else:
                if len(group) > 1:
                    report(group, cover)
                group, cover = [candidate], candidate
        if cover is not None and len(group) > 1:
            report(group, cover)

    def __reduce__(self) -> tuple:
        return (TimeWindow, (self[0], self[1]))

    def __repr__(self) -> str:
        return f"TimeWindow(start={self[0]}, end={self[1]})"


@functools.total_ordering
class CountWindow(Window):
    """The `id`-th window of a count-window assigner; it has no end in time."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        """Long.MAX_VALUE: a count window has no time."""
        return MAX_WATERMARK

    def __eq__(self, other: object) -> bool:
        return type(other) is CountWindow and self.id == other.id  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(("CountWindow", self.id))

    def __lt__(self, other: CountWindow) -> bool:
        return self.id < other.id if type(other) is CountWindow else NotImplemented

    def __reduce__(self) -> tuple:
        return (CountWindow, (self.id,))

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    """The one window of GlobalWindows. A singleton: `GlobalWindow()`, `GlobalWindow.get()` and unpickling all
    return the same object."""

    __slots__ = ()

    def __new__(cls) -> GlobalWindow:
        return _GLOBAL_WINDOW

    @staticmethod
    def get() -> GlobalWindow:
        """The global window (there is one).

        Returns:
            The GlobalWindow.
        """
        return _GLOBAL_WINDOW

    def max_timestamp(self) -> int:
        """The largest timestamp (Long.MAX_VALUE): the global window never ends."""
        return MAX_WATERMARK

    def __eq__(self, other: object) -> bool:
        return type(other) is GlobalWindow

    def __hash__(self) -> int:
        return hash("GlobalWindow")

    def __lt__(self, other: GlobalWindow) -> bool:
        return False if type(other) is GlobalWindow else NotImplemented

    def __le__(self, other: GlobalWindow) -> bool:
        return True if type(other) is GlobalWindow else NotImplemented

    __gt__ = __lt__
    __ge__ = __le__

    def __reduce__(self) -> tuple:
        return (_global_window, ())

    def __repr__(self) -> str:
        return "GlobalWindow"


_GLOBAL_WINDOW: GlobalWindow = object.__new__(GlobalWindow)


def _global_window() -> GlobalWindow:
    return _GLOBAL_WINDOW


# ---------------------------------------------------------------------------------------------------------------
# Assigner interfaces


class WindowAssignerContext(abc.ABC):
    """What the window operator gives `assign_windows`. Called on the task thread with the record's key set."""

    @abc.abstractmethod
    def get_current_processing_time(self) -> int:
        """The processing-time clock in milliseconds."""

    @abc.abstractmethod
    def get_runtime_context(self) -> Any:
        """The operator's RuntimeContext; its keyed state is scoped to the current key (not to a window)."""


class MergeCallback(abc.ABC, Generic[W]):
    """Told by `MergingWindowAssigner.merge_windows` which windows become one."""

    @abc.abstractmethod
    def merge(self, to_be_merged: Iterable[W], merge_result: W) -> None: ...


class WindowAssigner(abc.ABC, Generic[T, W]):
    """Assigns zero or more windows to each element. Must be picklable; must keep no per-record state of its own
    (the same instance serves every key)."""

    WindowAssignerContext = WindowAssignerContext

    @abc.abstractmethod
    def assign_windows(self, element: T, timestamp: int | None, context: WindowAssignerContext) -> list[W]:
        """The windows `element` belongs to. `timestamp` is the record's event time, None when it has none."""

    @abc.abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the user sets none."""

    @abc.abstractmethod
    def is_event_time(self) -> bool:
        """True when windows follow event time (lateness, watermarks apply)."""

    def get_window_serializer(self) -> Any:
        """PyFlink's hook; fluvial pickles windows, so it returns None. Overriding it is harmless."""
        return None


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows can merge (sessions). The window operator keeps a MergingWindowSet per key."""

    MergeCallback = MergeCallback

    @abc.abstractmethod
    def merge_windows(self, windows: Iterable[W], callback: MergeCallback[W]) -> None:
        """Report, via `callback.merge(to_be_merged, merge_result)`, every group of `windows` to merge."""


class SessionWindowTimeGapExtractor(abc.ABC):
    """Gives each element its own session gap (dynamic session windows)."""

    @abc.abstractmethod
    def extract(self, element: Any) -> int:
        """The session gap for `element`, in milliseconds (> 0)."""


def _merge_reporter(callback: Any) -> Callable[[list, Any], None]:
    merge = getattr(callback, "merge", None)
    if callable(merge):
        return merge
    if callable(callback):
        return callback
    raise InvalidJobError(
        f"a merge callback must have merge(to_be_merged, merge_result) or be callable, got {callback!r}"
    )


# ---------------------------------------------------------------------------------------------------------------
# Validation helpers: every message names the assigner, the value and the fix.


def _millis(value: Any, what: str, owner: str) -> int:
    if isinstance(value, Duration):
        return value.millis
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    to_ms = getattr(value, "to_milliseconds", None)
    if callable(to_ms):
        return int(to_ms())
    raise InvalidJobError(
        f"{owner} {what} must be a Duration or an int of milliseconds, got {value!r}: "
        "pass e.g. Duration.of_seconds(5) or Time.seconds(5)"
    )


def _positive_millis(value: Any, what: str, owner: str) -> int:
    millis = _millis(value, what, owner)
    if millis <= 0:
        raise InvalidJobError(
            f"{owner} {what} must be > 0, got {millis} ms: pass a positive {what}, e.g. Duration.of_seconds(5)"
        )
    return millis


def _offset_millis(value: Any, bound: int, bound_name: str, owner: str) -> int:
    offset = 0 if value is None else _millis(value, "offset", owner)
    if abs(offset) >= bound:
        raise InvalidJobError(
            f"{owner} offset {offset} ms is outside the window: |offset| must be < {bound_name} ({bound} ms); "
            f"pass an offset between {-(bound - 1)} and {bound - 1} ms (offset % {bound_name} shifts the same way)"
        )
    return offset


def _positive_count(value: Any, what: str, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidJobError(
            f"{owner} {what} must be a positive int (number of elements), got {value!r}: pass e.g. 100"
        )
    return value


def _gap_extractor(extractor: Any, owner: str) -> Any:
    if callable(getattr(extractor, "extract", None)) or callable(extractor):
        return extractor
    raise InvalidJobError(
        f"{owner} needs a gap extractor: a SessionWindowTimeGapExtractor or a callable element -> gap in ms, "
        f"got {extractor!r}"
    )


class _Described:
    """Value semantics for built-in assigners: equal when the same type with the same parameters."""

    def _params(self) -> dict[str, Any]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._params() == self._params()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(map(repr, self._params().values()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._params().items())})"


# ---------------------------------------------------------------------------------------------------------------
# Time assigners


class _TumblingWindows(_Described, WindowAssigner[T, TimeWindow]):
    def __init__(self, size: Any, offset: Any = None) -> None:
        name = type(self).__name__
        self._size = _positive_millis(size, "size", name)
        self._offset = _offset_millis(offset, self._size, "size", name)

    @classmethod
    def of(cls, size: Any, offset: Any = None) -> Any:
        """Windows of `size`, starting at `offset + k * size` (offset e.g. Time.hours(-8) for local days)."""
        return cls(size, offset)

    def _window_of(self, timestamp: int) -> list[TimeWindow]:
        start = timestamp - (timestamp - self._offset) % self._size
        return [TimeWindow(start, start + self._size)]

    def get_size(self) -> int:
        return self._size

    def _params(self) -> dict[str, Any]:
        return {"size": self._size, "offset": self._offset}


class TumblingEventTimeWindows(_TumblingWindows[T]):
    """Fixed-size, non-overlapping windows by the record's event timestamp."""

    def assign_windows(self, element: T, timestamp: int | None, context: Any) -> list[TimeWindow]:
        """The windows a record belongs to: the one window of its size that holds the record's timestamp.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        if timestamp is None:
            raise InvalidJobError(f"{NO_TIMESTAMP_MESSAGE} (in {self!r})")
        return self._window_of(timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: EventTimeTrigger."""
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        """True: these windows are in event time (they fire on watermarks)."""
        return True


class TumblingProcessingTimeWindows(_TumblingWindows[T]):
    """Fixed-size, non-overlapping windows by the operator's clock when the record arrives."""

    def assign_windows(self, element: T, timestamp: int | None, context: WindowAssignerContext) -> list[TimeWindow]:
        """The windows a record belongs to: the one window of its size that holds the current processing time.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        return self._window_of(context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: ProcessingTimeTrigger."""
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        """False: these windows do not run on event time."""
        return False


class _SlidingWindows(_Described, WindowAssigner[T, TimeWindow]):
    def __init__(self, size: Any, slide: Any, offset: Any = None) -> None:
        name = type(self).__name__
        self._size = _positive_millis(size, "size", name)
        self._slide = _positive_millis(slide, "slide", name)
        self._offset = _offset_millis(offset, self._slide, "slide", name)

    @classmethod
    def of(cls, size: Any, slide: Any, offset: Any = None) -> Any:
        """Windows of `size` starting every `slide` (at `offset + k * slide`); an element is in size/slide of
        them when slide divides size."""
        return cls(size, slide, offset)

    def _windows_of(self, timestamp: int) -> list[TimeWindow]:
        size, slide = self._size, self._slide
        last_start = timestamp - (timestamp - self._offset) % slide
        return [TimeWindow(start, start + size) for start in range(last_start, timestamp - size, -slide)]

    def get_size(self) -> int:
        return self._size

    def get_slide(self) -> int:
        return self._slide

    def _params(self) -> dict[str, Any]:
        return {"size": self._size, "slide": self._slide, "offset": self._offset}


class SlidingEventTimeWindows(_SlidingWindows[T]):
    """Fixed-size, overlapping windows by the record's event timestamp (latest window first)."""

    def assign_windows(self, element: T, timestamp: int | None, context: Any) -> list[TimeWindow]:
        """The windows a record belongs to: every window (size / slide of them) that holds the record's timestamp.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        if timestamp is None:
            raise InvalidJobError(f"{NO_TIMESTAMP_MESSAGE} (in {self!r})")
        return self._windows_of(timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: EventTimeTrigger."""
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        """True: these windows are in event time (they fire on watermarks)."""
        return True


class SlidingProcessingTimeWindows(_SlidingWindows[T]):
    """Fixed-size, overlapping windows by the operator's clock when the record arrives."""

    def assign_windows(self, element: T, timestamp: int | None, context: WindowAssignerContext) -> list[TimeWindow]:
        """The windows a record belongs to: every window that holds the current processing time.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        return self._windows_of(context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: ProcessingTimeTrigger."""
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        """False: these windows do not run on event time."""
        return False


class _SessionWindows(_Described, MergingWindowAssigner[T, TimeWindow]):
    """A record at t opens [t, t + gap); windows that intersect (or touch) merge into one session."""

    def merge_windows(self, windows: Iterable[TimeWindow], callback: Any) -> None:
        TimeWindow.merge_windows(windows, callback)


class _FixedGapSessionWindows(_SessionWindows[T]):
    def __init__(self, session_gap: Any) -> None:
        self._session_gap = _positive_millis(session_gap, "gap", type(self).__name__)

    @classmethod
    def with_gap(cls, size: Any) -> Any:
        """Sessions that close after `size` without records."""
        return cls(size)

    def _params(self) -> dict[str, Any]:
        return {"gap": self._session_gap}


class _DynamicGapSessionWindows(_SessionWindows[T]):
    def __init__(self, session_window_time_gap_extractor: Any) -> None:
        self._extractor = _gap_extractor(session_window_time_gap_extractor, type(self).__name__)

    @classmethod
    def with_dynamic_gap(cls, extractor: Any) -> Any:
        """Sessions whose gap each element chooses: `extractor.extract(element)` or `extractor(element)`, in ms."""
        return cls(extractor)

    def _session_of(self, element: Any, start: int) -> list[TimeWindow]:
        extract = getattr(self._extractor, "extract", None)
        raw = extract(element) if callable(extract) else self._extractor(element)
        gap = _millis(raw, "dynamic gap", type(self).__name__)
        if gap <= 0:
            raise InvalidJobError(
                f"{type(self).__name__}: the gap extractor returned {gap} ms for element {element!r}; "
                "a session gap must be > 0 ms: make the extractor return a positive gap"
            )
        return [TimeWindow(start, start + gap)]

    def _params(self) -> dict[str, Any]:
        return {"extractor": self._extractor}


class DynamicEventTimeSessionWindows(_DynamicGapSessionWindows[T]):
    """Event-time session windows whose gap each record decides (made by
    `EventTimeSessionWindows.with_dynamic_gap(extractor)`).
    """

    def assign_windows(self, element: T, timestamp: int | None, context: Any) -> list[TimeWindow]:
        """The windows a record belongs to: a window from the record's timestamp to timestamp + the gap its extractor
        gives.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        if timestamp is None:
            raise InvalidJobError(f"{NO_TIMESTAMP_MESSAGE} (in {self!r})")
        return self._session_of(element, timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: EventTimeTrigger."""
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        """True: these windows are in event time (they fire on watermarks)."""
        return True


class DynamicProcessingTimeSessionWindows(_DynamicGapSessionWindows[T]):
    """Processing-time session windows whose gap each record decides (made by
    `ProcessingTimeSessionWindows.with_dynamic_gap(extractor)`).
    """

    def assign_windows(self, element: T, timestamp: int | None, context: WindowAssignerContext) -> list[TimeWindow]:
        """The windows a record belongs to: a window from the processing time to that + the gap its extractor gives.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        return self._session_of(element, context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: ProcessingTimeTrigger."""
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        """False: these windows do not run on event time."""
        return False


class EventTimeSessionWindows(_FixedGapSessionWindows[T]):
    """Sessions by event time: a session ends `gap` after its last record's timestamp."""

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicEventTimeSessionWindows:
        """Session windows whose gap is computed per record.

        Args:
            extractor: A SessionWindowTimeGapExtractor, or a callable of a record returning its gap in ms.

        Returns:
            The assigner.

        Example:
            ```python
            EventTimeSessionWindows.with_dynamic_gap(lambda click: 10_000 if click[0] == "bot" else 60_000)
            ```
        """
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element: T, timestamp: int | None, context: Any) -> list[TimeWindow]:
        """The windows a record belongs to: a window from the record's timestamp to timestamp + gap; overlapping ones
        merge.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        if timestamp is None:
            raise InvalidJobError(f"{NO_TIMESTAMP_MESSAGE} (in {self!r})")
        return [TimeWindow(timestamp, timestamp + self._session_gap)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: EventTimeTrigger."""
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        """True: these windows are in event time (they fire on watermarks)."""
        return True


class ProcessingTimeSessionWindows(_FixedGapSessionWindows[T]):
    """Sessions by the operator's clock: a session ends `gap` after its last record arrived."""

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicProcessingTimeSessionWindows:
        """Processing-time session windows whose gap is computed per record.

        Args:
            extractor: A SessionWindowTimeGapExtractor, or a callable of a record returning its gap in ms.

        Returns:
            The assigner.
        """
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element: T, timestamp: int | None, context: WindowAssignerContext) -> list[TimeWindow]:
        """The windows a record belongs to: a window from the current processing time to that + gap; overlapping ones
        merge.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + self._session_gap)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: ProcessingTimeTrigger."""
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        """False: these windows do not run on event time."""
        return False


# ---------------------------------------------------------------------------------------------------------------
# Global and count assigners


class GlobalWindows(_Described, WindowAssigner[T, GlobalWindow]):
    """Every element into the one GlobalWindow; it never fires unless the user sets a trigger."""

    @staticmethod
    def create() -> GlobalWindows:
        """The assigner of one global window per key; it never fires by itself, so set a trigger.

        Returns:
            The assigner.

        Example:
            ```python
            keyed.window(GlobalWindows.create()).trigger(CountTrigger.of(100))
            ```
        """
        return GlobalWindows()

    def assign_windows(self, element: T, timestamp: int | None, context: Any) -> list[GlobalWindow]:
        """The windows a record belongs to: the one global window.

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        return [_GLOBAL_WINDOW]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: NeverTrigger (set a trigger of your own)."""
        return NeverTrigger()

    def is_event_time(self) -> bool:
        """False: these windows do not run on event time."""
        return False

    def _params(self) -> dict[str, Any]:
        return {}


class CountTumblingWindowAssigner(_Described, WindowAssigner[T, CountWindow]):
    """`count_window(size)`: the n-th element of a key (from 0) goes to CountWindow(n // size).

    The counter is keyed ValueState named 'tumble-count-assigner', read through
    `context.get_runtime_context().get_state(...)`, so the operator must have set the record's key first.
    The default trigger fires when a window holds `size` elements and purges it: a count window is complete once
    it fires (no later element can join it), so purging only releases its contents (PyFlink's plain
    CountTrigger emits the same results but keeps every fired window's contents forever).
    """

    def __init__(self, window_size: int) -> None:
        self._window_size = _positive_count(window_size, "window size", type(self).__name__)
        self._count_descriptor = ValueStateDescriptor("tumble-count-assigner")

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        """Windows of `window_size` records per key.

        Args:
            window_size: Records per window, at least 1.

        Returns:
            The assigner.
        """
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(self, element: T, timestamp: int | None, context: WindowAssignerContext) -> list[CountWindow]:
        """The windows a record belongs to: the count window of the record's key (every `size` records).

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        count_state = context.get_runtime_context().get_state(self._count_descriptor)
        count = count_state.value() or 0
        count_state.update(count + 1)
        return [CountWindow(count // self._window_size)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: PurgingTrigger of CountTrigger(size)."""
        return PurgingTrigger(CountTrigger(self._window_size))

    def is_event_time(self) -> bool:
        """False: these windows do not run on event time."""
        return False

    def _params(self) -> dict[str, Any]:
        return {"size": self._window_size}


class CountSlidingWindowAssigner(_Described, WindowAssigner[T, CountWindow]):
    """`count_window(size, slide)`: CountWindow(i) holds a key's elements number i*slide .. i*slide + size - 1
    (from 0), so each fires once, full, with `size` elements; the n-th element is in every window whose range
    contains n (latest first). Counter: keyed ValueState 'slide-count-assigner'. Default trigger as for
    CountTumblingWindowAssigner."""

    def __init__(self, window_size: int, window_slide: int) -> None:
        name = type(self).__name__
        self._window_size = _positive_count(window_size, "window size", name)
        self._window_slide = _positive_count(window_slide, "window slide", name)
        self._count_descriptor = ValueStateDescriptor("slide-count-assigner")

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        """Windows of `window_size` records per key, one starting every `window_slide` records.

        Args:
            window_size: Records per window.
            window_slide: Records between window starts.

        Returns:
            The assigner.
        """
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(self, element: T, timestamp: int | None, context: WindowAssignerContext) -> list[CountWindow]:
        """The windows a record belongs to: the count windows the record belongs to (one starts every `slide` records).

        Args:
            element: The record.
            timestamp: Its event timestamp (ms), or None.
            context: Gives the current processing time.

        Returns:
            The list of windows.
        """
        count_state = context.get_runtime_context().get_state(self._count_descriptor)
        count = count_state.value() or 0
        count_state.update(count + 1)
        size, slide = self._window_size, self._window_slide
        windows = []
        window_id = count // slide
        while window_id >= 0 and window_id * slide <= count <= window_id * slide + size - 1:
            windows.append(CountWindow(window_id))
            window_id -= 1
        return windows

    def get_default_trigger(self, env: Any = None) -> Trigger:
        """The trigger used when the windowed stream sets none: PurgingTrigger of CountTrigger(size)."""
        return PurgingTrigger(CountTrigger(self._window_size))

    def is_event_time(self) -> bool:
        """False: these windows do not run on event time."""
        return False

    def _params(self) -> dict[str, Any]:
        return {"size": self._window_size, "slide": self._window_slide}
