"""Checkpoint failures on real jobs (CheckpointFailureManager): with no tolerated failure the first failed
checkpoint fails the job with a message about consecutive checkpoint failures whose cause chain says what went
wrong; with a high tolerable number the job keeps running and its output is complete.

A bounded job commits its last output through a final checkpoint (FLIP-147), so one whose every checkpoint
fails cannot finish; the tests where no checkpoint ever succeeds turn `checkpoints-after-tasks-finish` off, and
the job commits its last output at end of input, as before FLIP-147.

Three real ways for a checkpoint to fail:
- a state larger than JobManagerCheckpointStorage's max_state_size (the asynchronous part declines);
- the checkpoint directory replaced by a plain file mid-run (writing the state fails, the task declines);
- a checkpoint timeout shorter than the barrier needs to pass a slow, backpressured operator (TIMEOUT).
"""

from __future__ import annotations

import shutil
import threading
import time

import pytest

from fluvial.checkpoint.failure_manager import CheckpointFailuresExceededError
from fluvial.common import Encoder, Types
from fluvial.common.errors import JobExecutionException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import KeyedProcessFunction, MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.testing import ExecutionMode, environment
from fluvial.testing.oracle import committed_lines
from tests.integration.layouts import PARALLELISM_AND_MODE

KEYS = 5


class Slow(MapFunction):
    """Sleeps `millis` every `every` records, so checkpoints are triggered while the job runs."""

    def __init__(self, every: int, millis: float = 1.0) -> None:
        self.every = every
        self.millis = millis
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.seen % self.every == 0:
            time.sleep(self.millis / 1000)
        return value


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value % KEYS}|{value}|{count}"


def visible_lines(base) -> list[str]:
    return committed_lines(base)[0]


def without_final_checkpoint():
    from fluvial.common import Configuration

    return Configuration().set_string("execution.checkpointing.checkpoints-after-tasks-finish", "false")


