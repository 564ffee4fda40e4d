"""Event-time windows over out-of-order input, run as real jobs and compared with a batch recomputation in
plain Python.

The input is several hundred events `(key, value, ts)` whose disorder stays below the watermark bound, so no
record is ever late and the streaming result must equal the batch one exactly, whatever the parallelism, the
watermark generator (periodic or per event) and the source (one collection source then a parallel
timestamp assigner, or a parallel source assigning timestamps itself). Every result goes through a
downstream ProcessFunction that records `ctx.timestamp()`, which must be the window's max timestamp.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest

from fluvial.common import Configuration, Duration
from fluvial.common.time import MAX_WATERMARK, current_millis
from fluvial.common.watermark_strategy import (
    Watermark,
    WatermarkGenerator,
    WatermarkStrategy,
)
from fluvial.datastream import (
    AggregateFunction,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader
from fluvial.datastream.window import (
    AllWindowFunction,
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    PurgingTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowFunction,
)
from fluvial.testing import ExecutionMode, environment
from tests.integration.layouts import PARALLELISM_AND_MODE

BOUND = 500  # watermark bound (ms); the generated disorder stays below it
SIZE, SLIDE, OFFSET, GAP = 1000, 250, 300, 300


def make_events(seed: int, n: int = 600, keys: int = 4) -> list[tuple[str, int, int]]:
    """Timestamps `base + jitter`: base never decreases (with pauses so sessions close), jitter < BOUND - 100,
    so a record is at most 400 ms older than any record before it. Starts below zero (negative windows)."""
    rng = random.Random(seed)
    events = []
    base = -3000
    for i in range(n):
        if i and i % 60 == 0:
            base += 1500
        base += rng.randint(0, 20)
        events.append((f"k{rng.randrange(keys)}", rng.randint(1, 100), base + rng.randint(0, BOUND - 100)))
    return events


EVENTS = make_events(7)
EVENTS_B = make_events(11)


def test_generated_input_is_out_of_order_but_within_the_bound():
    for events in (EVENTS, EVENTS_B):
        running_max = max_disorder = -(10**9)
        inversions = 0
        for _, _, ts in events:
            if ts < running_max:
                inversions += 1
            max_disorder = max(max_disorder, running_max - ts)
            running_max = max(running_max, ts)
        assert inversions > 50  # genuinely out of order
        assert max_disorder < BOUND
        assert len({k for k, _, _ in events}) == 4


# -- batch recomputation ------------------------------------------------------------------------------------------


def windows_containing(ts: int, size: int, slide: int, offset: int = 0) -> list[tuple[int, int]]:
    """Every [start, start + size) with start = offset (mod slide) that contains ts, by brute force."""
    return [(s, s + size) for s in range(ts - size + 1, ts + 1) if (s - offset) % slide == 0]


def batch_panes(events, size: int, slide: int, offset: int = 0) -> dict[tuple[str, int, int], list]:
    panes: dict[tuple[str, int, int], list] = defaultdict(list)
    for event in events:
        for start, end in windows_containing(event[2], size, slide, offset):
            panes[(event[0], start, end)].append(event)
    return panes


def batch_sessions(events, gap_of) -> dict[tuple[str, int, int], list]:
    """Sessions per key: sorted by time, a record joins the open session when its window [ts, ts + gap)
    intersects (or touches) it, as Flink's TimeWindow.intersects."""
    by_key: dict[str, list] = defaultdict(list)
    for event in events:
        by_key[event[0]].append(event)
    panes = {}
    for key, items in by_key.items():
        items.sort(key=lambda e: e[2])
        start = end = None
        members: list = []
        for event in items:
            ts, event_end = event[2], event[2] + gap_of(event)
            if start is not None and ts <= end:
                end = max(end, event_end)
                members.append(event)
                continue
            if start is not None:
                panes[(key, start, end)] = members
            start, end, members = ts, event_end, [event]
        panes[(key, start, end)] = members
    return panes


def dynamic_gap(event) -> int:
    return 100 + (event[1] % 3) * 150


# -- job pieces ---------------------------------------------------------------------------------------------------


class PerEventBoundedGenerator(WatermarkGenerator):
    """Bounded out-of-orderness, but emitting on every new maximum instead of periodically."""

    def __init__(self) -> None:
        self.max_ts = None

    def on_event(self, event, event_timestamp, output):
        if self.max_ts is None or event_timestamp > self.max_ts:
            self.max_ts = event_timestamp
            output.emit_watermark(Watermark(event_timestamp - BOUND - 1))

    def on_periodic_emit(self, output):
        pass


