"""Job lifecycle as real jobs: repeated execute(), execute_async() and its JobClient, cancelling endless jobs,
slot checks, and jobs spread over several TaskManagers (channels crossing threads, or processes)."""

from __future__ import annotations

import threading
import time

import pytest

from fluvial.common import Configuration, Duration
from fluvial.common.errors import JobCancelledException, ResourceError
from fluvial.common.job_execution_result import JobExecutionResult
from fluvial.common.job_id import JobID
from fluvial.datastream import MapFunction, SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.file_system import FileSource, StreamFormat
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader
from fluvial.testing import EventLog, ExecutionMode, environment, wait_until


class Remember(SinkFunction):
    """Records what it receives under a name, in the test's EventLog (subtasks run copies, maybe in other
    processes)."""

    def __init__(self, seen: EventLog, name: str) -> None:
        self.seen = seen
        self.name = name

    def invoke(self, value, context):
        self.seen.record(self.name, value)


@pytest.fixture
def seen(tmp_path) -> EventLog:
    return EventLog(tmp_path / "seen")


def _env(mode: ExecutionMode | None, parallelism: int = 2, **config: str) -> StreamExecutionEnvironment:
    """An environment of `mode` (None: the default, auto)."""
    configuration = Configuration()
    for key, value in config.items():
        configuration.set_string(key.replace("_", "."), value)
    env = environment(mode, configuration)
    env.set_parallelism(parallelism)
    return env


# -- repeated execute ----------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_second_execute_runs_only_sinks_added_since_the_first(mode, seen):
    env = _env(mode)
    numbers = env.from_source(NumberSequenceSource(1, 100))
    numbers.add_sink(Remember(seen, "first"))
    first = env.execute("one")
    assert sorted(seen.values("first")) == list(range(1, 101))
    numbers.map(lambda x: -x).add_sink(Remember(seen, "second"))
    second = env.execute("two")
    assert sorted(seen.values("first")) == list(range(1, 101))  # not run again
    assert sorted(seen.values("second")) == [-x for x in range(100, 0, -1)]
    assert first.get_job_id() != second.get_job_id()


@pytest.mark.timeout(60)
def test_execute_with_no_new_sink_is_an_error(seen):
    env = _env(None, 1)
    env.from_collection([1]).add_sink(Remember(seen, "once"))
    env.execute()
    with pytest.raises(Exception, match="No operators defined"):
        env.execute()


# -- execute_async and JobClient -----------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_execute_async_returns_a_job_client_with_the_result(mode, seen):
    env = _env(mode)
    env.from_source(NumberSequenceSource(1, 1000)).map(lambda x: x % 7).add_sink(Remember(seen, "async"))
    client = env.execute_async("async job")
    job_id = client.get_job_id()
    assert isinstance(job_id, JobID) and len(str(job_id)) == 32
    result = client.get_job_execution_result().result(timeout=30)
    assert isinstance(result, JobExecutionResult)
    assert result.get_job_id() == job_id
    assert result.get_net_runtime() >= 0
    assert sorted(seen.values("async")) == sorted(x % 7 for x in range(1, 1001))
    assert client.get_job_status().result().name == "FINISHED"


class EndlessSource(Source):
    def __init__(self, seen: EventLog) -> None:
        self.seen = seen

    def get_boundedness(self):
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism):
        return list(range(parallelism))

    def create_reader(self, task_info):
        return IdleReader(self.seen)


class IdleReader(SourceReader):
    def __init__(self, seen: EventLog) -> None:
        self.seen = seen

    def add_splits(self, splits):
        pass

    def poll(self, max_records):
        self.seen.record("polls")
        return []

    def snapshot_state(self):
        return []


class CountClose(MapFunction):
    def __init__(self, seen: EventLog) -> None:
        self.seen = seen

    def map(self, value):
        return value

    def close(self):
        self.seen.record("closed")


@pytest.mark.timeout(60)
def test_cancel_an_endless_custom_source_job(mode, seen):
    env = _env(mode)
    env.from_source(EndlessSource(seen)).map(CountClose(seen)).add_sink(Remember(seen, "never"))
    client = env.execute_async("endless")
    try:
        wait_until(lambda: seen.count("polls") > 10, what="the endless source to poll")  # really running
        assert client.get_job_status().result().name == "RUNNING"
    finally:
        client.cancel().result(timeout=10)
    with pytest.raises(JobCancelledException):
        client.get_job_execution_result().result(timeout=30)
    assert client.get_job_status().result().name == "CANCELED"
    assert seen.count("closed") == 2
    polls = seen.count("polls")
    time.sleep(0.1)
    assert seen.count("polls") == polls  # nothing runs any more


@pytest.mark.timeout(60)
def test_cancel_a_monitoring_file_source_job(tmp_path, mode, seen):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("x\ny\n", encoding="utf-8")
    env = _env(mode, 1)
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path / "in"))
        .monitor_continuously(Duration.of_millis(20))
        .build()
    )
    env.from_source(source).add_sink(Remember(seen, "lines"))
    client = env.execute_async()
    try:
        wait_until(lambda: seen.count("lines") == 2, what="both lines")
        assert not client.get_job_execution_result().done()
    finally:
        client.cancel()
    with pytest.raises(JobCancelledException):
        client.get_job_execution_result().result(timeout=30)
    assert sorted(seen.values("lines")) == ["x", "y"]


