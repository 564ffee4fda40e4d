"""WindowOperator in a small harness: records and watermarks pushed by hand, a manual processing-time clock,
outputs (with their timestamps), late records and forwarded watermarks captured. Covers what the end-to-end
tests cannot pin down: exactly when a pane fires, what the triggers and evictors do, that nothing is left in
state or timers once windows are cleaned up, and that a snapshot restored into a fresh operator carries on
with the same results."""

from __future__ import annotations

from collections import defaultdict

import pytest

from fluvial.common.time import MAX_WATERMARK, ManualClock
from fluvial.datastream import transformations as t
from fluvial.datastream.output_tag import OutputTag
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.datastream.window import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessWindowFunction,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TimeEvictor,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from fluvial.runtime.records import Watermark
from fluvial.testing import OperatorHarness

LATE = OutputTag("late")
_A = t.WindowAggregation
_F = t.WindowFunctionKind


class Harness:
    """The window operator in fluvial.testing's OperatorHarness, with this file's shorthand: records as
    (key, value, ts), results as (value, ts) pairs, late records captured."""

    def __init__(
        self,
        assigner,
        *,
        function=None,
        aggregation=_A.REDUCE,
        window_function=None,
        kind=_F.PASS_THROUGH,
        trigger=None,
        evictor=None,
        lateness=0,
        now=0,
        restore=None,
    ) -> None:
        spec = t.WindowSpec(
            function=function,
            key_selector=lambda v: v[0],
            assigner=assigner,
            trigger=trigger,
            evictor=evictor,
            allowed_lateness=lateness,
            late_data_tag=LATE,
            aggregation=aggregation,
            window_function=window_function,
            window_function_kind=kind,
        )
        self.harness = OperatorHarness(spec, "Window", clock=ManualClock(now)).open(restore=restore)
        self.op = self.harness.operator
        self.clock = self.harness.clock

    @property
    def late(self) -> list:
        return [(record.value, record.timestamp) for record in self.harness.side_output(LATE)]

    @property
    def watermarks(self) -> list:
        return [Watermark(ts) for ts in self.harness.watermarks()]

    def elements(self, *records) -> Harness:
        """Records as (key, value, ts), one buffer."""
        self.harness.process_elements(list(records), [r[2] for r in records])
        return self

    def watermark(self, ts: int) -> list:
        self.harness.process_watermark(ts)
        return self.take()

    def advance_to(self, now: int) -> None:
        self.harness.set_processing_time(now)

    def take(self) -> list:
        return [(record.value, record.timestamp) for record in self.harness.take()]

    def state_entries(self) -> dict[str, int]:
        """Non-empty keyed-state tables (window contents, trigger state, merging sets, assigner counters)."""
        return self.harness.keyed_state_entries()

    def timer_count(self) -> int:
        return self.harness.timer_count()


def add(a, b):
    return a[0], a[1] + b[1], max(a[2], b[2])


def sums(results):
    return [(value[0], value[1], ts) for value, ts in results]


# -- event-time firing and cleanup ------------------------------------------------------------------------------


@pytest.mark.parametrize("aggregation", ["reduce", "elements"])  # the fast path, and the general one
def test_tumbling_fires_when_the_watermark_reaches_the_max_timestamp_and_leaves_nothing(aggregation):
    if aggregation == "reduce":
        h = Harness(TumblingEventTimeWindows.of(1000), function=add)
    else:
        h = Harness(
            TumblingEventTimeWindows.of(1000),
            aggregation=_A.ELEMENTS,
            kind=_F.APPLY,
            window_function=lambda key, window, inputs: [(key, sum(v[1] for v in inputs), window.end)],
        )
    h.elements(("a", 1, 10), ("b", 2, 500), ("a", 3, 999), ("a", 4, 1000))
    assert h.watermark(998) == []
    fired = h.watermark(999)
    assert sorted((v[0], v[1], ts) for v, ts in fired) == [("a", 4, 999), ("b", 2, 999)]
    assert h.watermarks[-1] == Watermark(999)  # forwarded after the results it released
    assert [(v[0], v[1], ts) for v, ts in h.watermark(MAX_WATERMARK)] == [("a", 4, 1999)]
    assert h.state_entries() == {}
    assert h.timer_count() == 0