def strategy(kind: str, assigner) -> WatermarkStrategy:
    if kind == "periodic":
        base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(BOUND))
    else:
        base = WatermarkStrategy.for_generator(lambda context: PerEventBoundedGenerator())
    return base.with_timestamp_assigner(assigner)


def timestamped_events(env, events, source: str, generator: str):
    if source == "collection":
        return env.from_collection(events).assign_timestamps_and_watermarks(
            strategy(generator, lambda event, _: event[2])
        )
    # a parallel source assigning timestamps itself: each subtask reads a contiguous part of the input
    seq = NumberSequenceSource(0, len(events) - 1)
    numbers = env.from_source(seq, strategy(generator, lambda i, _: events[i][2]), "indices")
    return numbers.map(lambda i: events[i])


class AttachTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield value, ctx.timestamp()


def run(stream) -> list:
    return list(stream.process(AttachTimestamp()).execute_and_collect())


def env_with(parallelism: int, mode: ExecutionMode, taskmanagers: int | None = None) -> StreamExecutionEnvironment:
    """`taskmanagers`: how many (default: one in thread mode, one per core in process mode)."""
    configuration = Configuration()
    if taskmanagers is not None:
        configuration.set_string("local.number-taskmanager", str(taskmanagers))
    env = environment(mode, configuration)
    env.set_parallelism(parallelism)
    env.get_config().set_auto_watermark_interval(5)
    return env


def add_values(a, b):
    return a[0], a[1] + b[1], max(a[2], b[2])


class CountAndSum(AggregateFunction):
    def create_accumulator(self):
        return None, 0, 0

    def add(self, value, accumulator):
        return value[0], accumulator[1] + 1, accumulator[2] + value[1]

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a[0] or acc_b[0], acc_a[1] + acc_b[1], acc_a[2] + acc_b[2]


class DescribePane(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        yield key, window.start, window.end, tuple(sorted(e[1] for e in elements))


class DescribeReduced(ProcessWindowFunction):
    def process(self, key, context, elements):
        (reduced,) = list(elements)
        window = context.window()
        yield key, window.start, window.end, reduced[1]


class DescribeAggregate(ProcessWindowFunction):
    def process(self, key, context, elements):
        (acc,) = list(elements)
        window = context.window()
        yield key, window.start, window.end, acc[1], acc[2]


class ApplyPane(WindowFunction):
    def apply(self, key, window, inputs):
        yield key, window.start, window.end, tuple(sorted(e[1] for e in inputs))


class DynamicGap(SessionWindowTimeGapExtractor):
    def extract(self, element):
        return dynamic_gap(element)


SOURCES = [("collection", "periodic"), ("collection", "per_event"), ("sequence", "per_event"), ("sequence", "periodic")]


def expect_pane_descriptions(panes) -> Counter:
    return Counter(
        ((key, start, end, tuple(sorted(e[1] for e in items))), end - 1) for (key, start, end), items in panes.items()
    )


def expect_sums_with_max(panes) -> Counter:
    return Counter(
        ((key, sum(e[1] for e in items), max(e[2] for e in items)), end - 1)
        for (key, start, end), items in panes.items()
    )


# -- the tests ----------------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("source,generator", SOURCES)
def test_tumbling_reduce_matches_batch(parallelism, source, generator, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS, source, generator)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(SIZE)))
    )
    results = run(windowed.reduce(add_values))
    assert Counter(results) == expect_sums_with_max(batch_panes(EVENTS, SIZE, SIZE))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_tumbling_with_offset_process_matches_batch(parallelism, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS, "collection", "per_event")
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(SIZE), Duration.of_millis(OFFSET)))
    )
    results = run(windowed.process(DescribePane()))
    assert Counter(results) == expect_pane_descriptions(batch_panes(EVENTS, SIZE, SIZE, OFFSET))
    assert all((start - OFFSET) % SIZE == 0 for (_, start, _, _), _ in results)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("source,generator", SOURCES[1:3])
