"""Windows and window assigners: alignment (incl. negative timestamps and offsets), overlap, sessions, count
windows, validation messages, value semantics and picklability."""

from __future__ import annotations

import pickle
from itertools import pairwise
from typing import Any

import cloudpickle
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import MAX_WATERMARK, Duration, Time
from fluvial.datastream import window as window_module
from fluvial.datastream.window import (
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    CountWindow,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindow,
    GlobalWindows,
    MergingWindowAssigner,
    NeverTrigger,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    PurgingTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
    WindowAssignerContext,
)

TS = st.integers(-(10**13), 10**13)


class FakeValueState:
    def __init__(self, table: dict, key: Any) -> None:
        self._table, self._key = table, key

    def value(self) -> Any:
        return self._table.get(self._key)

    def update(self, value: Any) -> None:
        self._table[self._key] = value


class FakeRuntimeContext:
    """Keyed ValueState on the current key, as the window operator's runtime context offers it."""

    def __init__(self) -> None:
        self.current_key: Any = "k"
        self.tables: dict[str, dict] = {}

    def get_state(self, descriptor: Any) -> FakeValueState:
        return FakeValueState(self.tables.setdefault(descriptor.name, {}), self.current_key)


class FakeAssignerContext(WindowAssignerContext):
    def __init__(self, now: int = 0) -> None:
        self.now = now
        self.runtime_context = FakeRuntimeContext()

    def get_current_processing_time(self) -> int:
        return self.now

    def get_runtime_context(self) -> FakeRuntimeContext:
        return self.runtime_context


CTX = FakeAssignerContext()


def java_remainder(a: int, b: int) -> int:
    """Java's `%`: the remainder takes the sign of the dividend (truncating division)."""
    quotient = abs(a) // abs(b)
    return a - b * (quotient if (a >= 0) == (b >= 0) else -quotient)


def flink_window_start(timestamp: int, offset: int, size: int) -> int:
    """Flink's TimeWindow.getWindowStartWithOffset, written from its two-branch definition."""
    remainder = java_remainder(timestamp - offset, size)
    return timestamp - (remainder + size) if remainder < 0 else timestamp - remainder


# --------------------------------------------------------------------------------------------------------------
# Windows


def test_time_window_basics() -> None:
    window = TimeWindow(0, 5000)
    assert repr(window) == "TimeWindow(start=0, end=5000)"
    assert window.max_timestamp() == 4999
    assert window == TimeWindow(0, 5000) and window != TimeWindow(0, 5001)
    assert hash(window) == hash(TimeWindow(0, 5000))
    assert len({TimeWindow(0, 5), TimeWindow(0, 5), TimeWindow(1, 5)}) == 2
    assert window != CountWindow(0) and hash(window) == hash(TimeWindow(0, 5000))


def test_time_window_ordering_by_start_then_end() -> None:
    windows = [TimeWindow(5, 9), TimeWindow(0, 7), TimeWindow(0, 3), TimeWindow(-2, 100)]
    assert sorted(windows) == [TimeWindow(-2, 100), TimeWindow(0, 3), TimeWindow(0, 7), TimeWindow(5, 9)]
    assert TimeWindow(0, 3) < TimeWindow(0, 4) <= TimeWindow(0, 4) < TimeWindow(1, 2)
    assert TimeWindow(1, 2) > TimeWindow(0, 9) and TimeWindow(1, 2) >= TimeWindow(1, 2)
    with pytest.raises(TypeError):
        _ = TimeWindow(0, 1) < CountWindow(1)


def test_time_window_intersects_includes_touching_and_cover() -> None:
    assert TimeWindow(0, 5).intersects(TimeWindow(5, 10))  # touching sessions merge (Flink)
    assert TimeWindow(5, 10).intersects(TimeWindow(0, 5))
    assert TimeWindow(0, 5).intersects(TimeWindow(2, 3))
    assert not TimeWindow(0, 5).intersects(TimeWindow(6, 10))
    assert TimeWindow(0, 5).cover(TimeWindow(3, 12)) == TimeWindow(0, 12)
    assert TimeWindow(4, 5).cover(TimeWindow(-3, 1)) == TimeWindow(-3, 5)