def test_allowed_lateness_keeps_the_pane_until_its_cleanup_time_then_drops_it():
    h = Harness(TumblingEventTimeWindows.of(1000), function=add, lateness=500)
    h.elements(("a", 1, 100))
    assert sums(h.watermark(999)) == [("a", 1, 999)]
    h.elements(("a", 2, 200))  # late but allowed: fires at once with everything so far
    assert sums(h.take()) == [("a", 3, 999)]
    assert h.state_entries() != {}
    h.watermark(1498)
    assert h.state_entries() != {}  # cleanup is at 999 + 500
    h.watermark(1499)
    assert h.state_entries() == {} and h.timer_count() == 0
    h.elements(("a", 4, 300))  # now late
    assert h.take() == [] and [v for v, _ in h.late] == [("a", 4, 300)]


class CountingProcess(ProcessWindowFunction):
    """Counts its firings per window in window_state, which clear() must remove."""

    def __init__(self) -> None:
        self.cleared = []

    def process(self, key, context, elements):
        state = context.window_state().get_state(ValueStateDescriptor("firings"))
        state.update((state.value() or 0) + 1)
        yield key, context.window().start, state.value(), sorted(e[1] for e in elements)

    def clear(self, context):
        context.window_state().get_state(ValueStateDescriptor("firings")).clear()
        self.cleared.append(context.window().start)


def test_process_window_function_window_state_is_per_window_and_cleared_with_it():
    function = CountingProcess()
    h = Harness(
        TumblingEventTimeWindows.of(1000),
        aggregation=_A.ELEMENTS,
        kind=_F.PROCESS,
        window_function=function,
        lateness=1000,
    )
    h.elements(("a", 1, 100), ("a", 2, 1100))
    assert [v for v, _ in h.watermark(999)] == [("a", 0, 1, [1])]
    h.elements(("a", 3, 200))
    assert [v for v, _ in h.take()] == [("a", 0, 2, [1, 3])]  # second firing of the same window
    assert [v for v, _ in h.watermark(1999)] == [("a", 1000, 1, [2])]  # another window: its own count
    assert function.cleared == [0]  # [0,1000) cleaned up at 1999
    h.watermark(MAX_WATERMARK)
    assert function.cleared == [0, 1000]
    assert h.state_entries() == {} and h.timer_count() == 0


def test_pre_aggregated_tumbling_panes_fire_once_clear_their_window_state_and_leave_nothing():
    # the fast path (reduce, EventTimeTrigger, no lateness): a pane fires and is dropped by one timer
    function = CountingProcess()
    h = Harness(
        TumblingEventTimeWindows.of(1000),
        function=lambda a, b: (a[0], a[1] + b[1], b[2]),
        kind=_F.PROCESS,
        window_function=function,
    )
    h.elements(("a", 1, 100), ("b", 2, 200), ("a", 3, 1100), ("a", 4, 300))
    assert [v for v, _ in h.watermark(999)] == [("a", 0, 1, [5]), ("b", 0, 1, [2])]
    assert sorted(function.cleared) == [0, 0]
    h.elements(("a", 5, 900))  # late now: its window fired and was dropped
    assert [v for v, _ in h.late] == [("a", 5, 900)]
    assert [(v, ts) for v, ts in h.watermark(MAX_WATERMARK)] == [(("a", 1000, 1, [3]), 1999)]
    assert h.state_entries() == {} and h.timer_count() == 0