def test_sliding_reduce_matches_batch(parallelism, source, generator, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS, source, generator)
        .key_by(lambda e: e[0])
        .window(SlidingEventTimeWindows.of(Duration.of_millis(SIZE), Duration.of_millis(SLIDE)))
    )
    results = run(windowed.reduce(add_values))
    expected = expect_sums_with_max(batch_panes(EVENTS, SIZE, SLIDE))
    assert Counter(results) == expected
    assert len(results) > 4 * len(batch_panes(EVENTS, SIZE, SIZE))  # overlapping: several panes per record


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_sliding_aggregate_matches_batch(parallelism, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS_B, "sequence", "per_event")
        .key_by(lambda e: e[0])
        .window(
            SlidingEventTimeWindows.of(Duration.of_millis(SIZE), Duration.of_millis(SLIDE), Duration.of_millis(100))
        )
    )
    results = run(windowed.aggregate(CountAndSum()))
    panes = batch_panes(EVENTS_B, SIZE, SLIDE, 100)
    expected = Counter(
        ((key, len(items), sum(e[1] for e in items)), end - 1) for (key, start, end), items in panes.items()
    )
    assert Counter(results) == expected


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_tumbling_aggregate_with_process_window_function_matches_batch(parallelism, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS, "collection", "periodic")
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(SIZE)))
    )
    results = run(windowed.aggregate(CountAndSum(), window_function=DescribeAggregate()))
    expected = Counter(
        ((key, start, end, len(items), sum(e[1] for e in items)), end - 1)
        for (key, start, end), items in batch_panes(EVENTS, SIZE, SIZE).items()
    )
    assert Counter(results) == expected


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("source,generator", SOURCES[:3])
def test_tumbling_process_window_function_matches_batch(parallelism, source, generator, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS, source, generator)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(SIZE)))
    )
    results = run(windowed.process(DescribePane()))
    assert Counter(results) == expect_pane_descriptions(batch_panes(EVENTS, SIZE, SIZE))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_sliding_apply_matches_batch(parallelism, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS_B, "collection", "per_event")
        .key_by(lambda e: e[0])
        .window(SlidingEventTimeWindows.of(Duration.of_millis(SIZE), Duration.of_millis(SLIDE)))
    )
    results = run(windowed.apply(ApplyPane()))
    assert Counter(results) == expect_pane_descriptions(batch_panes(EVENTS_B, SIZE, SLIDE))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("assigner", ["tumbling", "sliding", "session"])
def test_reduce_with_process_window_function_matches_batch(parallelism, assigner, mode):
    env = env_with(parallelism, mode)
    if assigner == "tumbling":
        window, panes = TumblingEventTimeWindows.of(Duration.of_millis(SIZE)), batch_panes(EVENTS, SIZE, SIZE)
    elif assigner == "sliding":
        window = SlidingEventTimeWindows.of(Duration.of_millis(SIZE), Duration.of_millis(SLIDE))
        panes = batch_panes(EVENTS, SIZE, SLIDE)
    else:
        window, panes = EventTimeSessionWindows.with_gap(Duration.of_millis(GAP)), batch_sessions(EVENTS, lambda e: GAP)
    windowed = timestamped_events(env, EVENTS, "sequence", "per_event").key_by(lambda e: e[0]).window(window)
    results = run(windowed.reduce(add_values, window_function=DescribeReduced()))
    expected = Counter(
        ((key, start, end, sum(e[1] for e in items)), end - 1) for (key, start, end), items in panes.items()
    )
    assert Counter(results) == expected


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("source,generator", SOURCES[:3])
def test_session_process_matches_batch(parallelism, source, generator, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS, source, generator)
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_gap(Duration.of_millis(GAP)))
    )
    results = run(windowed.process(DescribePane()))
    panes = batch_sessions(EVENTS, lambda e: GAP)
    assert Counter(results) == expect_pane_descriptions(panes)
    # sessions really merged: many more records than sessions, and some sessions much longer than the gap
    assert len(panes) < len(EVENTS) / 3
    assert max(end - start for _, start, end in panes) > 3 * GAP


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_session_reduce_and_aggregate_match_batch(parallelism, mode):
    env = env_with(parallelism, mode)
    keyed = timestamped_events(env, EVENTS_B, "collection", "per_event").key_by(lambda e: e[0])
    reduced = keyed.window(EventTimeSessionWindows.with_gap(Duration.of_millis(GAP))).reduce(add_values)
    results = run(reduced)
    panes = batch_sessions(EVENTS_B, lambda e: GAP)
    assert Counter(results) == expect_sums_with_max(panes)

    env = env_with(parallelism, mode)
    keyed = timestamped_events(env, EVENTS_B, "sequence", "per_event").key_by(lambda e: e[0])
    aggregated = keyed.window(EventTimeSessionWindows.with_gap(Duration.of_millis(GAP))).aggregate(CountAndSum())
    expected = Counter(
        ((key, len(items), sum(e[1] for e in items)), end - 1) for (key, start, end), items in panes.items()
    )
    assert Counter(run(aggregated)) == expected


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("function", ["apply", "process"])
def test_dynamic_gap_sessions_match_batch(parallelism, function, mode):
    env = env_with(parallelism, mode)
    windowed = (
        timestamped_events(env, EVENTS, "sequence", "per_event")
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_dynamic_gap(DynamicGap()))
    )
    results = run(windowed.apply(ApplyPane()) if function == "apply" else windowed.process(DescribePane()))
    panes = batch_sessions(EVENTS, dynamic_gap)
    assert Counter(results) == expect_pane_descriptions(panes)
    assert panes != batch_sessions(EVENTS, lambda e: 100)  # the gaps matter