def test_count_and_global_windows() -> None:
    assert repr(CountWindow(3)) == "CountWindow(id=3)"
    assert CountWindow(3).max_timestamp() == MAX_WATERMARK
    assert CountWindow(3) == CountWindow(3) and CountWindow(3) != CountWindow(4)
    assert sorted([CountWindow(2), CountWindow(0), CountWindow(1)]) == [CountWindow(0), CountWindow(1), CountWindow(2)]
    assert GlobalWindow() is GlobalWindow.get() is GlobalWindow.get()
    assert GlobalWindow.get().max_timestamp() == MAX_WATERMARK
    assert repr(GlobalWindow.get()) == "GlobalWindow"
    assert not GlobalWindow.get() < GlobalWindow.get() and GlobalWindow.get() <= GlobalWindow.get()
    assert hash(GlobalWindow()) == hash(GlobalWindow.get())
    assert GlobalWindow.get() != CountWindow(0)


@pytest.mark.parametrize("window", [TimeWindow(-5, 7), CountWindow(42), GlobalWindow.get()])
@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_windows_pickle_round_trip(window: Any, dumps: Any) -> None:
    restored = pickle.loads(dumps(window))
    assert restored == window and hash(restored) == hash(window) and type(restored) is type(window)
    if isinstance(window, GlobalWindow):
        assert restored is GlobalWindow.get()


def test_window_start_with_offset_examples() -> None:
    assert TimeWindow.get_window_start_with_offset(7, 0, 5) == 5
    assert TimeWindow.get_window_start_with_offset(5, 0, 5) == 5
    assert TimeWindow.get_window_start_with_offset(-1, 0, 5) == -5
    assert TimeWindow.get_window_start_with_offset(-5, 0, 5) == -5
    assert TimeWindow.get_window_start_with_offset(-6, 0, 5) == -10
    assert TimeWindow.get_window_start_with_offset(7, 2, 5) == 7
    assert TimeWindow.get_window_start_with_offset(6, 2, 5) == 2
    assert TimeWindow.get_window_start_with_offset(1, -2, 5) == -2


@given(timestamp=TS, size=st.integers(1, 10**9), data=st.data())
def test_window_start_with_offset_matches_flink_formula(timestamp: int, size: int, data: st.DataObject) -> None:
    offset = data.draw(st.integers(-(size - 1), size - 1))
    start = TimeWindow.get_window_start_with_offset(timestamp, offset, size)
    assert start == flink_window_start(timestamp, offset, size)
    assert start <= timestamp < start + size
    assert (start - offset) % size == 0


# --------------------------------------------------------------------------------------------------------------
# Time assigners


@given(timestamp=TS, size=st.integers(1, 10**9), data=st.data())
def test_tumbling_event_time_one_aligned_window_containing_the_timestamp(
    timestamp: int, size: int, data: st.DataObject
) -> None:
    offset = data.draw(st.integers(-(size - 1), size - 1))
    assigner = TumblingEventTimeWindows.of(Duration.of_millis(size), Duration.of_millis(offset))
    windows = assigner.assign_windows("element", timestamp, CTX)
    assert len(windows) == 1
    (window,) = windows
    assert window.start <= timestamp < window.end
    assert window.end - window.start == size
    assert (window.start - offset) % size == 0
    assert window.start == flink_window_start(timestamp, offset, size)


@given(timestamp=TS, now=TS, size=st.integers(1, 10**9))
def test_tumbling_processing_time_uses_the_clock_not_the_timestamp(timestamp: int, now: int, size: int) -> None:
    assigner = TumblingProcessingTimeWindows.of(size)
    (window,) = assigner.assign_windows("element", timestamp, FakeAssignerContext(now))
    assert window.start <= now < window.end and window.start % size == 0
    assert assigner.assign_windows("element", None, FakeAssignerContext(now)) == [window]


