"""A job on the changelog state backend, end to end: cancelled once a few of its checkpoints (a materialization
plus log segments in files) are retained, then run again from the latest one at another parallelism — the
changelog checkpoint rescales by key groups, its log replayed into each new subtask. Over both runs the committed
output holds every number once and each key's counts 1, 2, 3, ... in order (the oracle of tests/faults)."""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest

from fluvial.common import Configuration, Encoder
from fluvial.common.errors import JobCancelledException
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_config import ExternalizedCheckpointRetention
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import wait_until
from fluvial.testing.faults import completed_checkpoints
from tests.faults.checkpointed_job import KEYS, CountPerKey
from tests.faults.test_process_kill import assert_exactly_once, committed_records

N = 30_000


class Residue(MapFunction):
    """n -> ((0, n % KEYS), n): keys that do not depend on the parallelism, so they survive a rescale. Sleeps a
    millisecond every `pace` records (the first run is slow, so it is cancelled well before its end)."""

    def __init__(self, pace: int) -> None:
        self.pace = pace

    def open(self, runtime_context):
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.seen % self.pace == 0:
            time.sleep(0.001)
        return (0, value % KEYS), value


def run(tmp_path: Path, parallelism: int, restore: str | None = None) -> object:
    configuration = Configuration()
    for key, value in {
        "state.changelog.enabled": "true",
        "state.changelog.storage": "filesystem",
        "state.changelog.dstl.dfs.base-path": str(tmp_path / "dstl"),
        "state.changelog.periodic-materialize.interval": "100 ms",
    }.items():
        configuration.set_string(key, value)
    if restore:
        configuration.set_string("execution.savepoint.path", restore)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    env.enable_checkpointing(50)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}"))
    config.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
    config.set_num_retained(2)
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(NumberSequenceSource(1, N), source_name="numbers")
        .set_parallelism(1)  # each key's records then arrive in the order of their numbers
        .uid("numbers")
        .map(Residue(50 if restore else 4))
        .set_parallelism(1)
        .uid("residue")
        .key_by(lambda record: record[0])
        .process(CountPerKey())
        .uid("count")
        .sink_to(sink)
        .uid("sink")
    )
    return env.execute_async("changelog rescale")


@pytest.mark.timeout(90)
def test_a_changelog_checkpoint_restores_at_another_parallelism_exactly_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = run(tmp_path, 2)
    wait_until(
        lambda: max(completed_checkpoints(tmp_path / "chk"), default=0) >= 6 or first.get_job_execution_result().done(),
        timeout=60,
        what="six completed checkpoints",
    )
    assert not first.get_job_execution_result().done(), "the first run ended before it was cancelled"
    first.cancel()
    with pytest.raises(JobCancelledException):
        first.get_job_execution_result().result(timeout=30)
    latest = completed_checkpoints(tmp_path / "chk")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fluvial.state.changelog"):
        second = run(tmp_path, 3, restore=str(latest[max(latest)]))
        second.get_job_execution_result().result(timeout=60)
    records, _ = committed_records(tmp_path / "out")
    assert_exactly_once(records, N)
    restores = [record.getMessage() for record in caplog.records if " change(s) in " in record.getMessage()]
    assert len(restores) == 3 and all("the next checkpoint stores a full materialization" in r for r in restores)
    assert any(re.search(r"restored [12] materialization", r) for r in restores), restores
