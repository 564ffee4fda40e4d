"""How a stream gets event time: PyFlink's WatermarkStrategy plus the generator API of Flink's Java `eventtime`.

A WatermarkStrategy is inert, picklable data (rule 3 of STYLE.md): a factory for watermark generators, an
optional timestamp assigner and an optional idle timeout. The task that runs a source, or an
`assign_timestamps_and_watermarks` operator, builds its live objects from it when it opens:

1. `create_timestamp_assigner()` once; for each record, the runtime passes the assigner's result through
   `checked_timestamp` (a user function that returns a string must fail with a message, not deep in a heap).
2. `create_watermark_generator(context)` once per split (or per subtask); the runtime calls
   `on_event(event, timestamp, output)` for every record, in order, and `on_periodic_emit(output)` every
   `pipeline.auto-watermark-interval` (200 ms by default).
3. The runtime forwards a watermark only when it is higher than the last one it forwarded: generators may
   repeat themselves (the bounded out-of-orderness generator re-emits its watermark on every period).

The built-in bounded out-of-orderness generator emits `max_ts - bound - 1`: a watermark `t` promises that no
record with timestamp <= t follows, so a record exactly `bound` older than the newest must still be on time.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import MIN_WATERMARK, Duration, current_millis, to_millis

Clock = Callable[[], int]
"""A clock returns milliseconds; idleness detection only compares two readings, so any origin will do."""


@dataclass(frozen=True, slots=True)
class Watermark:
    """A point in event time, as a generator reports it (Flink's `api.common.eventtime.Watermark`).

    The runtime turns it into its own `runtime.records.Watermark` before it enters a channel.
    """

    timestamp: int

    def get_timestamp(self) -> int:
        return self.timestamp


class WatermarkOutput(ABC):
    """Where a WatermarkGenerator reports. Implemented by the runtime; called on the task thread only."""

    __slots__ = ()

    @abstractmethod
    def emit_watermark(self, watermark: Watermark) -> None:
        """Report a watermark. A watermark not higher than an earlier one is harmless and ignored."""

    @abstractmethod
    def mark_idle(self) -> None:
        """Stop holding back downstream event time until the next `mark_active` or watermark."""

    @abstractmethod
    def mark_active(self) -> None:
        """Hold back downstream event time again. Must reach downstream before the records that follow."""


class WatermarkGenerator(ABC):
    """Generates watermarks from events (`on_event`) and/or periodically (`on_periodic_emit`).

    One instance serves one split or subtask and is called only on its task thread, so it needs no locks.

    Optional fast path: a generator whose `on_event` only tracks the largest timestamp may define
    `on_batch_max(max_timestamp, output=None)`, equivalent to calling `on_event` for each record of a buffer
    whose largest timestamp is `max_timestamp`. The runtime looks it up with `getattr(..., None)`; `None`
    (the default here) means "call on_event for every record".
    """

    __slots__ = ()

    on_batch_max: ClassVar[Callable[..., None] | None] = None

    @abstractmethod
    def on_event(self, event: Any, event_timestamp: int | None, output: WatermarkOutput) -> None:
        """Called for every record, in order, after its timestamp was assigned (None if it has none)."""

    @abstractmethod
    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        """Called every auto-watermark interval; a periodic generator emits here."""


class TimestampAssigner(ABC):
    """Extracts a record's event time in milliseconds (PyFlink `TimestampAssigner`)."""

    @abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int | None) -> int:
        """`record_timestamp` is the timestamp the record already carries (None if it has none)."""


# --------------------------------------------------------------------------------------------------------
# Built-in generators
# --------------------------------------------------------------------------------------------------------