def test_tumbling_examples_with_time_and_offset() -> None:
    hourly_local = TumblingEventTimeWindows.of(Time.hours(1), Time.minutes(15))
    assert hourly_local.assign_windows(None, 0, CTX) == [TimeWindow(-45 * 60_000, 15 * 60_000)]
    assert TumblingEventTimeWindows.of(5000).assign_windows(None, -1, CTX) == [TimeWindow(-5000, 0)]
    assert TumblingEventTimeWindows.of(Duration.of_seconds(5)).assign_windows(None, 4999, CTX) == [TimeWindow(0, 5000)]
    assert TumblingEventTimeWindows.of(5000, -1000).assign_windows(None, 3999, CTX) == [TimeWindow(-1000, 4000)]


@given(timestamp=TS, slide=st.integers(1, 10**6), factor=st.integers(1, 12), data=st.data())
def test_sliding_event_time_size_over_slide_windows_each_containing_the_timestamp(
    timestamp: int, slide: int, factor: int, data: st.DataObject
) -> None:
    size = slide * factor
    offset = data.draw(st.integers(-(slide - 1), slide - 1))
    assigner = SlidingEventTimeWindows.of(
        Duration.of_millis(size), Duration.of_millis(slide), Duration.of_millis(offset)
    )
    windows = assigner.assign_windows("element", timestamp, CTX)
    assert len(windows) == factor
    assert len(set(windows)) == factor
    for window in windows:
        assert window.start <= timestamp < window.end
        assert window.end - window.start == size
        assert (window.start - offset) % slide == 0
    assert [w.start for w in windows] == sorted((w.start for w in windows), reverse=True)  # latest first


@given(
    timestamp=st.integers(-500, 500),
    size=st.integers(1, 60),
    slide=st.integers(1, 60),
    data=st.data(),
)
def test_sliding_returns_exactly_the_aligned_windows_containing_the_timestamp(
    timestamp: int, size: int, slide: int, data: st.DataObject
) -> None:
    """Brute force, also when slide does not divide size or exceeds it (then some timestamps are in none)."""
    offset = data.draw(st.integers(-(slide - 1), slide - 1))
    assigner = SlidingEventTimeWindows.of(size, slide, offset)
    expected = {
        TimeWindow(start, start + size)
        for start in range(timestamp - size - slide, timestamp + 1)
        if (start - offset) % slide == 0 and start <= timestamp < start + size
    }
    assert set(assigner.assign_windows(None, timestamp, CTX)) == expected


def test_sliding_processing_time_uses_the_clock() -> None:
    assigner = SlidingProcessingTimeWindows.of(Time.seconds(10), Time.seconds(5))
    windows = assigner.assign_windows("e", 999_999, FakeAssignerContext(now=7000))
    assert windows == [TimeWindow(5000, 15000), TimeWindow(0, 10000)]


def test_event_time_session_windows() -> None:
    assigner = EventTimeSessionWindows.with_gap(Time.seconds(1))
    assert isinstance(assigner, MergingWindowAssigner)
    assert assigner.assign_windows("e", 100, CTX) == [TimeWindow(100, 1100)]
    assert assigner.assign_windows("e", -100, CTX) == [TimeWindow(-100, 900)]


def test_processing_time_session_windows_use_the_clock() -> None:
    assigner = ProcessingTimeSessionWindows.with_gap(500)
    assert assigner.assign_windows("e", 1, FakeAssignerContext(now=10_000)) == [TimeWindow(10_000, 10_500)]


class LengthGap(SessionWindowTimeGapExtractor):
    def extract(self, element: Any) -> int:
        return len(element) * 100


