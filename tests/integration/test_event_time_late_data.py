"""Late data, run as real jobs with a per-event watermark generator so that exactly chosen records are late.

The generator emits `event_ts - 1` after each record (a watermark t promises nothing <= t follows), so the
clock after a record is known exactly and lateness is decided record by record:
- a record whose every window's end + allowed lateness - 1 is at or below the clock is late: it goes to
  `side_output_late_data` (and nowhere else); every other record counts in its windows;
- with `allowed_lateness`, a record for a fired window that is still within the lateness re-fires it at once
  with the updated contents (EventTimeTrigger), and the cleanup at max_timestamp + lateness ends that.
The source and the timestamp assigner run at parallelism 1, so per key the order of records and watermarks
reaching the window operator is the input order; the window operator runs at parallelism 1 and 2.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from fluvial.common.watermark_strategy import (
    Watermark,
    WatermarkGenerator,
    WatermarkStrategy,
)
from fluvial.datastream import (
    AggregateFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from fluvial.datastream.window import (
    EventTimeSessionWindows,
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from fluvial.testing import ExecutionMode, environment
from tests.integration.layouts import PARALLELISM_AND_MODE


class EmitTimestampMinusOne(WatermarkGenerator):
    def on_event(self, event, event_timestamp, output):
        output.emit_watermark(Watermark(event_timestamp - 1))

    def on_periodic_emit(self, output):
        pass


class AttachTimestamp(ProcessFunction):
    def __init__(self, tag: str) -> None:
        self.tag = tag

    def process_element(self, value, ctx):
        yield self.tag, value, ctx.timestamp()


def add_values(a, b):
    return a[0], a[1] + b[1], max(a[2], b[2])


class SumAggregate(AggregateFunction):
    def create_accumulator(self):
        return None, 0

    def add(self, value, accumulator):
        return value[0], accumulator[1] + value[1]

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a[0] or acc_b[0], acc_a[1] + acc_b[1]


class SumProcess(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, sum(e[1] for e in elements)


LATE = OutputTag("late")


def run_job(
    events, window, function: str, parallelism: int, lateness: int = 0, mode: ExecutionMode = ExecutionMode.THREADS
):
    """Returns (main, late): per key the list of (sum, timestamp) results, and the late records with their
    timestamps. Main results and late records travel in one union to a single collect."""
    env = environment(mode)
    env.set_parallelism(parallelism)
    env.get_config().set_auto_watermark_interval(0)  # only the generator's per-event watermarks
    strategy = WatermarkStrategy.for_generator(lambda context: EmitTimestampMinusOne()).with_timestamp_assigner(
        lambda event, _: event[2]
    )
    stream = env.from_collection(events).assign_timestamps_and_watermarks(strategy).set_parallelism(1)
    windowed = stream.key_by(lambda e: e[0]).window(window).side_output_late_data(LATE)
    if lateness:
        windowed = windowed.allowed_lateness(lateness)
    if function == "reduce":
        result = windowed.reduce(add_values)
    elif function == "aggregate":
        result = windowed.aggregate(SumAggregate())
    else:
        result = windowed.process(SumProcess())
    main = result.map(lambda r: (r[0], r[1])).process(AttachTimestamp("main"))
    late = result.get_side_output(LATE).process(AttachTimestamp("late"))
    records = list(main.union(late).execute_and_collect())
    by_key: dict[str, list] = defaultdict(list)
    late_records = []
    for tag, value, ts in records:
        if tag == "main":
            by_key[value[0]].append((value[1], ts))
        else:
            late_records.append((value, ts))
    return dict(by_key), late_records


FUNCTIONS = ["reduce", "aggregate", "process"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_exactly_the_late_records_reach_the_side_output(function, parallelism, mode):
    events = [
        ("a", 1, 100),  # clock 99
        ("a", 2, 1500),  # clock 1499: a[0,1000) fires with 1
        ("a", 3, 500),  # late
        ("b", 4, 900),  # late: the clock is per operator, not per key
        ("a", 5, 1999),  # clock 1998
        ("b", 6, 1999),  # on time
        ("a", 7, 2000),  # clock 1999: a and b [1000,2000) fire
        ("a", 8, 1999),  # late: its window's max timestamp equals the clock
        ("b", 9, 2001),  # clock 2000
        ("a", 10, 1000),  # late
        ("b", 11, 1998),  # late
    ]
    main, late = run_job(events, TumblingEventTimeWindows.of(1000), function, parallelism, mode=mode)
    late_values = [event[1] for event, _ in late]
    assert sorted(late_values) == [3, 4, 8, 10, 11]
    assert all(ts == event[2] for event, ts in late)  # late records keep their timestamps
    if parallelism == 1:
        assert late_values == [3, 4, 8, 10, 11]
    assert main == {"a": [(1, 999), (7, 1999), (7, 2999)], "b": [(6, 1999), (9, 2999)]}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_allowed_lateness_refires_with_updated_result(function, parallelism, mode):
    events = [
        ("a", 1, 100),  # clock 99
        ("a", 2, 1500),  # clock 1499: [0,1000) fires with 1
        ("a", 3, 500),  # late but allowed (cleanup at 1999): [0,1000) fires again with 4
        ("a", 4, 2600),  # clock 2599: [1000,2000) fires with 2; [0,1000) is cleaned up
        ("a", 5, 600),  # [0,1000) is gone: late
        ("a", 6, 1800),  # allowed: [1000,2000) fires again with 8
        ("a", 7, 3000),  # clock 2999: [2000,3000) fires with 4; [1000,2000) is cleaned up
        ("a", 8, 1999),  # late: 1999 + 1000 <= 2999
        ("a", 9, 2500),  # allowed: [2000,3000) fires again with 13
    ]
    main, late = run_job(events, TumblingEventTimeWindows.of(1000), function, parallelism, lateness=1000, mode=mode)
    assert [event[1] for event, _ in late] == [5, 8]
    assert main == {"a": [(1, 999), (4, 999), (2, 1999), (8, 1999), (4, 2999), (13, 2999), (7, 3999)]}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("function", ["reduce", "process"])
def test_sliding_record_is_late_only_when_all_its_windows_are(function):
    events = [
        ("a", 1, 100),
        ("a", 2, 1600),  # clock 1599: [-500,500) and [0,1000) fire with 1
        ("a", 3, 900),  # both its windows ([0,1000), [500,1500)) are late: side output
        ("a", 4, 1200),  # [500,1500) is late but [1000,2000) is not: counted, not late
    ]
    main, late = run_job(events, SlidingEventTimeWindows.of(1000, 500), function, 1)
    assert [event[1] for event, _ in late] == [3]
    assert main == {"a": [(1, 499), (1, 999), (6, 1999), (2, 2499)]}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("function", ["reduce", "aggregate", "process"])
def test_late_record_of_a_closed_session_goes_to_the_side_output(function):
    events = [
        ("a", 1, 0),  # session [0,100)
        ("a", 2, 1000),  # clock 999: [0,100) fires with 1 and is cleaned up
        ("a", 3, 50),  # [50,150) is late
        ("a", 4, 950),  # [950,1050) merges with [1000,1100)
    ]
    main, late = run_job(events, EventTimeSessionWindows.with_gap(100), function, 1)
    assert [event[1] for event, _ in late] == [3]
    assert main == {"a": [(1, 99), (6, 1099)]}


@pytest.mark.timeout(60)
def test_without_a_side_output_late_records_are_dropped_and_on_time_ones_kept():
    events = [("a", 1, 100), ("a", 2, 1500), ("a", 3, 500), ("a", 4, 1400)]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_generator(EmitTimestampMinusOne).with_timestamp_assigner(lambda e, _: e[2])
    results = list(
        env.from_collection(events)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(1000))
        .reduce(add_values)
        .execute_and_collect()
    )
    assert results == [("a", 1, 100), ("a", 6, 1500)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_allowed_late_record_merges_into_a_fired_session_and_refires_it(function, parallelism, mode):
    events = [
        ("a", 1, 0),  # session [0,100)
        ("a", 2, 400),  # clock 399: [0,100) fires with 1 (cleanup at 599)
        ("a", 3, 50),  # merges: [0,150) fires again at once with 4
        ("a", 4, 600),  # clock 599: [400,500) fires with 2; [0,150) lives on (cleanup at 649)
        ("a", 5, 120),  # merges: [0,220) fires with 9
        ("a", 6, 710),  # clock 709: [600,700) fires with 4 ([710,810) does not touch it)
        ("a", 7, 10),  # merges: [0,220) fires with 16 (cleanup at 719)
        ("a", 8, 900),  # clock 899: [710,810) fires with 6; [0,220) is gone
        ("a", 9, 5),  # [5,105) would be cleaned up at 604: late
    ]
    main, late = run_job(events, EventTimeSessionWindows.with_gap(100), function, parallelism, lateness=500, mode=mode)
    assert [event[1] for event, _ in late] == [9]
    assert main == {"a": [(1, 99), (4, 149), (2, 499), (9, 219), (4, 699), (16, 219), (6, 809), (8, 999)]}