class BoundedOutOfOrdernessWatermarks(WatermarkGenerator):
    """Periodic watermarks trailing the largest timestamp seen by a fixed bound: `max_ts - bound - 1`.

    Before the first event it emits nothing (Flink emits the minimum watermark, which changes nothing).
    Records with no timestamp (None) do not move it.
    """

    __slots__ = ("_bound", "_max_timestamp")

    def __init__(self, max_out_of_orderness_ms: int) -> None:
        self._bound = _non_negative_bound(max_out_of_orderness_ms)
        self._max_timestamp = MIN_WATERMARK  # MIN stands for "no event yet"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A subclass with its own on_event (e.g. one that also emits per event) must see every event: drop the
        # batch fast path unless it provides its own.
        super().__init_subclass__(**kwargs)
        if "on_event" in cls.__dict__ and "on_batch_max" not in cls.__dict__:
            cls.on_batch_max = None  # type: ignore[assignment]

    @property
    def max_out_of_orderness_ms(self) -> int:
        return self._bound

    def on_event(self, event: Any, event_timestamp: int | None, output: WatermarkOutput) -> None:
        if event_timestamp is not None and event_timestamp > self._max_timestamp:
            self._max_timestamp = event_timestamp

    def on_batch_max(self, max_timestamp: int | None, output: WatermarkOutput | None = None) -> None:
        if max_timestamp is not None and max_timestamp > self._max_timestamp:
            self._max_timestamp = max_timestamp

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        if self._max_timestamp != MIN_WATERMARK:
            output.emit_watermark(Watermark(self._max_timestamp - self._bound - 1))


class AscendingTimestampsWatermarks(BoundedOutOfOrdernessWatermarks):
    """For timestamps that never decrease: the watermark is `max_ts - 1`, so records equal to the newest
    timestamp are still on time."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(0)


class NoWatermarksGenerator(WatermarkGenerator):
    """Emits nothing: for processing-time jobs and for sources that emit watermarks themselves."""

    __slots__ = ()

    def on_event(self, event: Any, event_timestamp: int | None, output: WatermarkOutput) -> None:
        pass

    def on_batch_max(self, max_timestamp: int | None, output: WatermarkOutput | None = None) -> None:
        pass

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        pass


class WatermarksWithIdleness(WatermarkGenerator):
    """Wraps a generator; marks the output idle when no event arrived for `idle_timeout_ms`.

    Timing follows Flink: the quiet period starts at the first periodic probe that finds no event since the
    previous probe, and the output goes idle at the first probe at least `idle_timeout_ms` later. So a
    source goes idle between `idle_timeout` and `idle_timeout + auto-watermark interval` after its last
    event. While idle, the wrapped generator's periodic emission is suppressed. The next event marks the
    output active again *before* the wrapped generator sees it (Flink waits for the next watermark instead;
    we reactivate at once so no record travels on a channel downstream still considers idle).

    Events only bump a counter: the clock is read on periodic probes, never per record.
    """

    __slots__ = (
        "_clock",
        "_events",
        "_events_at_probe",
        "_generator",
        "_idle",
        "_quiet_since",
        "_reactivate_pending",
        "_timeout",
    )

    def __init__(self, generator: WatermarkGenerator, idle_timeout_ms: int, clock: Clock = current_millis) -> None:
        self._generator = generator
        self._timeout = _positive_idle_timeout(idle_timeout_ms)
        self._clock = clock
        self._events = 0
        self._events_at_probe = 0
        self._quiet_since: int | None = None
        self._idle = False
        self._reactivate_pending = False

    @property
    def is_idle(self) -> bool:
        return self._idle

    def on_event(self, event: Any, event_timestamp: int | None, output: WatermarkOutput) -> None:
        self._events += 1
        if self._idle:
            self._idle = False
            output.mark_active()
        self._generator.on_event(event, event_timestamp, output)

    @property
    def on_batch_max(self) -> Callable[..., None] | None:  # type: ignore[override]
        """The fast path exists exactly when the wrapped generator has one."""
        if getattr(self._generator, "on_batch_max", None) is None:
            return None
        return self._on_batch_max

    def _on_batch_max(self, max_timestamp: int | None, output: WatermarkOutput | None = None) -> None:
        self._events += 1
        if self._idle:
            self._idle = False
            if output is not None:
                output.mark_active()
            else:  # no output to tell now: tell it on the next probe, before any watermark
                self._reactivate_pending = True
        self._generator.on_batch_max(max_timestamp, output)  # type: ignore[misc]

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        if self._reactivate_pending:
            self._reactivate_pending = False
            output.mark_active()
        if self._quiet_long_enough():
            if not self._idle:
                self._idle = True
                output.mark_idle()
            return
        self._generator.on_periodic_emit(output)

    def _quiet_long_enough(self) -> bool:
        if self._events != self._events_at_probe:
            self._events_at_probe = self._events
            self._quiet_since = None
            return False
        now = self._clock()
        if self._quiet_since is None:
            self._quiet_since = now
            return False
        return now - self._quiet_since >= self._timeout


# --------------------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------------------


def _non_negative_bound(millis: Any) -> int:
    if isinstance(millis, bool) or not isinstance(millis, numbers.Integral):
        raise InvalidJobError(
            f"max out-of-orderness must be whole milliseconds, got {millis!r}; pass e.g. Duration.of_seconds(5)"
        )
    if millis < 0:
        raise InvalidJobError(
            f"max out-of-orderness must be >= 0, got {int(millis)} ms; pass e.g. "
            "Duration.of_seconds(5), or use for_monotonous_timestamps() for ordered timestamps"
        )
    return int(millis)


def _positive_idle_timeout(millis: Any) -> int:
    if isinstance(millis, bool) or not isinstance(millis, numbers.Integral) or millis <= 0:
        raise InvalidJobError(
            f"idle timeout must be > 0 ms, got {millis!r} ms; pass a positive Duration such as "
            "Duration.of_seconds(30), or leave out with_idleness() if no source goes quiet"
        )
    return int(millis)


def _duration_millis(value: Any, what: str) -> int:
    try:
        return to_millis(value)
    except TypeError:
        raise InvalidJobError(f"{what} must be a Duration, got {value!r}; pass e.g. Duration.of_seconds(5)") from None


def _accepts_positional(function: Callable[..., Any], count: int) -> bool | None:
    """Whether `function` can be called with `count` positional arguments; None when Python cannot tell."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def _short_repr(value: Any, limit: int = 120) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def checked_timestamp(value: Any, timestamp: Any) -> int:
    """The assigner's result for `value` as int milliseconds; a clear InvalidJobError if it is not a number.

    Floats are truncated (a `time.time() * 1000` result is accepted); bools, NaN and infinities are rejected.
    """
    if type(timestamp) is int:
        return timestamp
    is_number = isinstance(timestamp, numbers.Real) and not isinstance(timestamp, bool)
    if is_number and (isinstance(timestamp, numbers.Integral) or math.isfinite(timestamp)):
        return int(timestamp)
    raise InvalidJobError(
        f"timestamp assigner returned {_short_repr(timestamp)} ({type(timestamp).__name__}) for record "
        f"{_short_repr(value)}; return an int of milliseconds since the epoch, e.g. int(value.ts_seconds * 1000)"
    )


