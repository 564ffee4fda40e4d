"""Triggers: when a window pane is evaluated and when it is purged (PyFlink `pyflink.datastream.window`).

A trigger is picklable configuration shared by every key and window of an operator, so it must keep nothing in
attributes that changes per pane: whatever it needs to remember goes into state through
`ctx.get_partitioned_state(descriptor)`, which the window operator scopes to the current key AND window.

The window operator calls, on the task thread, with the record's (or timer's) key set:
1. `on_element` for every element added to a pane (after the element is in the pane's contents);
2. `on_event_time` / `on_processing_time` when a timer the trigger registered for that pane fires;
3. `on_merge` when a merging assigner merged panes (only if `can_merge()`); state of the merged windows is
   folded into the result window with `ctx.merge_partitioned_state(descriptor)`;
4. `clear` when the window is dropped (cleanup time, or merged away), to delete its timers and state.
A FIRE result evaluates the window function on the pane's contents; a PURGE result clears the contents.
"""

from __future__ import annotations

import abc
import enum
from typing import Any, Generic, TypeVar

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import Duration
from fluvial.datastream.state import ReducingStateDescriptor, State, StateDescriptor

T = TypeVar("T")
W = TypeVar("W")


class TriggerResult(enum.Enum):
    """What the operator does with a pane after a trigger call. (fire, purge) as the value."""

    CONTINUE = (False, False)
    FIRE = (True, False)
    PURGE = (False, True)
    FIRE_AND_PURGE = (True, True)

    def is_fire(self) -> bool:
        """Whether the window's function is evaluated (FIRE, FIRE_AND_PURGE)."""
        return self.value[0]

    def is_purge(self) -> bool:
        """Whether the window's contents are cleared (PURGE, FIRE_AND_PURGE)."""
        return self.value[1]


class TriggerContext(abc.ABC):
    """What the window operator gives a trigger; bound to one key and one (actual, not state) window.

    Timers are per (key, window): registering the same time twice leaves one timer; deleting an absent timer is
    not an error. A timer registered for a time the clock has already passed fires at the next clock advance.
    """

    @abc.abstractmethod
    def get_current_processing_time(self) -> int: ...

    @abc.abstractmethod
    def get_current_watermark(self) -> int:
        """The operator's event-time clock (MIN_WATERMARK before the first watermark)."""

    @abc.abstractmethod
    def register_processing_time_timer(self, time: int) -> None:
        """Call `on_processing_time(time, window, ctx)` once the processing-time clock reaches `time`."""

    @abc.abstractmethod
    def register_event_time_timer(self, time: int) -> None:
        """Call `on_event_time(time, window, ctx)` once the watermark reaches `time` (watermark >= time)."""

    @abc.abstractmethod
    def delete_processing_time_timer(self, time: int) -> None: ...

    @abc.abstractmethod
    def delete_event_time_timer(self, time: int) -> None: ...

    @abc.abstractmethod
    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
        """A state handle scoped to the current key AND the current window."""

    def get_metric_group(self) -> Any:
        """The MetricGroup of the window operator (`fluvial.metrics`)."""
        raise NotImplementedError(f"{type(self).__name__} offers no metric group: it runs outside a window operator")


class OnMergeContext(TriggerContext):
    """The context of `Trigger.on_merge`: its window is the merge result."""

    @abc.abstractmethod
    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        """Fold this descriptor's state of every merged window into the result window's, then clear theirs.

        Only merging state (reducing, aggregating, list) can be merged; the descriptor's function combines them.
        """