def test_sessions_merge_and_leave_no_merging_state_behind():
    h = Harness(EventTimeSessionWindows.with_gap(100), function=add)
    h.elements(("a", 1, 0), ("a", 2, 250), ("a", 3, 100))  # [0,100) and [100,200) touch: one session [0,200)
    h.elements(("a", 4, 199))  # [199,299) overlaps [0,200) and [250,350): all one session [0,350)
    assert h.watermark(348) == []
    assert sums(h.watermark(349)) == [("a", 10, 349)]
    assert h.state_entries() == {} and h.timer_count() == 0


def test_sliding_pane_timestamps_are_each_windows_max_timestamp():
    h = Harness(SlidingEventTimeWindows.of(1000, 500), function=add)
    h.elements(("a", 1, 700))
    assert sums(h.watermark(MAX_WATERMARK)) == [("a", 1, 999), ("a", 1, 1499)]


# -- triggers ---------------------------------------------------------------------------------------------------


def test_count_trigger_on_tumbling_event_time_fires_every_n_and_its_state_is_cleaned_up():
    h = Harness(TumblingEventTimeWindows.of(1000), function=add, trigger=CountTrigger.of(2))
    h.elements(("a", 1, 1), ("a", 2, 2), ("a", 3, 3))
    assert sums(h.take()) == [("a", 3, 999)]  # fired at 2 elements, not purged
    h.elements(("a", 4, 4))
    assert sums(h.take()) == [("a", 10, 999)]
    assert h.watermark(999) == []  # CountTrigger ignores time
    assert h.state_entries() == {} and h.timer_count() == 0  # the cleanup timer still cleared contents and count


def test_purging_count_trigger_on_global_windows_emits_disjoint_groups():
    h = Harness(GlobalWindows.create(), function=add, trigger=PurgingTrigger.of(CountTrigger.of(3)))
    h.elements(*[("k", i, i) for i in range(1, 9)])
    assert sums(h.take()) == [("k", 6, MAX_WATERMARK), ("k", 15, MAX_WATERMARK)]
    h.watermark(MAX_WATERMARK)
    assert h.take() == []  # 7 and 8 wait for a third element that never comes


def test_continuous_event_time_trigger_fires_every_interval_and_at_the_end():
    h = Harness(TumblingEventTimeWindows.of(1000), function=add, trigger=ContinuousEventTimeTrigger.of(300))
    h.elements(("a", 1, 100))
    assert h.watermark(299) == []
    assert sums(h.watermark(300)) == [("a", 1, 999)]  # early result
    h.elements(("a", 2, 400))
    assert sums(h.watermark(600)) == [("a", 3, 999)]
    h.elements(("a", 4, 650))
    fired = sums(h.watermark(999))
    assert fired[-1] == ("a", 7, 999) and set(fired) == {("a", 7, 999)}
    assert h.state_entries() == {} and h.timer_count() == 0


# -- evictors ---------------------------------------------------------------------------------------------------


def test_count_evictor_keeps_the_last_elements():
    h = Harness(TumblingEventTimeWindows.of(1000), function=add, evictor=CountEvictor.of(2))
    h.elements(("a", 1, 10), ("a", 2, 20), ("a", 3, 30))
    assert sums(h.watermark(999)) == [("a", 5, 999)]


def test_time_evictor_keeps_elements_within_the_span_of_the_newest():
    h = Harness(
        TumblingEventTimeWindows.of(1000),
        aggregation=_A.ELEMENTS,
        kind=_F.APPLY,
        window_function=lambda key, window, inputs: [(key, sorted(v[1] for v in inputs))],
        evictor=TimeEvictor.of(100),
    )
    h.elements(("a", 1, 10), ("a", 2, 850), ("a", 3, 900), ("a", 4, 950))
    assert [v for v, _ in h.watermark(999)] == [("a", [3, 4])]  # kept: ts > 950 - 100 (850 is evicted)


# -- processing time --------------------------------------------------------------------------------------------