class AllApply(AllWindowFunction):
    def apply(self, window, inputs):
        yield window.start, window.end, len(list(inputs))


class AllProcess(ProcessAllWindowFunction):
    def process(self, context, elements):
        window = context.window()
        yield window.start, window.end, sum(e[1] for e in elements)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_window_all_matches_batch(parallelism, mode):
    all_panes: dict[tuple[int, int], list] = defaultdict(list)
    for (_, start, end), items in batch_panes(EVENTS, SIZE, SIZE).items():
        all_panes[(start, end)].extend(items)

    env = env_with(parallelism, mode)
    stream = timestamped_events(env, EVENTS, "sequence", "per_event")
    results = run(stream.window_all(TumblingEventTimeWindows.of(Duration.of_millis(SIZE))).apply(AllApply()))
    assert Counter(results) == Counter(((s, e, len(items)), e - 1) for (s, e), items in all_panes.items())

    env = env_with(parallelism, mode)
    stream = timestamped_events(env, EVENTS, "collection", "per_event")
    results = run(stream.window_all(TumblingEventTimeWindows.of(Duration.of_millis(SIZE))).process(AllProcess()))
    assert Counter(results) == Counter(((s, e, sum(x[1] for x in items)), e - 1) for (s, e), items in all_panes.items())

    env = env_with(parallelism, mode)
    stream = timestamped_events(env, EVENTS, "collection", "periodic").map(lambda e: ("all", e[1], e[2]))
    results = run(stream.window_all(TumblingEventTimeWindows.of(Duration.of_millis(SIZE))).reduce(add_values))
    expected = Counter(
        (("all", sum(x[1] for x in items), max(x[2] for x in items)), e - 1) for (s, e), items in all_panes.items()
    )
    assert Counter(results) == expected


@pytest.mark.timeout(60)
@pytest.mark.parametrize("assigner", ["tumbling", "sliding", "session"])
@pytest.mark.parametrize("generator", ["periodic", "per_event"])
def test_windows_match_batch_across_two_taskmanagers(assigner, generator, mode):
    """Subtasks on two TaskManagers (two executor threads): sources, windows and watermarks interleave freely."""
    env = env_with(2, mode, taskmanagers=2)
    if assigner == "tumbling":
        window, panes = TumblingEventTimeWindows.of(Duration.of_millis(SIZE)), batch_panes(EVENTS_B, SIZE, SIZE)
    elif assigner == "sliding":
        window = SlidingEventTimeWindows.of(Duration.of_millis(SIZE), Duration.of_millis(SLIDE))
        panes = batch_panes(EVENTS_B, SIZE, SLIDE)
    else:
        window = EventTimeSessionWindows.with_gap(Duration.of_millis(GAP))
        panes = batch_sessions(EVENTS_B, lambda e: GAP)
    windowed = timestamped_events(env, EVENTS_B, "sequence", generator).key_by(lambda e: e[0]).window(window)
    assert Counter(run(windowed.process(DescribePane()))) == expect_pane_descriptions(panes)


# -- count windows: per-key arrival order decides, so one collection source feeds them --------------------------


def batch_count_windows(events, size: int, slide: int) -> Counter:
    """PyFlink's count windows: window i of a key holds its elements i*slide .. i*slide + size - 1 and fires
    once full; a tumbling window is the case slide == size."""
    by_key: dict[str, list] = defaultdict(list)
    for event in events:
        by_key[event[0]].append(event[1])
    out = Counter()
    for key, values in by_key.items():
        i = 0
        while i * slide + size <= len(values):
            out[(key, tuple(values[i * slide : i * slide + size]))] += 1
            i += 1
    return out