def test_dynamic_gap_with_extractor_or_callable() -> None:
    by_extractor = EventTimeSessionWindows.with_dynamic_gap(LengthGap())
    assert isinstance(by_extractor, DynamicEventTimeSessionWindows)
    assert by_extractor.assign_windows("abc", 1000, CTX) == [TimeWindow(1000, 1300)]
    by_callable = EventTimeSessionWindows.with_dynamic_gap(lambda element: Duration.of_millis(element))
    assert by_callable.assign_windows(250, 1000, CTX) == [TimeWindow(1000, 1250)]
    processing = ProcessingTimeSessionWindows.with_dynamic_gap(LengthGap())
    assert isinstance(processing, DynamicProcessingTimeSessionWindows)
    assert processing.assign_windows("ab", None, FakeAssignerContext(now=50)) == [TimeWindow(50, 250)]
    restored = cloudpickle.loads(cloudpickle.dumps(by_callable))
    assert restored.assign_windows(5, 0, CTX) == [TimeWindow(0, 5)]


@pytest.mark.parametrize("gap", [0, -10])
def test_dynamic_gap_must_be_positive_at_run_time(gap: int) -> None:
    assigner = EventTimeSessionWindows.with_dynamic_gap(lambda element: gap)
    with pytest.raises(InvalidJobError, match=rf"returned {gap} ms for element 'x'.*> 0"):
        assigner.assign_windows("x", 0, CTX)


class RecordingCallback:
    def __init__(self) -> None:
        self.merges: list[tuple[list[TimeWindow], TimeWindow]] = []

    def merge(self, to_be_merged: Any, merge_result: TimeWindow) -> None:
        self.merges.append((list(to_be_merged), merge_result))


def test_session_assigner_merge_windows_reports_groups() -> None:
    callback = RecordingCallback()
    windows = [TimeWindow(10, 15), TimeWindow(0, 5), TimeWindow(5, 8), TimeWindow(20, 22), TimeWindow(14, 16)]
    EventTimeSessionWindows.with_gap(5).merge_windows(windows, callback)
    assert callback.merges == [
        ([TimeWindow(0, 5), TimeWindow(5, 8)], TimeWindow(0, 8)),
        ([TimeWindow(10, 15), TimeWindow(14, 16)], TimeWindow(10, 16)),
    ]


def test_merge_windows_accepts_a_plain_callable_and_ignores_duplicates() -> None:
    seen: list = []
    TimeWindow.merge_windows([TimeWindow(0, 5), TimeWindow(0, 5)], lambda group, result: seen.append(result))
    assert seen == []  # one distinct window: nothing to merge
    TimeWindow.merge_windows([TimeWindow(0, 5), TimeWindow(0, 5), TimeWindow(1, 9)], lambda g, r: seen.append((g, r)))
    assert seen == [([TimeWindow(0, 5), TimeWindow(1, 9)], TimeWindow(0, 9))]


@given(st.lists(st.tuples(st.integers(-100, 100), st.integers(0, 20)), max_size=30))
def test_merge_windows_groups_cover_inputs_and_leave_disjoint_windows(spans: list[tuple[int, int]]) -> None:
    windows = [TimeWindow(start, start + length) for start, length in spans]
    callback = RecordingCallback()
    TimeWindow.merge_windows(windows, callback)
    merged_members: set[TimeWindow] = set()
    for members, result in callback.merges:
        assert len(set(members)) == len(members) > 1
        assert result == TimeWindow(min(w.start for w in members), max(w.end for w in members))
        assert merged_members.isdisjoint(members)
        merged_members.update(members)
    survivors = sorted({w for w in windows if w not in merged_members} | {r for _, r in callback.merges})
    for left, right in pairwise(survivors):
        assert not left.intersects(right)
    for window in windows:
        assert sum(1 for s in survivors if s.start <= window.start and window.end <= s.end) == 1


# --------------------------------------------------------------------------------------------------------------
# Global and count assigners


def test_global_windows() -> None:
    assigner = GlobalWindows.create()
    assert assigner.assign_windows("e", None, CTX) == [GlobalWindow.get()]
    assert assigner.assign_windows("e", 5, CTX)[0] is GlobalWindow.get()
    assert isinstance(assigner.get_default_trigger(None), NeverTrigger)
    assert not assigner.is_event_time()


