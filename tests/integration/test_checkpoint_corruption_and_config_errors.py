"""Unusable checkpoints and wrong checkpoint settings fail loudly, naming the path or the value.

- The latest completed checkpoint damaged on disk (a state file flipped, truncated or deleted), then a failure:
  the restore reads that checkpoint, detects the damage by size and CRC, and the job fails with an error
  naming the damaged file — it never quietly restores an older retained checkpoint instead, and it fails at
  once: a restart strategy that allows a hundred restarts makes no difference (issue 13, defect 5).
- A `_metadata` file damaged, or a path holding no checkpoint at all, given as execution.savepoint.path: the
  submission fails naming the path.
- A checkpoint interval under 10 ms, a checkpoint directory whose parent does not exist: clear errors.
"""

from __future__ import annotations

import glob
import os
import time

import pytest

from fluvial.checkpoint.storage import CorruptCheckpointError
from fluvial.common import Configuration, Encoder, Types
from fluvial.common.errors import (
    FluvialError,
    InvalidJobError,
    JobCancelledException,
    JobExecutionException,
    ResourceError,
)
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import KeyedProcessFunction, MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_config import ExternalizedCheckpointRetention
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.testing import wait_until


def corrupt(path: str, how: str) -> None:
    if how == "flipped":
        with open(path, "r+b") as handle:
            data = bytearray(handle.read())
            data[len(data) // 2] ^= 0xFF
            handle.seek(0)
            handle.write(data)
    elif how == "truncated":
        with open(path, "r+b") as handle:
            handle.truncate(max(1, os.path.getsize(path) // 2))
    elif how == "deleted":
        os.remove(path)
    else:
        raise AssertionError(how)


class CorruptLatestCheckpointAndFail(MapFunction):
    """On the first attempt, when the `after`-th checkpoint completes, damages that checkpoint's keyed state
    file (it is the latest completed one: the notification comes before any later checkpoint can complete)
    and fails the task right there. Records which checkpoint and file it damaged in `marker`."""

    def __init__(self, base: str, marker: str, how: str, after: int = 2) -> None:
        self.base = base
        self.marker = marker
        self.how = how
        self.after = after

    def open(self, runtime_context):
        self.completed = 0
        self.seen = 0
        self.first_attempt = not os.path.exists(self.marker)

    def notify_checkpoint_complete(self, checkpoint_id):
        if not self.first_attempt:
            return
        self.completed += 1
        if self.completed < self.after:
            return
        [state_file] = glob.glob(os.path.join(self.base, "*", f"chk-{checkpoint_id}", "count-0-keyed*"))
        corrupt(state_file, self.how)
        with open(self.marker, "w") as handle:
            handle.write(f"{checkpoint_id} {state_file}")
        raise RuntimeError(f"injected failure after damaging checkpoint {checkpoint_id}")

    def map(self, value):
        self.seen += 1
        if self.seen % 20 == 0:
            time.sleep(0.001)
        return value


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value}|{count}"


def counting_job(
    tmp_path, base, function: MapFunction, configuration: Configuration | None = None, n: int = 40_000
) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(50)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{base}", file_state_size_threshold=0))
    config.set_num_retained(3)
    config.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(100, 20))
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(NumberSequenceSource(1, n))
        .uid("numbers")
        .map(function)
        .uid("map")
        .key_by(lambda v: v % 3)
        .process(CountPerKey())
        .uid("count")
        .sink_to(sink)
        .uid("sink")
    )
    return env


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["flipped", "truncated", "deleted"])
def test_damaged_latest_checkpoint_fails_the_restore_naming_the_file(tmp_path, how):
    base = tmp_path / "checkpoints"
    marker = tmp_path / "damaged"
    env = counting_job(tmp_path, base, CorruptLatestCheckpointAndFail(str(base), str(marker), how))
    client = env.execute_async("damaged checkpoint")
    with pytest.raises(JobExecutionException) as info:
        client.get_job_execution_result().result(timeout=80)
    assert marker.exists(), "the job failed before the injected damage"
    damaged_id, damaged_file = marker.read_text().split(" ", 1)
    latest = client._job_master.checkpointing.store.latest()
    assert latest.checkpoint_id == int(damaged_id), "a newer checkpoint completed: the damaged one was not latest"
    older = [c.checkpoint_id for c in client._job_master.checkpointing.store.all()][:-1]
    assert older, "no older checkpoint was retained, so no silent fallback could even have been tried"
    error = info.value
    assert isinstance(error.__cause__, CorruptCheckpointError), repr(error.__cause__)
    assert damaged_file in str(error.__cause__)
    assert damaged_file in str(error)
    assert f"chk-{damaged_id}" in str(error)
    details = client.get_job_details().result(timeout=5)
    assert details.restarts == 1, "the damaged checkpoint was restored more than once: a restart loop"
    assert details.last_failure.exception == "CorruptCheckpointError" and not details.last_failure.restartable


