"""Savepoints on real jobs: take one mid-stream, end the job, and run the job again from it — at another
parallelism too. Keyed state moves by key group, source positions are redistributed, and operators are matched
by uid.

Oracle: periodic checkpoints are effectively off (an hour apart), so the first run's committed output is exactly
what came before the savepoint's barrier; the second run's is everything after it. A savepoint taken while the
job goes on commits nothing (only stop-with-savepoint does, as in Flink 1.15+): the first run's output before
it is committed by the second run, which re-commits what the savepoint recorded when it restores. Over both runs every number
appears exactly once, and for each key the counts emitted are exactly 1..(records of that key): the state in
the savepoint counted every record before the barrier once, and the restored sources replay exactly the rest.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter, defaultdict

import pytest

from fluvial.common import Configuration, Encoder, Types
from fluvial.common.errors import JobCancelledException, StateError
from fluvial.datastream import KeyedProcessFunction, MapFunction, SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
from fluvial.testing import EventLog, ExecutionMode, environment

N = 30_000
KEYS = 11


class SlowWithProgress(MapFunction):
    """Sleeps a millisecond every 20 records; touches `progress` once it has seen 500 records, so a test knows
    the job is well under way (every task running, records flowing)."""

    def __init__(self, progress: str) -> None:
        self.progress = progress

    def open(self, runtime_context):
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.seen % 20 == 0:
            time.sleep(0.001)
        if self.seen == 500:
            open(self.progress, "a").close()
        return value


class RecordAll(SinkFunction):
    """Every value it receives, as an "out" event of `log` (whichever process the sink runs in)."""

    def __init__(self, log: EventLog) -> None:
        self.log = log

    def invoke_batch(self, values, context):
        self.log.record_all("out", list(values))


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value % KEYS}|{value}|{count}"


def build(
    tmp_path,
    run: str,
    parallelism: int,
    *,
    savepoint: str | None = None,
    count_uid: str = "count",
    ignore_unclaimed: bool = False,
    backend=HashMapStateBackend,
    mode: ExecutionMode | None = None,
    file_state_threshold: int | None = None,
) -> StreamExecutionEnvironment:
    """The job of run `run`, in execution `mode` (None: the default, auto). `file_state_threshold`: checkpoints
    (and so savepoints) go to file-system storage that writes every state of at least this size to a file."""
    configuration = Configuration()
    if savepoint is not None:
        configuration.set_string("execution.savepoint.path", savepoint)
    if ignore_unclaimed:
        configuration.set_boolean("execution.savepoint.ignore-unclaimed-state", True)
    env = environment(mode, configuration)
    env.set_parallelism(parallelism)
    env.set_state_backend(backend())
    env.enable_checkpointing(3_600_000)  # savepoints need checkpointing; no periodic checkpoint interferes
    if file_state_threshold is not None:
        env.get_checkpoint_config().set_checkpoint_storage(
            FileSystemCheckpointStorage(
                f"file://{tmp_path / 'checkpoints'}", file_state_size_threshold=file_state_threshold
            )
        )
    sink = (
        FileSink.for_row_format(str(tmp_path / run), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(NumberSequenceSource(1, N), source_name="numbers")
        .uid("numbers")
        .map(SlowWithProgress(str(tmp_path / f"{run}.progress")))
        .uid("slow")
        .key_by(lambda v: v % KEYS)
        .process(CountPerKey())
        .uid(count_uid)
        .sink_to(sink)
        .uid("sink")
    )
    return env


def committed(base) -> list[tuple[int, int, int]]:
    records = []
    for root, _, names in os.walk(base):
        for name in names:
            if not name.startswith("."):
                with open(os.path.join(root, name), encoding="utf-8") as handle:
                    records.extend(tuple(int(p) for p in line.split("|")) for line in handle.read().splitlines())
    return records


def wait_for(path, client, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert not client.get_job_execution_result().done(), "the job ended before it made progress"
        assert time.monotonic() < deadline, f"no progress within {timeout} s"
        time.sleep(0.005)


def savepoint_mid_stream(
    tmp_path,
    parallelism: int,
    stop: bool = False,
    backend=HashMapStateBackend,
    mode: ExecutionMode | None = None,
    file_state_threshold: int | None = None,
) -> str:
    """Run 1 at `parallelism`; once records flow, take a savepoint and end the job; return its path."""
    env = build(tmp_path, "run1", parallelism, backend=backend, mode=mode, file_state_threshold=file_state_threshold)
    client = env.execute_async("savepoint run 1")
    wait_for(tmp_path / "run1.progress", client)
    target = str(tmp_path / "savepoints")
    if stop:
        path = client.stop_with_savepoint(savepoint_directory=target).result(timeout=30)
        # the job ends (stopped: cancelled here, FINISHED in Flink's terms; either way, not failed)
        error = client.get_job_execution_result().exception(timeout=30)
        assert error is None or isinstance(error, JobCancelledException), repr(error)
    else:
        path = client.trigger_savepoint(target).result(timeout=30)
        client.cancel()
        with pytest.raises(JobCancelledException):
            client.get_job_execution_result().result(timeout=30)
    assert path.startswith("file://") and str(tmp_path / "savepoints") in path
    assert os.path.exists(os.path.join(path.removeprefix("file://"), "_metadata"))
    return path


def assert_exactly_once_over_both_runs(first, second) -> None:
    assert 0 < len(first) < N, f"the savepoint was not mid-stream: {len(first)} of {N} records before it"
    seqs = Counter(seq for _, seq, _ in first + second)
    assert not [s for s, c in seqs.items() if c > 1], "records emitted by both runs (or twice in one)"
    assert set(seqs) == set(range(1, N + 1)), f"{N - len(seqs)} records lost"
    counts = defaultdict(list)
    for key, _, count in first + second:
        counts[key].append(count)
    for key in range(KEYS):
        expected = len(range(key or KEYS, N + 1, KEYS))
        assert sorted(counts[key]) == list(range(1, expected + 1)), f"key {key}: state not carried exactly once"


THREADS, PROCESSES = ExecutionMode.THREADS, ExecutionMode.PROCESSES


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "before, after, mode, backend",
    [
        # pairwise: each rescaling in both execution modes, each backend in both modes (a full product costs twice)
        pytest.param(2, 3, THREADS, HashMapStateBackend, id="2-3-thread-hashmap"),
        pytest.param(2, 3, PROCESSES, EmbeddedRocksDBStateBackend, id="2-3-process-rocksdb"),
        pytest.param(3, 1, THREADS, EmbeddedRocksDBStateBackend, id="3-1-thread-rocksdb"),
        pytest.param(3, 1, PROCESSES, HashMapStateBackend, id="3-1-process-hashmap"),
        pytest.param(2, 2, THREADS, EmbeddedRocksDBStateBackend, id="2-2-thread-rocksdb"),
        pytest.param(2, 2, PROCESSES, HashMapStateBackend, id="2-2-process-hashmap"),
    ],
)
def test_savepoint_restores_at_another_parallelism(tmp_path, before, after, mode, backend):
    path = savepoint_mid_stream(tmp_path, before, backend=backend, mode=mode)
    assert not committed(tmp_path / "run1"), "an intermediate savepoint committed output"
    env = build(tmp_path, "run2", after, savepoint=path, backend=backend, mode=mode)
    env.execute("savepoint run 2")
    assert_exactly_once_over_both_runs(committed(tmp_path / "run1"), committed(tmp_path / "run2"))


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "mode, backend",
    [
        pytest.param(THREADS, HashMapStateBackend, id="thread-hashmap"),
        pytest.param(PROCESSES, EmbeddedRocksDBStateBackend, id="process-rocksdb"),
    ],
)
def test_a_moved_savepoint_restores_from_its_new_place(tmp_path, mode, backend):
    """Savepoints are relocatable (issue 13, defect 10): `_metadata` names its own files relatively."""
    path = savepoint_mid_stream(tmp_path, 2, backend=backend, mode=mode, file_state_threshold=0)  # all in files
    assert len(os.listdir(path.removeprefix("file://"))) > 1, "the savepoint holds no state files to relocate"
    moved = tmp_path / "archive" / "moved-savepoint"
    moved.parent.mkdir(mode=0o700)
    shutil.move(path.removeprefix("file://"), moved)
    shutil.rmtree(tmp_path / "savepoints")  # nothing of the savepoint is left where it was written
    build(tmp_path, "run2", 3, savepoint=str(moved), backend=backend, mode=mode).execute("from a moved savepoint")
    assert_exactly_once_over_both_runs(committed(tmp_path / "run1"), committed(tmp_path / "run2"))


@pytest.mark.timeout(120)
def test_stop_with_savepoint_then_restore(tmp_path, mode):
    path = savepoint_mid_stream(tmp_path, 2, stop=True, mode=mode)
    first = committed(tmp_path / "run1")
    assert first, "stop-with-savepoint did not commit what its savepoint covers"
    build(tmp_path, "run2", 3, savepoint=path, mode=mode).execute("after stop-with-savepoint")
    assert_exactly_once_over_both_runs(first, committed(tmp_path / "run2"))


@pytest.mark.timeout(120)
def test_state_of_no_operator_fails_naming_it_unless_unclaimed_state_is_ignored(tmp_path):
    path = savepoint_mid_stream(tmp_path, 2)
    env = build(tmp_path, "refused", 2, savepoint=path, count_uid="count-v2")
    with pytest.raises(StateError) as info:
        env.execute_async("changed uid")
    message = str(info.value)
    assert "'count'" in message or " count" in message, message
    assert "ignore-unclaimed-state" in message
    assert not (tmp_path / "refused").exists() or not committed(tmp_path / "refused")

    env = build(tmp_path, "run2", 2, savepoint=path, count_uid="count-v2", ignore_unclaimed=True)
    env.execute("changed uid, unclaimed state ignored")
    first, second = committed(tmp_path / "run1"), committed(tmp_path / "run2")
    # the sources still resumed from the savepoint: together the runs saw every number exactly once ...
    seqs = Counter(seq for _, seq, _ in first + second)
    assert set(seqs) == set(range(1, N + 1)) and max(seqs.values()) == 1
    # ... but the renamed operator started from empty state: its counts cover only the second run's records
    per_key = Counter(key for key, _, _ in second)
    finals = defaultdict(int)
    for key, _, count in second:
        finals[key] = max(finals[key], count)
    assert dict(finals) == dict(per_key)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "before, after, mode",
    [
        pytest.param(HashMapStateBackend, EmbeddedRocksDBStateBackend, THREADS, id="hashmap-to-rocksdb-thread"),
        pytest.param(EmbeddedRocksDBStateBackend, HashMapStateBackend, PROCESSES, id="rocksdb-to-hashmap-process"),
    ],
)
def test_savepoint_restores_with_the_other_state_backend(tmp_path, before, after, mode):
    path = savepoint_mid_stream(tmp_path, 2, backend=before, mode=mode)
    build(tmp_path, "run2", 3, savepoint=path, backend=after, mode=mode).execute("switched state backend")
    assert_exactly_once_over_both_runs(committed(tmp_path / "run1"), committed(tmp_path / "run2"))


@pytest.mark.timeout(60)
def test_savepoint_of_a_finished_job_fails_promptly(tmp_path):
    env = build(tmp_path, "run1", 1)
    client = env.execute_async("finishes")
    client.get_job_execution_result().result(timeout=50)
    with pytest.raises(RuntimeError, match="FINISHED"):
        client.trigger_savepoint(str(tmp_path / "savepoints")).result(timeout=20)  # far below the checkpoint timeout


@pytest.mark.timeout(60)
def test_savepoint_while_a_subtask_has_ended_fails_promptly_and_the_job_goes_on(tmp_path):
    """A short collection source has finished while a slow sequence still runs (it ends after the first
    checkpoint that covers it, FLIP-147): the savepoint cannot include the ended subtask, so it fails at once,
    naming why — and neither hangs nor fails the job."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(100)
    results = EventLog(tmp_path / "results")
    short = env.from_collection([-1, -2, -3])
    slow = env.from_source(NumberSequenceSource(1, 20_000)).map(SlowWithProgress(str(tmp_path / "progress")))
    short.union(slow).add_sink(RecordAll(results))
    client = env.execute_async("one source ended")
    master = client._job_master
    deadline = time.monotonic() + 30
    while not any(execution.state.value == "FINISHED" for execution in master.scheduler.graph):
        assert time.monotonic() < deadline and not client.get_job_execution_result().done()
        time.sleep(0.005)
    with pytest.raises(RuntimeError, match="ended"):
        client.trigger_savepoint(str(tmp_path / "savepoints")).result(timeout=20)  # far below the checkpoint timeout
    client.get_job_execution_result().result(timeout=50)
    assert sorted(results.values("out")) == [-3, -2, -1] + list(range(1, 20_001))