class CountPane(WindowFunction):
    def apply(self, key, window, inputs):
        yield key, tuple(e[1] for e in inputs)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("size,slide", [(5, 0), (7, 0), (5, 2), (4, 4), (3, 5)])
def test_count_windows_match_batch(parallelism, size, slide, mode):
    env = env_with(parallelism, mode)
    keyed = env.from_collection(EVENTS).key_by(lambda e: e[0])
    results = run(keyed.count_window(size, slide).apply(CountPane()))
    expected = batch_count_windows(EVENTS, size, slide or size)
    assert Counter(value for value, _ in results) == expected
    assert sum(expected.values()) > 20
    assert {ts for _, ts in results} == {MAX_WATERMARK}  # a count window's max timestamp


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_count_window_reduce_matches_batch(parallelism, mode):
    env = env_with(parallelism, mode)
    keyed = env.from_collection(EVENTS_B).key_by(lambda e: e[0])
    results = list(keyed.count_window(10).reduce(add_values).map(lambda e: (e[0], e[1])).execute_and_collect())
    expected = Counter((key, sum(values)) for key, values in batch_count_windows(EVENTS_B, 10, 10).elements())
    assert Counter(results) == expected


# -- triggers, evictors and processing time in real jobs ----------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_global_windows_with_purging_count_trigger_equal_tumbling_count_windows(parallelism, mode):
    env = env_with(parallelism, mode)
    keyed = env.from_collection(EVENTS).key_by(lambda e: e[0])
    results = run(
        keyed.window(GlobalWindows.create()).trigger(PurgingTrigger.of(CountTrigger.of(6))).apply(CountPane())
    )
    assert Counter(value for value, _ in results) == batch_count_windows(EVENTS, 6, 6)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_count_evictor_keeps_the_last_arrivals_of_each_pane(parallelism, mode):
    env = env_with(parallelism, mode)
    keyed = (
        env.from_collection(EVENTS)
        .assign_timestamps_and_watermarks(strategy("per_event", lambda event, _: event[2]))
        .set_parallelism(1)
        .key_by(lambda e: e[0])
    )
    results = run(
        keyed.window(TumblingEventTimeWindows.of(Duration.of_millis(SIZE)))
        .evictor(CountEvictor.of(3))
        .apply(ApplyPaneInArrivalOrder())
    )
    expected = Counter(
        ((key, start, end, tuple(e[1] for e in items[-3:])), end - 1)
        for (key, start, end), items in batch_panes(EVENTS, SIZE, SIZE).items()
    )
    assert Counter(results) == expected


class ApplyPaneInArrivalOrder(WindowFunction):
    def apply(self, key, window, inputs):
        yield key, window.start, window.end, tuple(e[1] for e in inputs)


class LingeringReader(SourceReader):
    """All records in one poll, then [] until `linger_ms` of wall time passed (processing-time windows need a
    running job to fire: like Flink, pending processing-time timers do not fire after the input ended)."""

    def __init__(self, records, linger_ms):
        self._records, self._linger_ms, self._done_at = list(records), linger_ms, None

    def add_splits(self, splits):
        pass

    def poll(self, max_records):
        if self._records:
            out, self._records = self._records, []
            self._done_at = current_millis()
            return out
        return [] if current_millis() - self._done_at < self._linger_ms else None

    def snapshot_state(self):
        return []


class LingeringSource(Source):
    def __init__(self, records, linger_ms):
        self.records, self.linger_ms = list(records), linger_ms

    def get_boundedness(self):
        return Boundedness.BOUNDED

    def create_splits(self, parallelism):
        return ["only"]

    def create_reader(self, task_info):
        return LingeringReader(self.records, self.linger_ms)

    def max_parallelism(self):
        return 1


class ProcessingPane(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        yield key, window.start, window.end, sum(e[1] for e in elements), context.current_processing_time()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_processing_time_windows_fire_on_the_wall_clock(parallelism, mode):
    env = env_with(parallelism, mode)
    stream = env.from_source(LingeringSource(EVENTS, linger_ms=1200), None, "lingering")
    results = run(
        stream.key_by(lambda e: e[0])
        .window(TumblingProcessingTimeWindows.of(Duration.of_millis(200)))
        .process(ProcessingPane())
    )
    totals = Counter()
    for (key, start, end, total, fired_at), ts in results:
        totals[key] += total
        assert end - start == 200 and start % 200 == 0
        assert ts == end - 1 and fired_at >= end - 1  # fired by the clock passing the window
    expected = Counter()
    for key, value, _ in EVENTS:
        expected[key] += value
    assert totals == expected