def test_count_tumbling_assigns_consecutive_ids_per_key() -> None:
    ctx = FakeAssignerContext()
    assigner = CountTumblingWindowAssigner.of(3)
    ids = [assigner.assign_windows(i, None, ctx)[0].id for i in range(7)]
    assert ids == [0, 0, 0, 1, 1, 1, 2]
    ctx.runtime_context.current_key = "other"
    assert assigner.assign_windows("x", None, ctx) == [CountWindow(0)]
    ctx.runtime_context.current_key = "k"
    assert assigner.assign_windows("x", None, ctx) == [CountWindow(2)]


def test_count_sliding_example() -> None:
    ctx = FakeAssignerContext()
    assigner = CountSlidingWindowAssigner.of(3, 1)
    assigned = [[w.id for w in assigner.assign_windows(i, None, ctx)] for i in range(5)]
    assert assigned == [[0], [1, 0], [2, 1, 0], [3, 2, 1], [4, 3, 2]]


@given(size=st.integers(1, 8), slide=st.integers(1, 8), n=st.integers(1, 60))
def test_count_sliding_every_window_gets_exactly_its_size_range(size: int, slide: int, n: int) -> None:
    ctx = FakeAssignerContext()
    assigner = CountSlidingWindowAssigner.of(size, slide)
    members: dict[int, list[int]] = {}
    for count in range(n):
        for window in assigner.assign_windows(count, None, ctx):
            members.setdefault(window.id, []).append(count)
    for window_id, counts in members.items():
        assert counts == [c for c in range(n) if window_id * slide <= c <= window_id * slide + size - 1]
        assert len(counts) <= size
    for window_id in range(n):
        if window_id * slide + size <= n:  # every element of this window has arrived
            assert len(members[window_id]) == size


def test_count_assigners_default_trigger_fires_full_windows_and_purges() -> None:
    assert CountTumblingWindowAssigner.of(5).get_default_trigger(None) == PurgingTrigger.of(CountTrigger.of(5))
    assert CountSlidingWindowAssigner.of(5, 2).get_default_trigger(None) == PurgingTrigger.of(CountTrigger.of(5))
    assert not CountTumblingWindowAssigner.of(5).is_event_time()


@pytest.mark.parametrize(
    ("assigner", "trigger_type", "event_time"),
    [
        (TumblingEventTimeWindows.of(5), EventTimeTrigger, True),
        (SlidingEventTimeWindows.of(10, 5), EventTimeTrigger, True),
        (EventTimeSessionWindows.with_gap(5), EventTimeTrigger, True),
        (EventTimeSessionWindows.with_dynamic_gap(LengthGap()), EventTimeTrigger, True),
        (TumblingProcessingTimeWindows.of(5), ProcessingTimeTrigger, False),
        (SlidingProcessingTimeWindows.of(10, 5), ProcessingTimeTrigger, False),
        (ProcessingTimeSessionWindows.with_gap(5), ProcessingTimeTrigger, False),
        (ProcessingTimeSessionWindows.with_dynamic_gap(LengthGap()), ProcessingTimeTrigger, False),
        (GlobalWindows.create(), NeverTrigger, False),
    ],
)
def test_default_triggers_and_time_domain(assigner: WindowAssigner, trigger_type: type, event_time: bool) -> None:
    assert type(assigner.get_default_trigger(None)) is trigger_type
    assert assigner.is_event_time() is event_time


@pytest.mark.parametrize(
    "assigner",
    [
        TumblingEventTimeWindows.of(5),
        SlidingEventTimeWindows.of(10, 5),
        EventTimeSessionWindows.with_gap(5),
        EventTimeSessionWindows.with_dynamic_gap(LengthGap()),
    ],
)
def test_event_time_assigners_reject_records_without_timestamp(assigner: WindowAssigner) -> None:
    with pytest.raises(InvalidJobError) as info:
        assigner.assign_windows("e", None, CTX)
    assert str(info.value).startswith(
        "record has no timestamp: assign timestamps with assign_timestamps_and_watermarks(...) "
        "or use processing-time windows"
    )
    assert type(assigner).__name__ in str(info.value)