class Trigger(abc.ABC, Generic[T, W]):
    """Decides when a pane fires. See the module docstring for when each method is called."""

    TriggerContext = TriggerContext
    OnMergeContext = OnMergeContext

    @abc.abstractmethod
    def on_element(self, element: T, timestamp: int | None, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called for every record added to a window.

        Args:
            element: The record.
            timestamp: Its event timestamp, or None.
            window: The window it was added to.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
        """

    @abc.abstractmethod
    def on_processing_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer the trigger registered fires.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """

    @abc.abstractmethod
    def on_event_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer the trigger registered fires.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """

    def can_merge(self) -> bool:
        """True when `on_merge` is implemented, so the trigger can be used with session windows."""
        return False

    def on_merge(self, window: W, ctx: OnMergeContext) -> None:
        """Called when windows merge; only triggers whose `can_merge()` is True are asked.

        Args:
            window: The merged window.
            ctx: The merge context.
        """
        raise NotImplementedError(
            f"{type(self).__name__} cannot merge windows: implement can_merge() -> True and on_merge(window, ctx), "
            "or use it with a non-merging window assigner"
        )

    @abc.abstractmethod
    def clear(self, window: W, ctx: TriggerContext) -> None:
        """Delete the timers and state this trigger keeps for `window`."""


def _sum(a: int, b: int) -> int:
    return a + b


def _min(a: int, b: int) -> int:
    return a if a <= b else b


def _positive_interval(value: Any, owner: str) -> int:
    if isinstance(value, Duration):
        millis = value.millis
    elif isinstance(value, int) and not isinstance(value, bool):
        millis = value
    else:
        raise InvalidJobError(
            f"{owner} interval must be a Duration or an int of milliseconds, got {value!r}: pass e.g. Time.seconds(5)"
        )
    if millis <= 0:
        raise InvalidJobError(f"{owner} interval must be > 0, got {millis} ms: pass e.g. Time.seconds(5)")
    return millis


class _Described:
    """Value semantics for built-in triggers: equal when the same type with the same parameters."""

    def _params(self) -> tuple:
        return ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._params() == self._params()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._params()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self._params()))})"


class EventTimeTrigger(_Described, Trigger[Any, Any]):
    """Fires once the watermark passes the window's end (a timer at max_timestamp()).

    An element for a window the watermark has already passed (late, but within the allowed lateness, or the
    operator would have dropped it) fires at once, so every late element re-emits the window's result.
    """

    @staticmethod
    def create() -> EventTimeTrigger:
        """The trigger that fires a window once the watermark passes its end.

        Returns:
            The trigger.
        """
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called for every record added to a window: registers an event-time timer at the window's end (FIRE at once if
        the watermark is past it).

        Args:
            element: The record.
            timestamp: Its event timestamp, or None.
            window: The window it was added to.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
        """
        max_timestamp = window.max_timestamp()
        if max_timestamp <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(max_timestamp)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer fires: CONTINUE: it does not use processing time.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer fires: FIRE when the watermark reaches the window's end.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """True: the trigger works with merging (session) windows."""
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        # A merged window whose end the watermark already passed fires via on_element of the merging record.
        """Called when windows merge (session windows): carries the trigger's timers and state over to the
        merged window.

        Args:
            window: The merged window.
            ctx: The merge context, with the merged windows' state.
        """
        max_timestamp = window.max_timestamp()
        if max_timestamp > ctx.get_current_watermark():
            ctx.register_event_time_timer(max_timestamp)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        """Called when the window is removed: deletes the window's timer.

        Args:
            window: The window.
            ctx: The trigger context.
        """
        ctx.delete_event_time_timer(window.max_timestamp())


class ProcessingTimeTrigger(_Described, Trigger[Any, Any]):
    """Fires once the processing-time clock passes the window's end."""

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        """The trigger that fires a window once the wall clock passes its end.

        Returns:
            The trigger.
        """
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called for every record added to a window: registers a processing-time timer at the window's end.

        Args:
            element: The record.
            timestamp: Its event timestamp, or None.
            window: The window it was added to.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
        """
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer fires: FIRE when the wall clock reaches the window's end.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.FIRE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer fires: CONTINUE: it does not use event time.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """True: the trigger works with merging (session) windows."""
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        """Called when windows merge (session windows): carries the trigger's timers and state over to the
        merged window.

        Args:
            window: The merged window.
            ctx: The merge context, with the merged windows' state.
        """
        max_timestamp = window.max_timestamp()
        if max_timestamp > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(max_timestamp)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        """Called when the window is removed: deletes the window's timer.

        Args:
            window: The window.
            ctx: The trigger context.
        """
        ctx.delete_processing_time_timer(window.max_timestamp())


class CountTrigger(_Described, Trigger[Any, Any]):
    """Fires (without purging) when a pane has received `count` elements since it last fired.

    The count is ReducingState 'count' per window, reset on fire; merged windows add their counts, and a merged
    count at or above `count` fires on the next element (as in Flink).
    """

    def __init__(self, count: int) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            raise InvalidJobError(f"CountTrigger count must be a positive int, got {count!r}: pass e.g. 100")
        self._count = count
        self._count_state_descriptor = ReducingStateDescriptor("count", _sum)

    @staticmethod
    def of(count: int) -> CountTrigger:
        """A trigger that fires every `count` records of a window.

        Args:
            count: Records per firing, at least 1.

        Returns:
            The trigger.
        """
        return CountTrigger(count)

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called for every record added to a window: counts the record and FIREs (resetting the count) when it reaches
        the trigger's count.

        Args:
            element: The record.
            timestamp: Its event timestamp, or None.
            window: The window it was added to.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
        """
        count_state = ctx.get_partitioned_state(self._count_state_descriptor)
        count_state.add(1)  # type: ignore[attr-defined]
        if count_state.get() >= self._count:  # type: ignore[attr-defined]
            count_state.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer fires: CONTINUE.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer fires: CONTINUE.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """True: the trigger works with merging (session) windows."""
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        """Called when windows merge (session windows): carries the trigger's timers and state over to the
        merged window.

        Args:
            window: The merged window.
            ctx: The merge context, with the merged windows' state.
        """
        ctx.merge_partitioned_state(self._count_state_descriptor)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        """Called when the window is removed: clears the window's count.

        Args:
            window: The window.
            ctx: The trigger context.
        """
        ctx.get_partitioned_state(self._count_state_descriptor).clear()

    def _params(self) -> tuple:
        return (self._count,)


class PurgingTrigger(_Described, Trigger[Any, Any]):
    """Wraps a trigger and turns each FIRE it returns into FIRE_AND_PURGE."""

    def __init__(self, nested_trigger: Trigger) -> None:
        if not isinstance(nested_trigger, Trigger):
            raise InvalidJobError(
                f"PurgingTrigger wraps a Trigger, got {nested_trigger!r}: pass e.g. CountTrigger.of(10)"
            )
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        """Wrap a trigger so that every FIRE also purges the window's contents.

        Args:
            nested_trigger: The trigger.

        Returns:
            The purging trigger.
        """
        return PurgingTrigger(nested_trigger)

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called for every record added to a window: asks the nested trigger and turns a FIRE into FIRE_AND_PURGE.

        Args:
            element: The record.
            timestamp: Its event timestamp, or None.
            window: The window it was added to.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
        """
        return _purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer fires: as the nested trigger, with FIRE made FIRE_AND_PURGE.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return _purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer fires: as the nested trigger, with FIRE made FIRE_AND_PURGE.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return _purging(self.nested_trigger.on_event_time(time, window, ctx))

    def can_merge(self) -> bool:
        """Whether the nested trigger can merge."""
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        """Called when windows merge (session windows): carries the trigger's timers and state over to the
        merged window.

        Args:
            window: The merged window.
            ctx: The merge context, with the merged windows' state.
        """
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        """Called when the window is removed: clears the nested trigger.

        Args:
            window: The window.
            ctx: The trigger context.
        """
        self.nested_trigger.clear(window, ctx)

    def _params(self) -> tuple:
        return (self.nested_trigger,)


def _purging(result: TriggerResult) -> TriggerResult:
    return TriggerResult.FIRE_AND_PURGE if result.value[0] else result


class _ContinuousTrigger(_Described, Trigger[Any, Any]):
    """Shared by the continuous triggers: the next fire time is ReducingState 'fire-time' (min) per window.

    Fire times are aligned to multiples of `interval` (floor, also for negative times) and never later than
    the window's max_timestamp(), so the last periodic fire coincides with the window's end.
    """

    def __init__(self, interval: Any) -> None:
        self.interval = _positive_interval(interval, type(self).__name__)
        self.state_desc = ReducingStateDescriptor("fire-time", _min)

    @classmethod
    def of(cls, interval: Any) -> Any:
        return cls(interval)

    def _register_next_fire(self, time: int, window: Any, ctx: TriggerContext, fire_state: Any) -> None:
        next_fire = min(time + self.interval, window.max_timestamp())
        fire_state.add(next_fire)
        self._register(ctx, next_fire)

    def _register(self, ctx: TriggerContext, time: int) -> None:
        raise NotImplementedError

    def _delete(self, ctx: TriggerContext, time: int) -> None:
        raise NotImplementedError

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = ctx.get_partitioned_state(self.state_desc).get()  # type: ignore[attr-defined]
        if next_fire is not None:
            self._register(ctx, next_fire)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        fire_state = ctx.get_partitioned_state(self.state_desc)
        next_fire = fire_state.get()  # type: ignore[attr-defined]
        if next_fire is not None:
            self._delete(ctx, next_fire)
            fire_state.clear()

    def _params(self) -> tuple:
        return (self.interval,)


class ContinuousEventTimeTrigger(_ContinuousTrigger):
    """Fires every `interval` of event time while the window is open, and once more at its end.

    On the first element of a pane, the next fire is the interval boundary after the element's timestamp;
    each periodic fire schedules the next one. A late element (window end <= watermark) fires at once.
    """

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called for every record added to a window: registers the next event-time timer of its interval (and the
        window's end).

        Args:
            element: The record.
            timestamp: Its event timestamp, or None.
            window: The window it was added to.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
        """
        max_timestamp = window.max_timestamp()
        if max_timestamp <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(max_timestamp)
        fire_state = ctx.get_partitioned_state(self.state_desc)
        if fire_state.get() is None:  # type: ignore[attr-defined]
            if timestamp is None:
                raise InvalidJobError(
                    "ContinuousEventTimeTrigger got a record without a timestamp: assign timestamps with "
                    "assign_timestamps_and_watermarks(...) or use ContinuousProcessingTimeTrigger"
                )
            self._register_next_fire(timestamp - timestamp % self.interval, window, ctx, fire_state)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer fires: CONTINUE.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer fires: FIRE at each interval of event time and at the window's end.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_state = ctx.get_partitioned_state(self.state_desc)
        if fire_state.get() == time:  # type: ignore[attr-defined]
            fire_state.clear()
            self._register_next_fire(time, window, ctx, fire_state)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def _register(self, ctx: TriggerContext, time: int) -> None:
        ctx.register_event_time_timer(time)

    def _delete(self, ctx: TriggerContext, time: int) -> None:
        ctx.delete_event_time_timer(time)


class ContinuousProcessingTimeTrigger(_ContinuousTrigger):
    """Fires every `interval` of processing time, on interval boundaries of the operator's clock."""

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called for every record added to a window: registers the next processing-time timer of its interval.

        Args:
            element: The record.
            timestamp: Its event timestamp, or None.
            window: The window it was added to.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
        """
        fire_state = ctx.get_partitioned_state(self.state_desc)
        if fire_state.get() is None:  # type: ignore[attr-defined]
            now = ctx.get_current_processing_time()
            self._register_next_fire(now - now % self.interval, window, ctx, fire_state)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer fires: FIRE at each interval of processing time.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        fire_state = ctx.get_partitioned_state(self.state_desc)
        if fire_state.get() == time:  # type: ignore[attr-defined]
            fire_state.clear()
            self._register_next_fire(time, window, ctx, fire_state)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer fires: CONTINUE.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.CONTINUE

    def _register(self, ctx: TriggerContext, time: int) -> None:
        ctx.register_processing_time_timer(time)

    def _delete(self, ctx: TriggerContext, time: int) -> None:
        ctx.delete_processing_time_timer(time)


class NeverTrigger(_Described, Trigger[Any, Any]):
    """Never fires: the default of GlobalWindows, which needs a user trigger to emit anything."""

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called for every record added to a window: CONTINUE: never fires.

        Args:
            element: The record.
            timestamp: Its event timestamp, or None.
            window: The window it was added to.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window: CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
        """
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer fires: CONTINUE.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer fires: CONTINUE.

        Args:
            time: The timer's time (ms).
            window: The timer's window.
            ctx: Registers timers and reads partitioned state of the window.

        Returns:
            What to do with the window.
        """
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """True: the trigger works with merging (session) windows."""
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        """Called when windows merge (session windows): carries the trigger's timers and state over to the
        merged window.

        Args:
            window: The merged window.
            ctx: The merge context, with the merged windows' state.
        """
        pass

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        """Called when the window is removed: nothing to clear.

        Args:
            window: The window.
            ctx: The trigger context.
        """
        pass
