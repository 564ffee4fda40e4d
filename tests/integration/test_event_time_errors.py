"""Bad event-time input is a clear error: invalid window shapes and strategies are refused when the job is
described, and bad values met while running (a timestamp that is not a number, a record without one, a
non-positive dynamic gap) fail the job with a message that names the problem."""

from __future__ import annotations

import pytest

from fluvial.common import Duration
from fluvial.common.errors import FluvialError, InvalidJobError
from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.datastream import ProcessFunction, StreamExecutionEnvironment
from fluvial.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)


def env1() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


def failure_text(error: BaseException) -> str:
    """The job failure's message with its cause's (the user-facing exception and what raised it)."""
    parts = []
    while error is not None:
        parts.append(str(error))
        error = error.__cause__
    return " | ".join(parts)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: TumblingEventTimeWindows.of(Duration.of_millis(0)), ["size", "> 0", "0"]),
        (lambda: TumblingEventTimeWindows.of(-1000), ["size", "> 0", "-1000"]),
        (lambda: TumblingProcessingTimeWindows.of(0), ["size", "> 0"]),
        (lambda: SlidingEventTimeWindows.of(Duration.of_seconds(1), Duration.of_millis(0)), ["slide", "> 0"]),
        (lambda: SlidingEventTimeWindows.of(-5, 1), ["size", "> 0"]),
        (lambda: EventTimeSessionWindows.with_gap(Duration.of_millis(0)), ["gap", "> 0"]),
        (lambda: EventTimeSessionWindows.with_gap(-1), ["gap", "> 0"]),
        (lambda: TumblingEventTimeWindows.of(1000, 1000), ["offset", "1000"]),
        (lambda: TumblingEventTimeWindows.of(1000, -1500), ["offset", "-1500"]),
        (lambda: SlidingEventTimeWindows.of(1000, 200, 200), ["offset", "slide"]),
        (lambda: TumblingEventTimeWindows.of("5s"), ["Duration", "'5s'"]),
    ],
)
def test_bad_window_shapes_are_refused_with_a_message_naming_them(make, words):
    with pytest.raises(InvalidJobError) as info:
        make()
    for word in words:
        assert word in str(info.value)


def test_offsets_inside_the_window_are_accepted():
    assert TumblingEventTimeWindows.of(1000, 999) is not None
    assert TumblingEventTimeWindows.of(1000, -999) is not None
    assert SlidingEventTimeWindows.of(1000, 200, 199) is not None


@pytest.mark.parametrize("timeout", [Duration.of_millis(0), 0, -5])
def test_idle_timeout_must_be_positive(timeout):
    with pytest.raises(InvalidJobError) as info:
        WatermarkStrategy.for_monotonous_timestamps().with_idleness(timeout)
    assert "idle timeout" in str(info.value) and "> 0" in str(info.value)


def test_negative_out_of_orderness_is_refused():
    with pytest.raises(InvalidJobError) as info:
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(-1))
    assert "out-of-orderness" in str(info.value) and ">= 0" in str(info.value)


def test_bad_count_windows_and_lateness_are_refused():
    keyed = env1().from_collection([1, 2]).key_by(lambda v: v)
    with pytest.raises(InvalidJobError, match="window size"):
        keyed.count_window(0)
    with pytest.raises(InvalidJobError, match="slide"):
        keyed.count_window(5, -1)
    with pytest.raises(InvalidJobError, match="allowed lateness"):
        keyed.window(TumblingEventTimeWindows.of(1000)).allowed_lateness(-1)
    with pytest.raises(InvalidJobError, match="event-time"):
        keyed.window(TumblingProcessingTimeWindows.of(1000)).allowed_lateness(10)


def test_assigner_that_cannot_take_two_arguments_is_refused():
    with pytest.raises(InvalidJobError) as info:
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda value: value)
    assert "two arguments" in str(info.value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["assign_timestamps_and_watermarks", "from_source"])
def test_timestamp_assigner_returning_a_string_fails_the_job_naming_it(where):
    env = env1()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    events = [("a", 1000), ("b", "2024-01-01")]
    if where == "from_source":
        from fluvial.datastream.connectors.collection import CollectionSource

        stream = env.from_source(CollectionSource(events), strategy, "events")
    else:
        stream = env.from_collection(events).assign_timestamps_and_watermarks(strategy)
    job = stream.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(1000)).reduce(lambda a, b: a)
    with pytest.raises(FluvialError) as info:
        list(job.execute_and_collect())
    text = failure_text(info.value)
    assert "timestamp assigner returned '2024-01-01' (str)" in text
    assert "('b', '2024-01-01')" in text  # names the record
    assert "int of milliseconds" in text  # and the fix


class RecordTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield value, ctx.timestamp()


@pytest.mark.timeout(60)
def test_timestamp_assigner_returning_a_float_is_truncated_and_nan_refused():
    env = env1()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    stream = env.from_collection([("a", 999.9), ("a", 1000.0)]).assign_timestamps_and_watermarks(strategy)
    stamped = list(stream.process(RecordTimestamp()).execute_and_collect())
    assert stamped == [(("a", 999.9), 999), (("a", 1000.0), 1000)]
    assert all(type(ts) is int for _, ts in stamped)  # truncated to int milliseconds

    env = env1()
    stream = env.from_collection([("a", float("nan"))]).assign_timestamps_and_watermarks(strategy)
    with pytest.raises(FluvialError) as info:
        list(
            stream.key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(1000))
            .reduce(lambda a, b: a)
            .execute_and_collect()
        )
    assert "timestamp assigner returned nan" in failure_text(info.value)


@pytest.mark.timeout(60)
def test_event_time_window_over_records_without_timestamps_fails_the_job_clearly():
    env = env1()
    job = (
        env.from_collection([("a", 1)])
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(1000))
        .reduce(lambda a, b: a)
    )
    with pytest.raises(FluvialError) as info:
        list(job.execute_and_collect())
    text = failure_text(info.value)
    assert "no timestamp" in text and "assign_timestamps_and_watermarks" in text


@pytest.mark.timeout(60)
def test_dynamic_gap_of_zero_fails_the_job_clearly():
    env = env1()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    job = (
        env.from_collection([("a", 10, 100), ("a", 20, 0)])
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_dynamic_gap(lambda e: e[2]))
        .reduce(lambda a, b: a)
    )
    with pytest.raises(FluvialError) as info:
        list(job.execute_and_collect())
    text = failure_text(info.value)
    assert "returned 0 ms" in text and "gap must be > 0" in text