def test_processing_time_windows_fire_on_the_clock():
    h = Harness(TumblingProcessingTimeWindows.of(1000), function=lambda a, b: (a[0], a[1] + b[1], None), now=5_100)
    h.elements(("a", 1, None), ("b", 2, None))
    h.clock.set(5_500)
    h.elements(("a", 3, None))
    h.advance_to(5_998)
    assert h.take() == []
    h.advance_to(5_999)
    assert sorted((v[0], v[1], ts) for v, ts in h.take()) == [("a", 4, 5_999), ("b", 2, 5_999)]
    h.clock.set(6_000)
    h.elements(("a", 5, None))
    h.advance_to(7_000)
    assert [(v[0], v[1]) for v, _ in h.take()] == [("a", 5)]
    assert h.state_entries() == {} and h.timer_count() == 0


# -- snapshot and restore ---------------------------------------------------------------------------------------


def restore_into(make, old: Harness, watermark: int) -> Harness:
    """A fresh operator restored from `old`'s snapshot, which then sees the watermark `old` had seen (a
    restored job's watermark starts over, and its sources bring it back: nothing fires twice)."""
    fresh = make(restore=[old.harness.snapshot(1)])
    assert fresh.watermark(watermark) == []
    return fresh


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: Harness(TumblingEventTimeWindows.of(1000), function=add, **kw),
        lambda **kw: Harness(
            SlidingEventTimeWindows.of(1000, 250),
            aggregation=_A.ELEMENTS,
            kind=_F.APPLY,
            window_function=lambda key, window, inputs: [(key, sum(v[1] for v in inputs), 0)],
            **kw,
        ),
        lambda **kw: Harness(EventTimeSessionWindows.with_gap(300), function=add, **kw),
        lambda **kw: Harness(
            TumblingEventTimeWindows.of(1000), function=add, trigger=CountTrigger.of(3), lateness=200, **kw
        ),
    ],
    ids=["tumbling", "sliding", "sessions", "count-trigger"],
)
def test_snapshot_restored_into_a_fresh_operator_gives_the_same_results(make):
    records = [(f"k{i % 3}", i, (i * 137) % 2500) for i in range(60)]
    first, second = records[:30], records[30:]

    reference = make()
    reference.elements(*first)
    expected_mid = reference.watermark(1200)
    reference.elements(*second)
    expected = reference.take() + reference.watermark(1700) + reference.watermark(MAX_WATERMARK)

    original = make()
    original.elements(*first)
    assert original.watermark(1200) == expected_mid
    restored = restore_into(make, original, 1200)
    original.elements(("k0", 10_000, 100))  # changes to the original after the snapshot do not leak
    restored.elements(*second)
    got = restored.take() + restored.watermark(1700) + restored.watermark(MAX_WATERMARK)
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert len(got) > 3
    assert restored.state_entries() == {} and restored.timer_count() == 0
    late = defaultdict(list)
    for value, ts in restored.late + reference.late:
        late[value].append(ts)
    assert all(len(v) % 2 == 0 for v in late.values())  # the same late records on both sides


# -- a typed key_by's keys, checked by the window operator ------------------------------------------------------


@pytest.mark.parametrize("aggregation", ["reduce", "elements"])  # the fast path, and the general one
def test_each_new_key_is_checked_once_also_when_its_record_is_late(aggregation):
    """With a typed key_by at parallelism 1 the window operator checks the keys itself (`new_key_check`): each
    key where it has no window contents yet (the general path: each distinct key once), and the key of a record
    that no window takes (late)."""
    h = Harness(TumblingEventTimeWindows.of(1000), function=add, aggregation=getattr(_A, aggregation.upper()))
    checked = []
    h.op.new_key_check = checked.append
    h.elements(("a", 1, 10), ("a", 2, 20), ("b", 3, 30))
    assert checked == ["a", "b"]
    h.watermark(1999)
    h.elements(("c", 4, 500))  # late: its window has fired
    assert h.late == [(("c", 4, 500), 500)]
    assert checked[-1] == "c"
