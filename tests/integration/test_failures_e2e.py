"""A user exception fails the job: execute() raises JobExecutionException naming the operator and subtask,
with the user's exception (and its traceback) as the cause; every other task is cancelled, user functions are
closed, and execute() returns instead of hanging."""

from __future__ import annotations

import threading
import time
import traceback

import pytest

from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.datastream import MapFunction, SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

# Module-level registries: each parallel subtask runs its own copy of a function object, so copies report here.
EVENTS: list[tuple[str, int]] = []
EVENTS_LOCK = threading.Lock()


def _record(event: str, index: int) -> None:
    with EVENTS_LOCK:
        EVENTS.append((event, index))


@pytest.fixture(autouse=True)
def _clear_events():
    EVENTS.clear()
    yield
    EVENTS.clear()


class DivideBy(MapFunction):
    """Raises ZeroDivisionError on the record 500."""

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        _record("open", self.index)

    def map(self, value):
        return 1 / (value - 500)  # the user's failing line

    def close(self):
        _record("close", self.index)


class EndlessSource(Source):
    """Never ends: its reader answers [] ("nothing now") forever."""

    def get_boundedness(self):
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism):
        return [f"s{i}" for i in range(parallelism)]

    def create_reader(self, task_info):
        return EndlessReader()


class EndlessReader(SourceReader):
    def add_splits(self, splits):
        pass

    def poll(self, max_records):
        return []

    def snapshot_state(self):
        return []

    def close(self):
        _record("endless-reader-close", 0)


class Recording(MapFunction):
    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return value

    def close(self):
        _record("endless-map-close", self.index)


def _env(parallelism: int = 2) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


@pytest.mark.timeout(60)
def test_user_exception_fails_job_with_operator_subtask_and_cause():
    env = _env(2)
    env.from_source(NumberSequenceSource(1, 1000)).map(DivideBy()).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute("failing job")
    error = info.value
    message = str(error)
    assert "Map" in message
    assert "(1/2)" in message or "(2/2)" in message  # the failing subtask
    assert "ZeroDivisionError" in message
    assert not isinstance(error, JobCancelledException)
    cause = error.__cause__
    assert isinstance(cause, ZeroDivisionError)
    frames = traceback.extract_tb(cause.__traceback__)
    user_frames = [f for f in frames if f.filename == __file__ and f.name == "map"]
    assert user_frames, [f"{f.filename}:{f.name}" for f in frames]
    assert "the user's failing line" in user_frames[-1].line or "1 / (value - 500)" in user_frames[-1].line


@pytest.mark.timeout(60)
def test_failing_job_closes_every_opened_function():
    env = _env(2)
    env.from_source(NumberSequenceSource(1, 1000)).map(DivideBy()).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException):
        env.execute()
    opened = sorted(i for e, i in EVENTS if e == "open")
    closed = sorted(i for e, i in EVENTS if e == "close")
    assert opened == [0, 1]
    assert closed == opened  # each subtask's copy closed exactly once


@pytest.mark.timeout(60)
def test_failure_cancels_an_endless_pipeline_and_execute_returns():
    env = _env(2)
    env.from_source(EndlessSource()).map(Recording()).add_sink(lambda v: None)
    env.from_source(NumberSequenceSource(1, 1000)).map(DivideBy()).add_sink(lambda v: None)
    started = time.monotonic()
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert time.monotonic() - started < 30
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert sorted(i for e, i in EVENTS if e == "endless-map-close") == [0, 1]
    assert [e for e, _ in EVENTS].count("endless-reader-close") == 2


@pytest.mark.timeout(60)
def test_failure_downstream_of_a_shuffle_cancels_a_blocked_upstream():
    """The consumer dies; the producer's channel to it fills up. The producer must still be cancelled."""
    env = _env(2)
    (
        env.from_source(NumberSequenceSource(1, 5_000_000))
        .rebalance()
        .map(DivideBy())
        .add_sink(lambda v: None)
    )
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert isinstance(info.value.__cause__, ZeroDivisionError)


class FailingOpen(MapFunction):
    def open(self, runtime_context):
        raise KeyError("missing-config")

    def map(self, value):
        return value


@pytest.mark.timeout(60)
def test_exception_in_open_fails_the_job():
    env = _env(2)
    env.from_collection([1, 2, 3]).map(FailingOpen()).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert isinstance(info.value.__cause__, KeyError)
    assert "Map" in str(info.value)


class ExplodingSink(SinkFunction):
    def invoke(self, value, context):
        if value == 7:
            raise RuntimeError("sink rejected 7")


@pytest.mark.timeout(60)
def test_exception_in_sink_names_the_sink():
    env = _env(1)
    env.from_collection(list(range(10))).add_sink(ExplodingSink())
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert "Sink" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert str(info.value.__cause__) == "sink rejected 7"


@pytest.mark.timeout(60)
def test_execute_and_collect_raises_the_failure_from_next():
    env = _env(2)
    stream = env.from_source(NumberSequenceSource(1, 1000)).map(DivideBy())
    with pytest.raises(JobExecutionException) as info:
        list(stream.execute_and_collect())
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.timeout(60)
def test_failure_in_keyed_reduce_at_parallelism_two_names_the_reduce():
    env = _env(2)
    (
        env.from_collection([("a", 1), ("b", 5), ("a", 2), ("b", 0)])
        .key_by(lambda p: p[0])
        .reduce(lambda x, y: (x[0], x[1] // y[1]))
        .add_sink(lambda v: None)
    )
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "Keyed Reduce" in str(info.value)


class HoldsALock(MapFunction):
    def __init__(self):
        self.lock = threading.Lock()

    def map(self, value):
        with self.lock:
            return value


@pytest.mark.timeout(60)
def test_function_that_cannot_be_copied_per_subtask_fails_with_a_clear_error():
    env = _env(2)
    env.from_collection([1, 2, 3]).map(HoldsALock()).set_parallelism(2).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    cause = info.value.__cause__
    assert "open()" in str(cause) and "HoldsALock" in str(cause)
    # at parallelism 1 the user's own object runs, as before
    env = _env(1)
    env.from_collection([1, 2, 3]).map(HoldsALock()).add_sink(lambda v: None)
    env.execute()


class FailingClose(MapFunction):
    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return value

    def close(self):
        _record("failing-close", self.index)
        raise OSError("flush on close failed")


@pytest.mark.timeout(60)
def test_exception_in_close_fails_the_job_and_close_runs_once():
    env = _env(2)
    env.from_source(NumberSequenceSource(1, 100)).map(FailingClose()).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert isinstance(info.value.__cause__, OSError)
    assert "Map" in str(info.value)
    assert sorted(i for e, i in EVENTS if e == "failing-close") == [0, 1]
