"""What `set_externalized_checkpoint_retention` promises, against what an ended job leaves on disk (Flink's
CheckpointProperties): RETAIN_ON_CANCELLATION keeps the retained checkpoints of a cancelled job,
DELETE_ON_CANCELLATION deletes them (chk-<n> directories and the shared files they referenced), and so does the
default, NO_EXTERNALIZED_CHECKPOINTS; a finished job's checkpoints are deleted in every mode; a failed job keeps
them unless checkpoints are not externalized. The rule for each status is `discards_checkpoints`."""

from __future__ import annotations

import time

import pytest

from fluvial.cluster.job_checkpointing import discards_checkpoints
from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.common.job_status import JobStatus
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_config import ExternalizedCheckpointRetention
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend
from fluvial.testing import Pause, ScriptedSource, wait_until


def _cancel_after_a_checkpoint(
    tmp_path, retention: ExternalizedCheckpointRetention | None, rocksdb: bool = False
) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(20)
    if rocksdb:
        env.set_state_backend(EmbeddedRocksDBStateBackend(True))  # incremental: files under shared/
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage_dir(tmp_path.as_uri())
    if retention is not None:
        config.set_externalized_checkpoint_retention(retention)
    (
        env.from_source(NumberSequenceSource(0, 10**12))
        .key_by(lambda x: x % 4)
        .reduce(lambda a, b: a + b)
        .filter(lambda x: False)
        .print()
    )
    client = env.execute_async("endless")

    deadline = time.monotonic() + 30
    while not (seen := sorted(str(path.relative_to(tmp_path)) for path in tmp_path.glob("*/chk-*/_metadata"))):
        assert time.monotonic() < deadline, "no checkpoint completed in 30 s"
        time.sleep(0.02)
    client.cancel()
    print("completed before the cancel:", seen)  # shown if the test fails
    with pytest.raises(JobCancelledException):
        client.get_job_execution_result().result(timeout=30)


@pytest.mark.timeout(60)
def test_retain_on_cancellation_keeps_the_checkpoints_of_a_cancelled_job(tmp_path):
    _cancel_after_a_checkpoint(tmp_path, ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
    left = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))
    assert list(tmp_path.glob("*/chk-*/_metadata")), f"a cancelled job's retained checkpoint was deleted: {left}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("rocksdb", [False, True], ids=["hashmap", "rocksdb-incremental"])
def test_delete_on_cancellation_deletes_the_checkpoints_of_a_cancelled_job(tmp_path, rocksdb):
    _cancel_after_a_checkpoint(tmp_path, ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, rocksdb)
    left = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file())
    assert left == [], f"DELETE_ON_CANCELLATION left files of the cancelled job: {left}"


@pytest.mark.timeout(60)
def test_by_default_a_cancelled_jobs_checkpoints_are_deleted(tmp_path):
    _cancel_after_a_checkpoint(tmp_path, None)  # NO_EXTERNALIZED_CHECKPOINTS, Flink's default
    left = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file())
    assert left == [], f"a cancelled job without externalized checkpoints left files: {left}"


def _refuse_four(value):
    if value == 4:
        raise RuntimeError("record 4 is refused")
    return value


def _run_to_the_end(tmp_path, retention: ExternalizedCheckpointRetention | None, fail: bool) -> None:
    """A job that reads 1, 2, 3, waits until a checkpoint completed, then finishes — or fails on a 4."""
    checkpoints, release = tmp_path / "checkpoints", tmp_path / "release"
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(20)
    env.set_restart_strategy(RestartStrategies.no_restart())
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage_dir(checkpoints.as_uri())
    if retention is not None:
        config.set_externalized_checkpoint_retention(retention)
    script = [1, 2, 3, Pause(str(release)), *([4] if fail else [])]
    env.from_source(ScriptedSource(script), source_name="numbers").map(_refuse_four).filter(lambda x: False).print()
    client = env.execute_async("bounded")
    wait_until(lambda: _metadata_files(checkpoints), what="a completed checkpoint")
    release.touch()
    if fail:
        with pytest.raises(JobExecutionException):
            client.get_job_execution_result().result(timeout=30)
    else:
        client.get_job_execution_result().result(timeout=30)
    assert client.get_job_status().result() is (JobStatus.FAILED if fail else JobStatus.FINISHED)


def _metadata_files(tmp_path) -> list[str]:
    return sorted(str(path.relative_to(tmp_path)) for path in tmp_path.glob("*/chk-*/_metadata"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "retention", [None, *ExternalizedCheckpointRetention], ids=lambda r: getattr(r, "name", "default")
)
def test_a_finished_jobs_checkpoints_are_deleted_in_every_mode(tmp_path, retention):
    _run_to_the_end(tmp_path, retention, fail=False)
    assert _metadata_files(tmp_path / "checkpoints") == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "retention, kept",
    [
        (None, False),
        (ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS, False),
        (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, True),
        (ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION, True),
    ],
    ids=["default", "no-externalized", "delete-on-cancellation", "retain-on-cancellation"],
)
def test_a_failed_job_keeps_its_checkpoints_only_when_they_are_externalized(tmp_path, retention, kept):
    _run_to_the_end(tmp_path, retention, fail=True)
    assert bool(_metadata_files(tmp_path / "checkpoints")) is kept


@pytest.mark.parametrize(
    "retention, finished, canceled, failed",
    [
        (ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS, True, True, True),
        (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, True, True, False),
        (ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION, True, False, False),
    ],
)
def test_discards_checkpoints_follows_flinks_retention_policies(retention, finished, canceled, failed):
    assert discards_checkpoints(retention, JobStatus.FINISHED) is finished
    assert discards_checkpoints(retention, JobStatus.CANCELED) is canceled
    assert discards_checkpoints(retention, JobStatus.FAILED) is failed
