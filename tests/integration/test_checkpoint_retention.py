"""What `set_externalized_checkpoint_retention` promises, against what a cancelled job leaves on disk (Flink's
CheckpointProperties): RETAIN_ON_CANCELLATION keeps the retained checkpoints of a cancelled job,
DELETE_ON_CANCELLATION deletes them (chk-<n> directories and the shared files they referenced)."""

from __future__ import annotations

import time

import pytest

from fluvial.common.errors import JobCancelledException
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_config import ExternalizedCheckpointRetention
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend


def _cancel_after_a_checkpoint(tmp_path, retention: ExternalizedCheckpointRetention, rocksdb: bool = False) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(20)
    if rocksdb:
        env.set_state_backend(EmbeddedRocksDBStateBackend(True))  # incremental: files under shared/
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage_dir(tmp_path.as_uri())
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