def completed_checkpoint_dir(tmp_path) -> str:
    """Run a checkpointed job until it completed a checkpoint and cancel it (RETAIN_ON_CANCELLATION keeps its
    checkpoints on disk); return the newest chk-<n> directory holding a `_metadata`."""
    base = tmp_path / "checkpoints"
    marker = tmp_path / "never"
    marker.write_text("")  # not the first attempt: the function never damages or fails
    env = counting_job(tmp_path, base, CorruptLatestCheckpointAndFail(str(base), str(marker), "flipped"), n=10**12)
    client = env.execute_async("leaves checkpoints behind")
    wait_until(lambda: glob.glob(str(base / "*" / "chk-*" / "_metadata")), what="a completed checkpoint")
    client.cancel()
    with pytest.raises(JobCancelledException):
        client.get_job_execution_result().result(timeout=30)
    chks = sorted(glob.glob(str(base / "*" / "chk-*" / "_metadata")), key=os.path.getmtime)
    assert chks, "the job completed no checkpoint"
    return os.path.dirname(chks[-1])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["flipped", "truncated"])
def test_damaged_metadata_as_savepoint_path_fails_at_submission_naming_it(tmp_path, how):
    chk = completed_checkpoint_dir(tmp_path)
    corrupt(os.path.join(chk, "_metadata"), how)
    configuration = Configuration().set_string("execution.savepoint.path", chk)
    env = counting_job(
        tmp_path / "second",
        tmp_path / "second-checkpoints",
        CorruptLatestCheckpointAndFail("", str(tmp_path / "never"), "flipped"),
        configuration,
    )
    with pytest.raises(CorruptCheckpointError) as info:
        env.execute_async("restore from damaged metadata")
    assert os.path.join(chk, "_metadata") in str(info.value)


@pytest.mark.timeout(60)
def test_savepoint_path_that_does_not_exist_fails_at_submission_naming_it(tmp_path):
    missing = tmp_path / "no-such-savepoint"
    configuration = Configuration().set_string("execution.savepoint.path", str(missing))
    env = counting_job(
        tmp_path,
        tmp_path / "checkpoints",
        CorruptLatestCheckpointAndFail("", str(tmp_path / "never"), "flipped"),
        configuration,
    )
    with pytest.raises(ResourceError) as info:
        env.execute_async("restore from nothing")
    assert str(missing) in str(info.value)
    assert "execution.savepoint.path" in str(info.value)


@pytest.mark.timeout(60)
def test_directory_without_metadata_as_savepoint_path_fails_naming_it(tmp_path):
    empty = tmp_path / "chk-7"
    empty.mkdir()
    configuration = Configuration().set_string("execution.savepoint.path", f"file://{empty}")
    env = counting_job(
        tmp_path,
        tmp_path / "checkpoints",
        CorruptLatestCheckpointAndFail("", str(tmp_path / "never"), "flipped"),
        configuration,
    )
    with pytest.raises(ResourceError) as info:
        env.execute("restore from an empty directory")
    assert str(empty) in str(info.value)


@pytest.mark.parametrize("interval", [1, 5, 9])
def test_checkpoint_interval_below_ten_ms_is_rejected(interval):
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(InvalidJobError) as info:
        env.enable_checkpointing(interval)
    assert f"{interval} ms" in str(info.value)


@pytest.mark.timeout(60)
def test_checkpoint_interval_below_ten_ms_from_configuration_fails_the_submission(tmp_path):
    configuration = Configuration().set_string("execution.checkpointing.interval", "5 ms")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.from_collection([1, 2, 3]).add_sink(lambda v: None)
    with pytest.raises(InvalidJobError) as info:
        env.execute("too frequent")
    assert "5 ms" in str(info.value)


@pytest.mark.timeout(60)
def test_checkpoint_interval_of_ten_ms_runs(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(10)
    env.from_collection([1, 2, 3]).add_sink(lambda v: None)
    env.execute("ten ms is the minimum")


@pytest.mark.timeout(60)
def test_checkpoint_dir_with_missing_parent_fails_at_submission_naming_it(tmp_path):
    directory = tmp_path / "missing-parent" / "checkpoints"
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{directory}")
    env.from_collection([1, 2, 3]).add_sink(lambda v: None)
    with pytest.raises(ResourceError) as info:
        env.execute("no parent")
    message = str(info.value)
    assert str(directory) in message
    assert str(tmp_path / "missing-parent") in message
    assert not (tmp_path / "missing-parent").exists()


@pytest.mark.timeout(60)
def test_checkpoint_dir_that_is_a_file_fails_at_submission_naming_it(tmp_path):
    directory = tmp_path / "a-file"
    directory.write_text("")
    configuration = Configuration().set_string("state.checkpoints.dir", f"file://{directory}")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.enable_checkpointing(50)
    env.from_collection([1, 2, 3]).add_sink(lambda v: None)
    with pytest.raises(FluvialError) as info:
        env.execute("dir is a file")
    assert str(directory) in str(info.value)


@pytest.mark.timeout(60)
def test_checkpoint_dir_whose_parent_exists_is_created(tmp_path):
    directory = tmp_path / "new-checkpoints"
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(10)
    env.get_checkpoint_config().set_checkpoint_storage_dir(str(directory))
    env.from_source(NumberSequenceSource(1, 10)).add_sink(lambda v: None)
    env.execute("creates its directory")
    assert directory.is_dir()
