"""A user exception fails the job: execute() raises JobExecutionException naming the operator and subtask,
with the user's exception (and its traceback) as the cause; every other task is cancelled, user functions are
closed, and execute() returns instead of hanging — with TaskManagers as threads and as processes."""

from __future__ import annotations

import threading
import traceback

import pytest

from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.datastream import MapFunction, SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader
from fluvial.testing import EventLog, ExecutionMode, environment


@pytest.fixture
def events(tmp_path) -> EventLog:
    """Where every subtask's copy of a function reports open and close, whichever process it runs in."""
    return EventLog(tmp_path / "events")


class DivideBy(MapFunction):
    """Raises ZeroDivisionError on the record 500."""

    def __init__(self, events: EventLog | None = None) -> None:
        self.events = events

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        if self.events is not None:
            self.events.record("open", self.index)

    def map(self, value):
        return 1 / (value - 500)  # the user's failing line

    def close(self):
        if self.events is not None:
            self.events.record("close", self.index)


class EndlessSource(Source):
    """Never ends: its reader answers [] ("nothing now") forever."""

    def __init__(self, events: EventLog) -> None:
        self.events = events

    def get_boundedness(self):
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism):
        return [f"s{i}" for i in range(parallelism)]

    def create_reader(self, task_info):
        return EndlessReader(self.events)


class EndlessReader(SourceReader):
    def __init__(self, events: EventLog) -> None:
        self.events = events

    def add_splits(self, splits):
        pass

    def poll(self, max_records):
        return []

    def snapshot_state(self):
        return []

    def close(self):
        self.events.record("endless-reader-close", 0)


class Recording(MapFunction):
    def __init__(self, events: EventLog) -> None:
        self.events = events

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return value

    def close(self):
        self.events.record("endless-map-close", self.index)


def _env(mode: ExecutionMode, parallelism: int = 2) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


@pytest.mark.timeout(60)
def test_user_exception_fails_job_with_operator_subtask_and_cause(mode):
    env = _env(mode)
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
    # the printed error shows the user's failing line: in this process its own traceback; from a TaskManager
    # process (a traceback does not pickle) the text of it, chained as the cause, as concurrent.futures does
    printed = "".join(traceback.format_exception(cause))
    assert f'File "{__file__}"' in printed and ", in map" in printed, printed
    assert "return 1 / (value - 500)  # the user's failing line" in printed, printed


@pytest.mark.timeout(60)
def test_failing_job_closes_every_opened_function(mode, events):
    env = _env(mode)
    env.from_source(NumberSequenceSource(1, 1000)).map(DivideBy(events)).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException):
        env.execute()
    opened = sorted(events.values("open"))
    closed = sorted(events.values("close"))
    # the failing subtask opened; the other may be cancelled before it opens (its TaskManager process deploys it
    # after the failure is known), and then it has nothing to close — or while in `open`, before it recorded
    # the event: its copy is closed all the same, as every function whose open began is
    assert opened in ([0], [1], [0, 1]), opened
    assert len(set(closed)) == len(closed), closed  # no copy closed twice
    assert set(opened) <= set(closed) <= {0, 1}, (opened, closed)  # each copy that opened closed


@pytest.mark.timeout(60)
def test_failure_cancels_an_endless_pipeline_and_execute_returns(mode, events):
    env = _env(mode)
    env.from_source(EndlessSource(events)).map(Recording(events)).add_sink(lambda v: None)
    env.from_source(NumberSequenceSource(1, 1000)).map(DivideBy()).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert sorted(events.values("endless-map-close")) == [0, 1]
    assert events.count("endless-reader-close") == 2


@pytest.mark.timeout(60)
def test_failure_downstream_of_a_shuffle_cancels_a_blocked_upstream(mode):
    """The consumer dies; the producer's channel to it fills up (out of credit, in process mode). The producer
    must still be cancelled."""
    env = _env(mode)
    (env.from_source(NumberSequenceSource(1, 5_000_000)).rebalance().map(DivideBy()).add_sink(lambda v: None))
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert isinstance(info.value.__cause__, ZeroDivisionError)


class FailingOpen(MapFunction):
    def open(self, runtime_context):
        raise KeyError("missing-config")

    def map(self, value):
        return value


@pytest.mark.timeout(60)
def test_exception_in_open_fails_the_job(mode):
    env = _env(mode)
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
def test_exception_in_sink_names_the_sink(mode):
    env = _env(mode, 1)
    env.from_collection(list(range(10))).add_sink(ExplodingSink())
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert "Sink" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert str(info.value.__cause__) == "sink rejected 7"


@pytest.mark.timeout(60)
def test_execute_and_collect_raises_the_failure_from_next(mode):
    env = _env(mode)
    stream = env.from_source(NumberSequenceSource(1, 1000)).map(DivideBy())
    with pytest.raises(JobExecutionException) as info:
        list(stream.execute_and_collect())
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.timeout(60)
def test_failure_in_keyed_reduce_at_parallelism_two_names_the_reduce(mode):
    env = _env(mode)
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
    """Thread mode only: it copies the user's function for each subtask in this process. In process mode every
    subtask unpickles its own copy, and a function that cannot be pickled is refused at submission
    (test_process_mode_e2e.py)."""
    env = _env(ExecutionMode.THREADS)
    env.from_collection([1, 2, 3]).map(HoldsALock()).set_parallelism(2).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    cause = info.value.__cause__
    assert "open()" in str(cause) and "HoldsALock" in str(cause)
    # at parallelism 1 the user's own object runs, as before
    env = _env(ExecutionMode.THREADS, 1)
    env.from_collection([1, 2, 3]).map(HoldsALock()).add_sink(lambda v: None)
    env.execute()


class FailingClose(MapFunction):
    def __init__(self, events: EventLog) -> None:
        self.events = events

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.events.record("open", self.index)

    def map(self, value):
        return value

    def close(self):
        self.events.record("failing-close", self.index)
        raise OSError("flush on close failed")


@pytest.mark.timeout(60)
def test_exception_in_close_fails_the_job_and_close_runs_once(mode, events):
    env = _env(mode)
    env.from_source(NumberSequenceSource(1, 100)).map(FailingClose(events)).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert isinstance(info.value.__cause__, OSError)
    assert "Map" in str(info.value)
    # every subtask that opened closed once; the first failure cancels the other subtask, which may not have
    # opened yet when its TaskManager process started later (then it neither opens nor closes, as in Flink)
    closed = sorted(events.values("failing-close"))
    assert closed and closed == sorted(events.values("open")), (closed, events.values("open"))


class UnpicklableError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()  # an exception that cannot be pickled, so cannot leave its process as itself


def raise_unpicklable(value):
    if value == 5:
        raise UnpicklableError("no pickle for me")
    return value


@pytest.mark.timeout(60)
def test_an_exception_that_cannot_be_pickled_fails_the_job_naming_its_type_and_message(mode):
    env = _env(mode)
    env.from_collection(list(range(10))).map(raise_unpicklable).add_sink(lambda v: None)
    with pytest.raises(JobExecutionException) as info:
        env.execute()
    assert "Map" in str(info.value) and "UnpicklableError" in str(info.value), str(info.value)
    assert "no pickle for me" in str(info.value.__cause__)
    assert "TaskManager" not in str(info.value)  # the task failed; no TaskManager was taken for lost