# --------------------------------------------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    ("build", "fragments"),
    [
        (lambda: TumblingEventTimeWindows.of(0), ["TumblingEventTimeWindows size", "got 0", "> 0", "pass"]),
        (lambda: TumblingEventTimeWindows.of(Duration.of_millis(-5)), ["size", "got -5", "> 0"]),
        (lambda: TumblingProcessingTimeWindows.of(Time.seconds(0)), ["TumblingProcessingTimeWindows size", "> 0"]),
        (lambda: TumblingEventTimeWindows.of(5000, 5000), ["offset 5000", "outside the window", "< size (5000"]),
        (lambda: TumblingEventTimeWindows.of(5000, -6000), ["offset -6000", "between -4999 and 4999"]),
        (lambda: TumblingProcessingTimeWindows.of(100, 100), ["TumblingProcessingTimeWindows offset 100"]),
        (lambda: SlidingEventTimeWindows.of(0, 5), ["SlidingEventTimeWindows size", "got 0"]),
        (lambda: SlidingEventTimeWindows.of(10, 0), ["SlidingEventTimeWindows slide", "got 0", "> 0"]),
        (lambda: SlidingProcessingTimeWindows.of(10, -1), ["SlidingProcessingTimeWindows slide", "got -1"]),
        (lambda: SlidingEventTimeWindows.of(10, 5, 5), ["offset 5", "< slide (5 ms)"]),
        (lambda: EventTimeSessionWindows.with_gap(0), ["EventTimeSessionWindows gap", "got 0", "> 0"]),
        (lambda: EventTimeSessionWindows.with_gap(Time.seconds(-1)), ["gap", "got -1000"]),
        (lambda: ProcessingTimeSessionWindows.with_gap(0), ["ProcessingTimeSessionWindows gap", "got 0"]),
        (lambda: EventTimeSessionWindows.with_dynamic_gap(42), ["gap extractor", "got 42"]),
        (lambda: CountTumblingWindowAssigner.of(0), ["CountTumblingWindowAssigner window size", "got 0", "positive"]),
        (lambda: CountTumblingWindowAssigner.of(-3), ["got -3"]),
        (lambda: CountTumblingWindowAssigner.of(2.5), ["got 2.5"]),
        (lambda: CountSlidingWindowAssigner.of(0, 1), ["CountSlidingWindowAssigner window size", "got 0"]),
        (lambda: CountSlidingWindowAssigner.of(5, 0), ["CountSlidingWindowAssigner window slide", "got 0"]),
        (lambda: TumblingEventTimeWindows.of("5s"), ["size must be a Duration", "'5s'", "Duration.of_seconds"]),
    ],
)
def test_invalid_parameters_name_the_value_and_the_fix(build: Any, fragments: list[str]) -> None:
    with pytest.raises(InvalidJobError) as info:
        build()
    for fragment in fragments:
        assert fragment in str(info.value)


def test_offsets_just_inside_the_window_are_accepted() -> None:
    assert TumblingEventTimeWindows.of(5000, 4999).assign_windows(None, 0, CTX) == [TimeWindow(-1, 4999)]
    assert TumblingEventTimeWindows.of(5000, -4999).assign_windows(None, 0, CTX) == [TimeWindow(-4999, 1)]
    assert SlidingEventTimeWindows.of(10, 5, -4).assign_windows(None, 0, CTX) == [
        TimeWindow(-4, 6),
        TimeWindow(-9, 1),
    ]


# --------------------------------------------------------------------------------------------------------------
# Value semantics, pickling, exports