# --------------------------------------------------------------------------------------------------------
# Generator factories: module-level, picklable with plain pickle
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WatermarkGeneratorContext:
    """What a generator factory may use (Flink's `WatermarkGeneratorSupplier.Context`).

    `clock` is the processing-time clock in ms (idleness detection reads it); the runtime passes its own so
    tests driven by a manual clock behave deterministically.
    """

    clock: Clock = current_millis
    metric_group: Any = None

    def get_metric_group(self) -> Any:
        return self.metric_group

    def get_input_activity_clock(self) -> Clock:
        return self.clock


@dataclass(frozen=True, slots=True)
class _NoWatermarksFactory:
    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        return NoWatermarksGenerator()


@dataclass(frozen=True, slots=True)
class _AscendingFactory:
    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        return AscendingTimestampsWatermarks()


@dataclass(frozen=True, slots=True)
class _BoundedFactory:
    max_out_of_orderness_ms: int

    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        return BoundedOutOfOrdernessWatermarks(self.max_out_of_orderness_ms)


@dataclass(frozen=True, slots=True)
class _UserFactory:
    """A user's factory: a `(context) -> generator` callable, a zero-argument callable (a generator class),
    or an object with Flink's `create_watermark_generator(context)`."""

    supplier: Any
    takes_context: bool

    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        supplier = self.supplier
        create = supplier if callable(supplier) else supplier.create_watermark_generator
        return create(context) if self.takes_context else create()

    @staticmethod
    def of(supplier: Any) -> _UserFactory:
        target = supplier
        if not callable(supplier):
            target = getattr(supplier, "create_watermark_generator", None)
            if target is None or not callable(target):
                raise InvalidJobError(
                    f"for_generator() needs a callable returning a WatermarkGenerator, got {_short_repr(supplier)}; "
                    "pass e.g. lambda context: MyGenerator() or the class MyGenerator"
                )
        if _accepts_positional(target, 1):
            return _UserFactory(supplier, True)
        if _accepts_positional(target, 0) is not False:  # zero arguments, or Python cannot tell
            return _UserFactory(supplier, False)
        raise InvalidJobError(
            f"for_generator() factory {_short_repr(supplier)} must take no argument or one (the context); "
            "pass e.g. lambda context: MyGenerator()"
        )