@pytest.mark.timeout(60)
def test_cancel_after_finish_is_harmless(seen):
    env = _env(None, 1)
    env.from_collection([1, 2]).add_sink(Remember(seen, "done"))
    client = env.execute_async()
    client.get_job_execution_result().result(timeout=30)
    client.cancel()
    assert client.get_job_execution_result().exception() is None
    assert client.get_job_status().result().name == "FINISHED"


# -- slots and TaskManagers ----------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_too_few_slots_fails_naming_both_numbers(mode, seen):
    env = _env(mode, 4, **{"taskmanager_numberOfTaskSlots": "1", "local_number-taskmanager": "3"})
    env.from_source(NumberSequenceSource(1, 10)).add_sink(Remember(seen, "x"))
    with pytest.raises(ResourceError) as info:
        env.execute()
    message = str(info.value)
    assert "4" in message and "3" in message
    assert "taskmanager.numberOfTaskSlots" in message


@pytest.mark.timeout(60)
def test_slot_sharing_groups_add_up(mode, seen):
    """Groups "default" and "other" each need 2 slots; one TaskManager of 3 slots cannot hold them."""
    env = _env(mode, 2, **{"taskmanager_numberOfTaskSlots": "3", "local_number-taskmanager": "1"})
    env.from_source(NumberSequenceSource(1, 10)).map(lambda x: x).slot_sharing_group("other").add_sink(
        Remember(seen, "y")
    )
    with pytest.raises(ResourceError, match="needs 4 task slots"):
        env.execute()


class WhereAmI(MapFunction):
    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.thread = threading.current_thread().name

    def map(self, value):
        return (self.thread, self.index, value)


@pytest.mark.timeout(60)
def test_three_task_managers_run_a_shuffling_job_across_them(mode):
    """Each TaskManager runs its tasks on a thread named after it, in this process or its own."""
    env = _env(mode, 3, **{"local_number-taskmanager": "3", "taskmanager_numberOfTaskSlots": "1"})
    stream = (
        env.from_source(NumberSequenceSource(0, 29_999))
        .map(WhereAmI())
        .key_by(lambda t: t[2] % 11)
        .map(lambda t: (t[0], t[2]))
        .rebalance()
        .map(WhereAmI())
    )
    results = list(stream.execute_and_collect())
    assert sorted(value for _, _, (_, value) in results) == list(range(30_000))
    producer_threads = {thread for _, _, (thread, _) in results}
    consumer_threads = {thread for thread, _, _ in results}
    assert len(producer_threads) == 3 and len(consumer_threads) == 3
    assert all(name.startswith("fluvial-taskmanager-") for name in producer_threads | consumer_threads)
    # subtask i of each vertex shares slot i, and slots spread over the three TaskManagers
    assert len({(thread, index) for thread, index, _ in results}) == 3


@pytest.mark.timeout(60)
def test_three_task_managers_keyed_counts_are_exact(mode):
    env = _env(mode, 3, **{"local_number-taskmanager": "3"})
    words = [f"w{(i * 17) % 29}" for i in range(9000)]
    counts = list(env.from_collection(words).map(lambda w: (w, 1)).key_by(lambda p: p[0]).sum(1).execute_and_collect())
    final: dict = {}
    for word, count in counts:
        final[word] = max(final.get(word, 0), count)
    expected: dict = {}
    for w in words:
        expected[w] = expected.get(w, 0) + 1
    assert final == expected


def _taskmanager_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("fluvial-taskmanager-")}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("outcome", ["finished", "failed", "cancelled"])
def test_no_task_manager_thread_outlives_its_job(outcome, seen):
    """Thread mode only: its TaskManagers are threads of this process (that no TaskManager process outlives
    its job is checked through /proc in test_process_mode_e2e.py)."""
    before = _taskmanager_threads()
    env = _env(ExecutionMode.THREADS, 2, **{"local_number-taskmanager": "2"})
    if outcome == "finished":
        env.from_source(NumberSequenceSource(1, 1000)).rebalance().add_sink(Remember(seen, "t"))
        env.execute()
    elif outcome == "failed":
        env.from_source(NumberSequenceSource(1, 1000)).map(lambda x: 1 // (x - 5)).add_sink(Remember(seen, "t"))
        with pytest.raises(Exception):
            env.execute()
    else:
        env.from_source(EndlessSource(seen)).rebalance().add_sink(Remember(seen, "t"))
        client = env.execute_async()
        try:
            wait_until(lambda: seen.count("polls") > 5, what="the endless source to poll")
        finally:
            client.cancel()
        with pytest.raises(JobCancelledException):
            client.get_job_execution_result().result(timeout=30)
    wait_until(lambda: not (_taskmanager_threads() - before), timeout=15, what="every TaskManager thread to end")


@pytest.mark.timeout(60)
def test_concurrent_jobs_from_several_threads_do_not_mix(mode):
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            env = _env(mode)
            stream = env.from_source(NumberSequenceSource(1, 3000)).rebalance().map(lambda x, n=n: x * n)
            results[n] = sorted(stream.execute_and_collect())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(50)
    assert not errors, errors
    assert {n: r for n, r in results.items()} == {n: [x * n for x in range(1, 3001)] for n in range(1, 5)}
