"""Triggers against a fake TriggerContext (timers and per-window state as the window operator keeps them), and
evictors on (value, timestamp) lists."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import MIN_WATERMARK, Time
from fluvial.datastream.state import ReducingStateDescriptor
from fluvial.datastream.window import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountEvictor,
    CountTrigger,
    CountWindow,
    DeltaEvictor,
    EventTimeTrigger,
    EvictorContext,
    GlobalWindow,
    NeverTrigger,
    OnMergeContext,
    ProcessingTimeTrigger,
    PurgingTrigger,
    TimeEvictor,
    TimestampedValue,
    TimeWindow,
    Trigger,
    TriggerContext,
    TriggerResult,
)

CONTINUE, FIRE, PURGE, FIRE_AND_PURGE = (
    TriggerResult.CONTINUE,
    TriggerResult.FIRE,
    TriggerResult.PURGE,
    TriggerResult.FIRE_AND_PURGE,
)


class FakeReducingState:
    def __init__(self, table: dict, key: Any, reduce: Any) -> None:
        self._table, self._key, self._reduce = table, key, reduce

    def get(self) -> Any:
        return self._table.get(self._key)

    def add(self, value: Any) -> None:
        current = self._table.get(self._key)
        self._table[self._key] = value if current is None else self._reduce(current, value)

    def clear(self) -> None:
        self._table.pop(self._key, None)


class FakeOperator:
    """What a window operator keeps for one key: clocks, timers per (time, window), state per (name, window)."""

    def __init__(self, watermark: int = MIN_WATERMARK, now: int = 0) -> None:
        self.watermark = watermark
        self.now = now
        self.event_timers: set[tuple[int, Any]] = set()
        self.processing_timers: set[tuple[int, Any]] = set()
        self.state: dict[tuple[str, Any], Any] = {}

    def context(self, window: Any, merged_windows: list | None = None) -> FakeContext:
        return FakeContext(self, window, merged_windows or [])

    def advance_watermark(self, trigger: Trigger, watermark: int) -> list[tuple[int, Any, TriggerResult]]:
        """Fire due event-time timers in time order, as the operator does; returns (time, window, result)."""
        fired = []
        self.watermark = watermark
        while True:
            due = sorted(t for t in self.event_timers if t[0] <= watermark)
            if not due:
                return fired
            time, window = due[0]
            self.event_timers.discard((time, window))
            fired.append((time, window, trigger.on_event_time(time, window, self.context(window))))

    def advance_processing_time(self, trigger: Trigger, now: int) -> list[tuple[int, Any, TriggerResult]]:
        fired = []
        self.now = now
        while True:
            due = sorted(t for t in self.processing_timers if t[0] <= now)
            if not due:
                return fired
            time, window = due[0]
            self.processing_timers.discard((time, window))
            fired.append((time, window, trigger.on_processing_time(time, window, self.context(window))))


class FakeContext(OnMergeContext):
    def __init__(self, operator: FakeOperator, window: Any, merged_windows: list) -> None:
        self.operator, self.window, self.merged_windows = operator, window, merged_windows

    def get_current_processing_time(self) -> int:
        return self.operator.now

    def get_current_watermark(self) -> int:
        return self.operator.watermark

    def register_processing_time_timer(self, time: int) -> None:
        self.operator.processing_timers.add((time, self.window))

    def register_event_time_timer(self, time: int) -> None:
        self.operator.event_timers.add((time, self.window))

    def delete_processing_time_timer(self, time: int) -> None:
        self.operator.processing_timers.discard((time, self.window))

    def delete_event_time_timer(self, time: int) -> None:
        self.operator.event_timers.discard((time, self.window))

    def get_partitioned_state(self, state_descriptor: Any) -> FakeReducingState:
        assert isinstance(state_descriptor, ReducingStateDescriptor)
        reduce = state_descriptor.get_reduce_function().reduce
        return FakeReducingState(self.operator.state, (state_descriptor.name, self.window), reduce)

    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        target = self.get_partitioned_state(state_descriptor)
        for window in self.merged_windows:
            value = self.operator.state.pop((state_descriptor.name, window), None)
            if value is not None:
                target.add(value)


W = TimeWindow(0, 10_000)


# --------------------------------------------------------------------------------------------------------------
# TriggerResult and the base class


@pytest.mark.parametrize(
    ("result", "fire", "purge"),
    [(CONTINUE, False, False), (FIRE, True, False), (PURGE, False, True), (FIRE_AND_PURGE, True, True)],
)
def test_trigger_result_flags(result: TriggerResult, fire: bool, purge: bool) -> None:
    assert result.is_fire() is fire
    assert result.is_purge() is purge


class FiresOnEveryElement(Trigger):
    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        return FIRE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return PURGE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        pass


def test_a_custom_trigger_cannot_merge_unless_it_says_so() -> None:
    trigger = FiresOnEveryElement()
    assert trigger.can_merge() is False
    with pytest.raises(NotImplementedError, match="FiresOnEveryElement cannot merge windows: implement can_merge"):
        trigger.on_merge(W, FakeOperator().context(W))
    assert Trigger.TriggerContext is TriggerContext and Trigger.OnMergeContext is OnMergeContext


def test_trigger_context_metric_group_explains_itself() -> None:
    with pytest.raises(NotImplementedError, match="no metric group"):
        FakeOperator().context(W).get_metric_group()


# --------------------------------------------------------------------------------------------------------------
# EventTimeTrigger / ProcessingTimeTrigger


def test_event_time_trigger_registers_a_timer_at_max_timestamp_and_fires_on_it() -> None:
    operator, trigger = FakeOperator(watermark=0), EventTimeTrigger.create()
    assert trigger.on_element("a", 1234, W, operator.context(W)) is CONTINUE
    assert operator.event_timers == {(9999, W)}
    assert operator.advance_watermark(trigger, 9998) == []
    assert operator.advance_watermark(trigger, 9999) == [(9999, W, FIRE)]
    assert trigger.on_event_time(5000, W, operator.context(W)) is CONTINUE
    assert trigger.on_processing_time(9999, W, operator.context(W)) is CONTINUE


def test_event_time_trigger_fires_at_once_for_a_late_element() -> None:
    operator, trigger = FakeOperator(watermark=9999), EventTimeTrigger.create()
    assert trigger.on_element("late", 10, W, operator.context(W)) is FIRE
    assert operator.event_timers == set()


def test_event_time_trigger_clear_and_merge() -> None:
    operator, trigger = FakeOperator(watermark=100), EventTimeTrigger.create()
    trigger.on_element("a", 1, W, operator.context(W))
    trigger.clear(W, operator.context(W))
    assert operator.event_timers == set()
    assert trigger.can_merge()
    merged = TimeWindow(0, 20_000)
    trigger.on_merge(merged, operator.context(merged, [W]))
    assert operator.event_timers == {(19_999, merged)}
    operator.watermark = 30_000
    past = TimeWindow(0, 25_000)
    trigger.on_merge(past, operator.context(past, [merged]))
    assert (24_999, past) not in operator.event_timers  # past windows fire via on_element, not a timer


def test_processing_time_trigger() -> None:
    operator, trigger = FakeOperator(now=500), ProcessingTimeTrigger.create()
    assert trigger.on_element("a", None, W, operator.context(W)) is CONTINUE
    assert operator.processing_timers == {(9999, W)}
    assert operator.advance_processing_time(trigger, 9999) == [(9999, W, FIRE)]
    assert trigger.on_event_time(9999, W, operator.context(W)) is CONTINUE
    trigger.on_element("a", None, W, operator.context(W))
    trigger.clear(W, operator.context(W))
    assert operator.processing_timers == set()
    merged = TimeWindow(0, 20_000)
    trigger.on_merge(merged, operator.context(merged, [W]))
    assert operator.processing_timers == {(19_999, merged)}


# --------------------------------------------------------------------------------------------------------------
# CountTrigger / PurgingTrigger / NeverTrigger


def test_count_trigger_fires_every_n_elements_and_resets() -> None:
    operator, trigger, window = FakeOperator(), CountTrigger.of(3), CountWindow(0)
    results = [trigger.on_element(i, None, window, operator.context(window)) for i in range(7)]
    assert results == [CONTINUE, CONTINUE, FIRE, CONTINUE, CONTINUE, FIRE, CONTINUE]
    assert operator.state == {("count", window): 1}
    trigger.clear(window, operator.context(window))
    assert operator.state == {}


def test_count_trigger_counts_per_window() -> None:
    operator, trigger = FakeOperator(), CountTrigger.of(2)
    a, b = CountWindow(0), CountWindow(1)
    assert trigger.on_element(1, None, a, operator.context(a)) is CONTINUE
    assert trigger.on_element(1, None, b, operator.context(b)) is CONTINUE
    assert trigger.on_element(1, None, a, operator.context(a)) is FIRE
    assert operator.state == {("count", b): 1}


def test_count_trigger_merges_by_summing() -> None:
    operator, trigger = FakeOperator(), CountTrigger.of(4)
    a, b, merged = TimeWindow(0, 5), TimeWindow(4, 9), TimeWindow(0, 9)
    for _ in range(2):
        trigger.on_element("x", 1, a, operator.context(a))
    trigger.on_element("x", 5, b, operator.context(b))
    assert trigger.can_merge()
    trigger.on_merge(merged, operator.context(merged, [a, b]))
    assert operator.state == {("count", merged): 3}
    assert trigger.on_element("x", 6, merged, operator.context(merged)) is FIRE


@given(n=st.integers(1, 20), elements=st.integers(0, 100))
def test_count_trigger_fires_exactly_every_nth(n: int, elements: int) -> None:
    operator, trigger, window = FakeOperator(), CountTrigger.of(n), CountWindow(0)
    fired = [i for i in range(elements) if trigger.on_element(i, None, window, operator.context(window)).is_fire()]
    assert fired == [i for i in range(elements) if (i + 1) % n == 0]


def test_purging_trigger_turns_fire_into_fire_and_purge() -> None:
    operator, window = FakeOperator(), CountWindow(0)
    trigger = PurgingTrigger.of(CountTrigger.of(2))
    results = [trigger.on_element(i, None, window, operator.context(window)) for i in range(4)]
    assert results == [CONTINUE, FIRE_AND_PURGE, CONTINUE, FIRE_AND_PURGE]
    event_time = PurgingTrigger.of(EventTimeTrigger.create())
    assert event_time.on_event_time(9999, W, operator.context(W)) is FIRE_AND_PURGE
    assert event_time.on_event_time(5, W, operator.context(W)) is CONTINUE
    custom = PurgingTrigger.of(FiresOnEveryElement())
    assert custom.on_element("x", 0, W, operator.context(W)) is FIRE_AND_PURGE
    assert custom.on_processing_time(0, W, operator.context(W)) is PURGE
    assert custom.can_merge() is False and PurgingTrigger.of(CountTrigger.of(2)).can_merge() is True


def test_purging_trigger_delegates_clear_and_merge() -> None:
    operator, trigger = FakeOperator(), PurgingTrigger.of(CountTrigger.of(5))
    a, merged = TimeWindow(0, 5), TimeWindow(0, 9)
    trigger.on_element("x", 1, a, operator.context(a))
    trigger.on_merge(merged, operator.context(merged, [a]))
    assert operator.state == {("count", merged): 1}
    trigger.clear(merged, operator.context(merged))
    assert operator.state == {}


def test_purging_trigger_rejects_a_non_trigger() -> None:
    with pytest.raises(InvalidJobError, match="PurgingTrigger wraps a Trigger, got 3"):
        PurgingTrigger.of(3)  # type: ignore[arg-type]


def test_never_trigger_never_fires() -> None:
    operator, trigger, window = FakeOperator(), NeverTrigger(), GlobalWindow.get()
    assert trigger.on_element("x", 1, window, operator.context(window)) is CONTINUE
    assert trigger.on_event_time(window.max_timestamp(), window, operator.context(window)) is CONTINUE
    assert trigger.on_processing_time(window.max_timestamp(), window, operator.context(window)) is CONTINUE
    assert operator.event_timers == set() and operator.processing_timers == set()


# --------------------------------------------------------------------------------------------------------------
# Continuous triggers


def test_continuous_event_time_trigger_fires_at_interval_boundaries_and_at_the_end() -> None:
    operator, trigger = FakeOperator(watermark=0), ContinuousEventTimeTrigger.of(Time.seconds(1))
    assert trigger.on_element("a", 2500, W, operator.context(W)) is CONTINUE
    assert operator.event_timers == {(3000, W), (9999, W)}
    fired = operator.advance_watermark(trigger, 20_000)
    assert [(time, result) for time, _, result in fired] == [(t, FIRE) for t in range(3000, 10_000, 1000)] + [
        (9999, FIRE)
    ]
    assert operator.event_timers == set()


def test_continuous_event_time_trigger_keeps_one_pending_fire() -> None:
    operator, trigger = FakeOperator(watermark=0), ContinuousEventTimeTrigger.of(1000)
    trigger.on_element("a", 2500, W, operator.context(W))
    trigger.on_element("b", 7300, W, operator.context(W))  # a fire time is pending: no new one
    assert operator.state == {("fire-time", W): 3000}
    assert operator.advance_watermark(trigger, 3500) == [(3000, W, FIRE)]
    assert operator.state == {("fire-time", W): 4000}


def test_continuous_event_time_trigger_late_element_clear_and_merge() -> None:
    operator, trigger = FakeOperator(watermark=9999), ContinuousEventTimeTrigger.of(1000)
    assert trigger.on_element("late", 100, W, operator.context(W)) is FIRE
    operator.watermark = 0
    trigger.on_element("a", 100, W, operator.context(W))
    trigger.clear(W, operator.context(W))
    assert operator.state == {} and operator.event_timers == {(9999, W)}  # the end timer is the operator's to drop
    a, b, merged = TimeWindow(0, 5000), TimeWindow(4000, 9000), TimeWindow(0, 9000)
    trigger.on_element("x", 3200, a, operator.context(a))
    trigger.on_element("y", 1200, b, operator.context(b))
    trigger.on_merge(merged, operator.context(merged, [a, b]))
    assert operator.state == {("fire-time", merged): 2000}  # the earlier of the pending fires
    assert (2000, merged) in operator.event_timers
    assert trigger.can_merge()


def test_continuous_event_time_trigger_aligns_negative_timestamps_down() -> None:
    operator, trigger = FakeOperator(watermark=-100_000), ContinuousEventTimeTrigger.of(1000)
    window = TimeWindow(-10_000, 0)
    trigger.on_element("a", -2500, window, operator.context(window))
    assert operator.state == {("fire-time", window): -2000}


def test_continuous_processing_time_trigger() -> None:
    operator, trigger = FakeOperator(now=2500), ContinuousProcessingTimeTrigger.of(1000)
    assert trigger.on_element("a", None, W, operator.context(W)) is CONTINUE
    assert operator.processing_timers == {(3000, W)}
    fired = operator.advance_processing_time(trigger, 5000)
    assert [(time, result) for time, _, result in fired] == [(3000, FIRE), (4000, FIRE), (5000, FIRE)]
    assert operator.processing_timers == {(6000, W)}
    trigger.clear(W, operator.context(W))
    assert operator.processing_timers == set() and operator.state == {}


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: CountTrigger.of(0), "CountTrigger count must be a positive int, got 0"),
        (lambda: CountTrigger.of(-2), "got -2"),
        (lambda: ContinuousEventTimeTrigger.of(0), "ContinuousEventTimeTrigger interval must be > 0, got 0 ms"),
        (lambda: ContinuousProcessingTimeTrigger.of(Time.seconds(-1)), "must be > 0, got -1000 ms"),
        (lambda: ContinuousEventTimeTrigger.of("1s"), "interval must be a Duration"),
        (lambda: CountEvictor.of(-1), "CountEvictor max_count must be an int >= 0, got -1"),
        (lambda: TimeEvictor.of(-5), "TimeEvictor window_size must be >= 0, got -5 ms"),
        (lambda: DeltaEvictor.of(1.0, 7), "DeltaEvictor needs a delta function"),
    ],
)
def test_invalid_trigger_and_evictor_parameters(build: Any, fragment: str) -> None:
    with pytest.raises(InvalidJobError) as info:
        build()
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "trigger",
    [
        EventTimeTrigger.create(),
        ProcessingTimeTrigger.create(),
        CountTrigger.of(3),
        PurgingTrigger.of(CountTrigger.of(3)),
        ContinuousEventTimeTrigger.of(1000),
        ContinuousProcessingTimeTrigger.of(1000),
        NeverTrigger(),
    ],
)
def test_triggers_pickle_and_compare_by_value(trigger: Trigger) -> None:
    restored = pickle.loads(pickle.dumps(trigger))
    assert restored == trigger and hash(restored) == hash(trigger)
    assert repr(restored) == repr(trigger)


def test_trigger_reprs_and_inequality() -> None:
    assert repr(PurgingTrigger.of(CountTrigger.of(3))) == "PurgingTrigger(CountTrigger(3))"
    assert CountTrigger.of(3) != CountTrigger.of(4)
    assert ContinuousEventTimeTrigger.of(1000) != ContinuousProcessingTimeTrigger.of(1000)


# --------------------------------------------------------------------------------------------------------------
# Evictors


class FakeEvictorContext(EvictorContext):
    def get_current_processing_time(self) -> int:
        return 0

    def get_current_watermark(self) -> int:
        return 0


ECTX = FakeEvictorContext()


def pane(*stamps: int | None) -> list[TimestampedValue]:
    return [TimestampedValue(f"v{i}", ts) for i, ts in enumerate(stamps)]


def test_count_evictor_keeps_the_last_elements_before_or_after() -> None:
    elements = pane(1, 2, 3, 4, 5)
    same_list = elements
    CountEvictor.of(2).evict_before(elements, len(elements), W, ECTX)
    assert elements is same_list and [v for v, _ in elements] == ["v3", "v4"]
    CountEvictor.of(2).evict_after(elements, len(elements), W, ECTX)
    assert len(elements) == 2
    after = pane(1, 2, 3)
    evictor = CountEvictor.of(1, do_evict_after=True)
    evictor.evict_before(after, 3, W, ECTX)
    assert len(after) == 3
    evictor.evict_after(after, 3, W, ECTX)
    assert after == [TimestampedValue("v2", 3)]
    few = pane(1)
    CountEvictor.of(5).evict_before(few, 1, W, ECTX)
    assert few == pane(1)


def test_time_evictor_keeps_elements_newer_than_newest_minus_size() -> None:
    elements = pane(0, 500, 1000, 1500, 2000, None)
    TimeEvictor.of(Time.seconds(1)).evict_before(elements, len(elements), W, ECTX)
    assert [ts for _, ts in elements] == [1500, 2000, None]  # 1000 == cutoff is evicted; no timestamp is kept
    untouched = pane(None, None)
    TimeEvictor.of(10).evict_before(untouched, 2, W, ECTX)
    assert untouched == pane(None, None)
    after = pane(0, 5000)
    TimeEvictor.of(1000, do_evict_after=True).evict_before(after, 2, W, ECTX)
    assert len(after) == 2
    TimeEvictor.of(1000, do_evict_after=True).evict_after(after, 2, W, ECTX)
    assert [ts for _, ts in after] == [5000]


@given(stamps=st.lists(st.integers(-10_000, 10_000), max_size=30), size=st.integers(0, 5000))
def test_time_evictor_property(stamps: list[int], size: int) -> None:
    elements = [(i, ts) for i, ts in enumerate(stamps)]  # plain tuples work too
    TimeEvictor.of(size).evict_before(elements, len(elements), W, ECTX)
    expected = [(i, ts) for i, ts in enumerate(stamps) if ts > max(stamps) - size] if stamps else []
    assert elements == expected


def test_delta_evictor_removes_elements_far_from_the_newest() -> None:
    elements = [(v, None) for v in [1, 5, 9, 10]]
    DeltaEvictor.of(3.0, lambda old, new: abs(new - old)).evict_before(elements, 4, W, ECTX)
    assert elements == [(9, None), (10, None)]


def test_evictors_pickle_and_compare() -> None:
    for evictor in [CountEvictor.of(3), TimeEvictor.of(Time.seconds(2), True)]:
        assert pickle.loads(pickle.dumps(evictor)) == evictor
    assert repr(CountEvictor.of(3, True)) == "CountEvictor(3, True)"
    assert TimeEvictor.of(1000) != TimeEvictor.of(1000, do_evict_after=True)


def test_timestamped_value_accessors() -> None:
    value = TimestampedValue("x", 5)
    assert value.get_value() == "x" and value.get_timestamp() == 5 and value.has_timestamp()
    assert not TimestampedValue("x", None).has_timestamp()
    assert value == ("x", 5)