def _check_generator(generator: Any, source: Any) -> WatermarkGenerator:
    if not (callable(getattr(generator, "on_event", None)) and callable(getattr(generator, "on_periodic_emit", None))):
        raise InvalidJobError(
            f"watermark generator factory {_short_repr(source)} returned {_short_repr(generator)}, which is not a "
            "WatermarkGenerator; return an object with on_event(event, timestamp, output) and "
            "on_periodic_emit(output)"
        )
    return generator


# --------------------------------------------------------------------------------------------------------
# The strategy
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WatermarkStrategy:
    """How to assign timestamps and generate watermarks (PyFlink `WatermarkStrategy`). Immutable: every
    `with_*` returns a new strategy, so one base strategy can be shared by several sources.

    Build one with the static constructors; the fields are the picklable description the runtime reads.
    """

    generator_factory: Callable[[WatermarkGeneratorContext], WatermarkGenerator]
    timestamp_assigner: Any = None
    idle_timeout_ms: int | None = None

    # -- PyFlink constructors ------------------------------------------------------------------------

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        """No watermarks: event-time windows and timers never fire (until a bounded input ends).

        Returns:
            The strategy.
        """
        return WatermarkStrategy(_NoWatermarksFactory())

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        """Watermarks for timestamps that never decrease: the watermark is the highest timestamp seen minus 1 ms.

        Returns:
            The strategy.
        """
        return WatermarkStrategy(_AscendingFactory())

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration | int) -> WatermarkStrategy:
        """Watermarks that trail the highest timestamp seen by a bound: records up to that late are still on
        time.

        Args:
            max_out_of_orderness: The bound (a Duration, or ms).

        Returns:
            The strategy; add `with_timestamp_assigner(...)` and, for quiet inputs, `with_idleness(...)`.

        Example:
            ```python
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)) \
                .with_timestamp_assigner(lambda event, _: event["ts"])
            ```
        """
        millis = _duration_millis(max_out_of_orderness, "max out-of-orderness")
        return WatermarkStrategy(_BoundedFactory(_non_negative_bound(millis)))

    @staticmethod
    def for_generator(generator_supplier: Any) -> WatermarkStrategy:
        """A custom generator (Flink's Java `forGenerator`). `generator_supplier` is called once per split or
        subtask at task open, as `supplier(context)` if it takes an argument, else `supplier()`."""
        return WatermarkStrategy(_UserFactory.of(generator_supplier))

    # -- PyFlink modifiers ---------------------------------------------------------------------------

    def with_timestamp_assigner(self, timestamp_assigner: Any) -> WatermarkStrategy:
        """A TimestampAssigner, or a callable `(value, record_timestamp) -> int` milliseconds."""
        _validate_assigner(timestamp_assigner)
        return dataclasses.replace(self, timestamp_assigner=timestamp_assigner)

    def with_idleness(self, idle_timeout: Duration | int) -> WatermarkStrategy:
        """Mark a split idle after `idle_timeout` without events, so it stops holding back event time."""
        millis = _duration_millis(idle_timeout, "idle timeout")
        return dataclasses.replace(self, idle_timeout_ms=_positive_idle_timeout(millis))

    # -- what the runtime calls at task open ---------------------------------------------------------

    def create_watermark_generator(self, context: WatermarkGeneratorContext | None = None) -> WatermarkGenerator:
        """A fresh generator for one split or subtask, wrapped for idleness when `with_idleness` was set."""
        context = context if context is not None else WatermarkGeneratorContext()
        generator = _check_generator(self.generator_factory(context), self.generator_factory)
        if self.idle_timeout_ms is not None:
            generator = WatermarksWithIdleness(generator, self.idle_timeout_ms, context.clock)
        return generator

    def create_timestamp_assigner(self) -> Callable[[Any, int | None], Any] | None:
        """`(value, record_timestamp) -> timestamp`, or None when no assigner was set (records keep the
        timestamp they carry). The result is the user's raw return value: pass it through `checked_timestamp`."""
        assigner = self.timestamp_assigner
        if assigner is None:
            return None
        extract = getattr(assigner, "extract_timestamp", None)
        return extract if extract is not None else assigner