def build_job(
    tmp_path,
    n: int,
    slow: MapFunction,
    *,
    tolerable: int,
    storage,
    mode: ExecutionMode,
    timeout_ms: int | None = None,
    slow_after_shuffle: bool = False,
    configuration=None,
):
    env = environment(mode, configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(50)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage(storage)
    config.set_tolerable_checkpoint_failure_number(tolerable)
    if timeout_ms is not None:
        config.set_checkpoint_timeout(timeout_ms)
    env.set_restart_strategy(RestartStrategies.no_restart())
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    numbers = env.from_source(NumberSequenceSource(1, n))
    if slow_after_shuffle:
        numbers = numbers.rebalance().map(slow).key_by(lambda v: v % KEYS)
    else:
        numbers = numbers.map(slow).key_by(lambda v: v % KEYS)
    numbers.process(CountPerKey()).sink_to(sink)
    return env


def cause_chain(error: BaseException) -> list[BaseException]:
    chain = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def assert_complete_output(tmp_path, n: int) -> None:
    lines = visible_lines(tmp_path / "out")
    seqs = sorted(int(line.split("|")[1]) for line in lines)
    assert seqs == list(range(1, n + 1))
    finals: dict[int, int] = {}
    for line in lines:
        key, _, count = (int(part) for part in line.split("|"))
        finals[key] = max(count, finals.get(key, 0))
    assert finals == {k: len(range(k or KEYS, n + 1, KEYS)) for k in range(KEYS)}


def assert_fails_on_consecutive_checkpoint_failures(env, *needles: str) -> None:
    with pytest.raises(JobExecutionException) as info:
        env.execute("checkpoint failures")
    error = info.value
    assert "consecutive checkpoints failed and 0 are tolerated" in str(error)
    assert isinstance(error.__cause__, CheckpointFailuresExceededError)
    text = " / ".join(str(e) for e in cause_chain(error))
    for needle in needles:
        assert needle in text, f"{needle!r} not in the error chain: {text}"


# -- state too large for the JobManager ---------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_state_over_max_state_size_fails_the_job_when_nothing_is_tolerated(tmp_path, mode):
    env = build_job(
        tmp_path, 20_000, Slow(20), tolerable=0, storage=JobManagerCheckpointStorage(max_state_size=8), mode=mode
    )
    assert_fails_on_consecutive_checkpoint_failures(env, "max_state_size", "ASYNC_ERROR")


@pytest.mark.timeout(60)
def test_state_over_max_state_size_is_tolerated_and_the_job_completes(tmp_path, mode):
    n = 8_000
    env = build_job(
        tmp_path,
        n,
        Slow(20),
        tolerable=1_000_000,
        storage=JobManagerCheckpointStorage(max_state_size=8),
        mode=mode,
        configuration=without_final_checkpoint(),
    )
    client = env.execute_async("tolerated checkpoint failures")
    client.get_job_execution_result().result(timeout=50)
    assert client._job_master.checkpointing.store.latest() is None, "a checkpoint completed: nothing failed"
    assert_complete_output(tmp_path, n)


# -- the checkpoint directory stops being a directory mid-run -----------------------------------------------------


def break_checkpoint_dir_after_first_checkpoint(base, client, broken: threading.Event) -> None:
    """Wait until a checkpoint completed, then replace the job's checkpoint directory by a plain file."""
    job_dir = base / str(client.get_job_id())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not client.get_job_execution_result().done():
        if any((chk / "_metadata").exists() for chk in job_dir.glob("chk-*")):
            shutil.rmtree(job_dir, ignore_errors=True)
            job_dir.write_text("not a directory")
            broken.set()
            return
        time.sleep(0.005)


def start_with_breaking_dir(tmp_path, n: int, tolerable: int, mode: ExecutionMode):
    base = tmp_path / "checkpoints"
    storage = FileSystemCheckpointStorage(f"file://{base}", file_state_size_threshold=0)
    env = build_job(
        tmp_path, n, Slow(10), tolerable=tolerable, storage=storage, mode=mode, configuration=without_final_checkpoint()
    )
    client = env.execute_async("breaking checkpoint dir")
    broken = threading.Event()
    breaker = threading.Thread(target=break_checkpoint_dir_after_first_checkpoint, args=(base, client, broken))
    breaker.start()
    return client, breaker, broken, base / str(client.get_job_id())


@pytest.mark.timeout(60)
def test_checkpoint_dir_lost_mid_run_fails_the_job_naming_the_path(tmp_path, mode):
    client, breaker, broken, job_dir = start_with_breaking_dir(tmp_path, 40_000, tolerable=0, mode=mode)
    with pytest.raises(JobExecutionException) as info:
        client.get_job_execution_result().result(timeout=50)
    breaker.join()
    assert broken.is_set(), "the job ended before a checkpoint completed"
    error = info.value
    assert "consecutive checkpoints failed and 0 are tolerated" in str(error)
    text = " / ".join(str(e) for e in cause_chain(error))
    assert str(job_dir) in text, text


@pytest.mark.timeout(60)
def test_checkpoint_dir_lost_mid_run_is_tolerated_and_the_job_completes(tmp_path, mode):
    n = 20_000
    client, breaker, broken, _ = start_with_breaking_dir(tmp_path, n, tolerable=1_000_000, mode=mode)
    client.get_job_execution_result().result(timeout=50)
    breaker.join()
    assert broken.is_set(), "the job ended before a checkpoint completed"
    assert_complete_output(tmp_path, n)


# -- checkpoints that time out ------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_checkpoint_timeout_fails_the_job_when_nothing_is_tolerated(tmp_path, mode):
    """A shuffle and an operator that sleeps 30 ms per 100 records: its input channel is always full, so a
    barrier queues behind buffers and needs far more than the 10 ms timeout to reach the end of the job."""
    env = build_job(
        tmp_path,
        1_000_000,
        Slow(100, 30),
        tolerable=0,
        storage=JobManagerCheckpointStorage(),
        mode=mode,
        timeout_ms=10,
        slow_after_shuffle=True,
    )
    assert_fails_on_consecutive_checkpoint_failures(env, "TIMEOUT", "expired")


@pytest.mark.timeout(60)
def test_checkpoint_timeouts_are_tolerated_and_the_job_completes(tmp_path, mode):
    n = 6_000
    env = build_job(
        tmp_path,
        n,
        Slow(100, 30),
        tolerable=1_000_000,
        storage=JobManagerCheckpointStorage(),
        mode=mode,
        timeout_ms=10,
        slow_after_shuffle=True,
    )
    client = env.execute_async("tolerated timeouts")
    client.get_job_execution_result().result(timeout=50)
    assert_complete_output(tmp_path, n)


# -- what is not a checkpoint failure -----------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_a_checkpoint_racing_a_finishing_task_does_not_fail_the_job(tmp_path, monkeypatch, parallelism, mode):
    """A bounded job with checkpoints every 10 ms and no tolerated failure. A subtask's end reaches the JobMaster
    a little after the subtask left its TaskManager (widened here to 50 ms, as a busy machine might): a
    checkpoint triggered in that gap cannot complete, but it is not a failure — the job must finish."""
    from fluvial.cluster.job_master import JobMaster

    report = JobMaster.update_task_execution_state

    def late_finished_reports(self, update):
        if update.state.value == "FINISHED":
            time.sleep(0.05)
        return report(self, update)

    monkeypatch.setattr(JobMaster, "update_task_execution_state", late_finished_reports)
    n = 20_000
    env = build_job(tmp_path, n, Slow(1_000), tolerable=0, storage=JobManagerCheckpointStorage(), mode=mode)
    env.set_parallelism(parallelism)
    env.get_checkpoint_config().set_checkpoint_interval(10)
    env.execute("checkpoints racing the end")
    assert_complete_output(tmp_path, n)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("tolerated", ["0", "1000000"])
def test_tolerable_failures_from_configuration_key(tmp_path, tolerated):
    """`execution.checkpointing.tolerable-failed-checkpoints` decides, like the setter, whether failing
    checkpoints (state over max_state_size) fail the job."""

    n = 8_000
    configuration = without_final_checkpoint().set_string(
        "execution.checkpointing.tolerable-failed-checkpoints", tolerated
    )
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    assert env.get_checkpoint_config().get_tolerable_checkpoint_failure_number() == int(tolerated)
    env.set_parallelism(1)
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(JobManagerCheckpointStorage(max_state_size=8))
    env.set_restart_strategy(RestartStrategies.no_restart())
    results = []
    env.from_source(NumberSequenceSource(1, n)).map(Slow(20)).key_by(lambda v: v % KEYS).process(
        CountPerKey()
    ).add_sink(results.append)
    if tolerated == "0":
        assert_fails_on_consecutive_checkpoint_failures(env, "max_state_size")
    else:
        env.execute("failures tolerated by configuration")
        assert len(results) == n