def test_assigners_compare_by_parameters_and_have_readable_repr() -> None:
    assert TumblingEventTimeWindows.of(Time.seconds(5)) == TumblingEventTimeWindows.of(5000)
    assert TumblingEventTimeWindows.of(5000) != TumblingProcessingTimeWindows.of(5000)
    assert TumblingEventTimeWindows.of(5000) != TumblingEventTimeWindows.of(5000, 1)
    assert repr(TumblingEventTimeWindows.of(5000)) == "TumblingEventTimeWindows(size=5000, offset=0)"
    assert repr(SlidingEventTimeWindows.of(10, 5)) == "SlidingEventTimeWindows(size=10, slide=5, offset=0)"
    assert repr(EventTimeSessionWindows.with_gap(7)) == "EventTimeSessionWindows(gap=7)"
    assert repr(CountSlidingWindowAssigner.of(3, 1)) == "CountSlidingWindowAssigner(size=3, slide=1)"
    assert hash(SlidingEventTimeWindows.of(10, 5)) == hash(SlidingEventTimeWindows.of(10, 5))


@pytest.mark.parametrize(
    "assigner",
    [
        TumblingEventTimeWindows.of(5000, 100),
        TumblingProcessingTimeWindows.of(5000),
        SlidingEventTimeWindows.of(10, 5),
        SlidingProcessingTimeWindows.of(10, 5),
        EventTimeSessionWindows.with_gap(5),
        ProcessingTimeSessionWindows.with_gap(5),
        GlobalWindows.create(),
        CountTumblingWindowAssigner.of(3),
        CountSlidingWindowAssigner.of(3, 2),
    ],
)
def test_assigners_pickle_with_plain_pickle(assigner: WindowAssigner) -> None:
    restored = pickle.loads(pickle.dumps(assigner))
    assert restored == assigner
    assert restored.get_default_trigger(None) == assigner.get_default_trigger(None)


def test_window_module_exports_pyflink_names() -> None:
    for name in [
        "Window", "TimeWindow", "CountWindow", "GlobalWindow", "WindowAssigner", "MergingWindowAssigner",
        "TumblingEventTimeWindows", "TumblingProcessingTimeWindows", "SlidingEventTimeWindows",
        "SlidingProcessingTimeWindows", "EventTimeSessionWindows", "ProcessingTimeSessionWindows",
        "DynamicEventTimeSessionWindows", "DynamicProcessingTimeSessionWindows", "GlobalWindows",
        "CountTumblingWindowAssigner", "CountSlidingWindowAssigner", "SessionWindowTimeGapExtractor",
        "TriggerResult", "Trigger", "EventTimeTrigger", "ProcessingTimeTrigger", "ContinuousEventTimeTrigger",
        "ContinuousProcessingTimeTrigger", "CountTrigger", "PurgingTrigger", "NeverTrigger", "Evictor",
        "CountEvictor", "TimeEvictor", "WindowFunction", "AllWindowFunction", "ProcessWindowFunction",
        "ProcessAllWindowFunction", "ReduceFunction", "AggregateFunction",
    ]:  # fmt: skip
        assert name in window_module.__all__, name
        assert getattr(window_module, name) is not None
    assert WindowAssigner.WindowAssignerContext is WindowAssignerContext


def test_window_serializers_use_flinks_byte_layouts_and_round_trip():
    import io

    from fluvial.datastream.window import (
        CountWindow,
        CountWindowSerializer,
        GlobalWindow,
        GlobalWindowSerializer,
        TimeWindow,
        TimeWindowSerializer,
    )

    cases = [
        (TimeWindowSerializer(), TimeWindow(-5, 1_000), 16),
        (CountWindowSerializer(), CountWindow(7), 8),
        (GlobalWindowSerializer(), GlobalWindow.get(), 1),
    ]
    for serializer, window, size in cases:
        stream = io.BytesIO()
        serializer.serialize(window, stream)
        assert len(stream.getvalue()) == size
        stream.seek(0)
        assert serializer.deserialize(stream) == window
    assert TimeWindowSerializer().copy(TimeWindow(0, 1)) == TimeWindow(0, 1)