def _validate_assigner(assigner: Any) -> None:
    extract = getattr(assigner, "extract_timestamp", None)
    function = extract if callable(extract) else assigner
    if not callable(function):
        raise InvalidJobError(
            f"with_timestamp_assigner() needs a TimestampAssigner or a function (value, record_timestamp) -> int, "
            f"got {_short_repr(assigner)}"
        )
    if _accepts_positional(function, 2) is False:
        raise InvalidJobError(
            f"timestamp assigner {_short_repr(assigner)} must accept two arguments (value, record_timestamp); "
            "write e.g. lambda value, record_timestamp: value[1]"
        )


__all__ = [
    "AscendingTimestampsWatermarks",
    "BoundedOutOfOrdernessWatermarks",
    "Clock",
    "NoWatermarksGenerator",
    "TimestampAssigner",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkGeneratorContext",
    "WatermarkOutput",
    "WatermarkStrategy",
    "WatermarksWithIdleness",
    "checked_timestamp",
]


class _PeriodicAssignerGenerator(WatermarkGenerator):
    """Flink's legacy AssignerWithPeriodicWatermarks as a generator: each periodic emit asks the assigner
    for its current watermark (None: none yet)."""

    def __init__(self, assigner: Any) -> None:
        self._assigner = assigner

    def on_event(self, event: Any, event_timestamp: int | None, output: WatermarkOutput) -> None:
        pass

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        current = self._assigner.get_current_watermark()
        if current is not None:
            output.emit_watermark(current if isinstance(current, Watermark) else Watermark(int(current)))


class AssignerWithPeriodicWatermarksWrapper:
    """PyFlink's name for a legacy periodic assigner: an object with `extract_timestamp(value,
    previous_timestamp)` and `get_current_watermark()`, usable wherever a WatermarkStrategy is
    (`assign_timestamps_and_watermarks`, `from_source`)."""

    def __init__(self, assigner: Any) -> None:
        for method in ("extract_timestamp", "get_current_watermark"):
            if not callable(getattr(assigner, method, None)):
                raise InvalidJobError(
                    f"AssignerWithPeriodicWatermarksWrapper needs an assigner with extract_timestamp(value, "
                    f"previous_timestamp) and get_current_watermark(); {_short_repr(assigner)} has no {method}()"
                )
        self._strategy = WatermarkStrategy.for_generator(
            lambda: _PeriodicAssignerGenerator(assigner)
        ).with_timestamp_assigner(assigner)

    def create_watermark_generator(self, context: WatermarkGeneratorContext | None = None) -> WatermarkGenerator:
        """A generator that asks the wrapped assigner for its current watermark at every periodic emit.

        Args:
            context: The generator's context.

        Returns:
            The WatermarkGenerator.
        """
        return self._strategy.create_watermark_generator(context)

    def create_timestamp_assigner(self) -> Callable[[Any, int | None], Any] | None:
        """The wrapped assigner's `extract_timestamp`, as a timestamp assigner."""
        return self._strategy.create_timestamp_assigner()
