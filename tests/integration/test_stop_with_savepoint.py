"""stop-with-savepoint without drain (Flink's `flink stop`, PyFlink's `stop_with_savepoint()`) is a synchronous
savepoint: the sources emit the savepoint's barrier and then nothing more, every task processes nothing after
its snapshot, the two-phase-commit sinks commit the savepoint's transaction, and the job ends FINISHED.

Oracle: a restore from that savepoint continues with the very next record. So what a recording sink saw in the
first run, followed by what it saw in the second, is every number exactly once — a record processed after the
barrier would be seen again after the restore — and the FileSink committed, in each run, exactly what the
recording sink saw: the savepoint's transaction, nothing after it, nothing left uncommitted. Keyed counts go on
from the savepoint's: per key exactly 1..(records of that key) over both runs."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from fluvial.common import Configuration, Encoder, Types
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import EventLog, ExecutionMode, environment
from tests.integration.test_checkpoint_savepoint_rescale import (
    KEYS,
    CountPerKey,
    RecordAll,
    SlowWithProgress,
    committed,
    wait_for,
)

N = 12_000


def run(tmp_path, name: str, mode: ExecutionMode, savepoint: str | None = None):
    configuration = Configuration()
    if mode is ExecutionMode.RAY:  # its nodes are processes of this machine: they all reach tmp_path
        configuration.set_boolean("ray.shared-filesystem", True)
    if savepoint is not None:
        configuration.set_string("execution.savepoint.path", savepoint)
    env = environment(mode, configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(3_600_000)  # savepoints need checkpointing; no periodic checkpoint interferes
    sink = (
        FileSink.for_row_format(str(tmp_path / name), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    numbers = (
        env.from_source(NumberSequenceSource(1, N), source_name="numbers")
        .uid("numbers")
        .map(SlowWithProgress(str(tmp_path / f"{name}.progress")), output_type=Types.LONG())
        .uid("slow")
    )
    numbers.add_sink(RecordAll(EventLog(tmp_path / f"{name}.seen"))).uid("seen")
    numbers.key_by(lambda v: v % KEYS).process(CountPerKey(), output_type=Types.STRING()).uid("count").sink_to(
        sink
    ).uid("sink")
    return env


@pytest.mark.timeout(90)
def test_a_restore_continues_exactly_where_the_stop_left_off(tmp_path, mode):
    client = run(tmp_path, "first", mode).execute_async("stopped")
    wait_for(tmp_path / "first.progress", client)
    path = client.stop_with_savepoint(False, str(tmp_path / "savepoints")).result(timeout=60)
    assert client.get_job_execution_result().result(timeout=30) is not None
    assert client.get_job_status().result().name == "FINISHED"
    first = EventLog(tmp_path / "first.seen").values("out")
    assert 0 < len(first) < N, f"the first run saw {len(first)} records: the stop did not come mid-stream"
    assert sorted(value for _, value, _ in committed(tmp_path / "first")) == sorted(first), (
        "the sink committed other records than those before the savepoint's barrier"
    )

    run(tmp_path, "second", mode, path).execute("restored")
    second = EventLog(tmp_path / "second.seen").values("out")
    repeated = sorted(Counter(first) & Counter(second))
    assert not repeated, f"{len(repeated)} records processed after the barrier came again: {repeated[:5]} ..."
    assert sorted(first + second) == list(range(1, N + 1))
    counts = defaultdict(list)
    for key, _, count in committed(tmp_path / "first") + committed(tmp_path / "second"):
        counts[key].append(count)
    assert {key: sorted(c) for key, c in counts.items()} == {
        key: list(range(1, len(range(key or KEYS, N + 1, KEYS)) + 1)) for key in range(KEYS)
    }
