"""Checkpoints after tasks finish and the final checkpoint (FLIP-147; issue 13, defect 2).

A bounded pipeline's last output is committed by a checkpoint taken after its tasks finished their input, never
at end of input, so whatever fails afterwards restores a checkpoint that covers exactly what was committed:
- a failure after some subtasks have FINISHED: the next checkpoints treat them as finished, the restore leaves
  them with nothing to do, and their committed output is not written again;
- a `close()` that raises once after end of input: the job restarts from the final checkpoint and writes
  nothing twice;
- a savepoint taken while the job goes on commits nothing (a failover restores an older checkpoint);
- a bounded job does not wait for the checkpoint interval: its final checkpoint is triggered as soon as every
  task reached the end of its data.
Oracle: the committed (visible) FileSink part files hold every record exactly once.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from fluvial.common import Configuration, Encoder
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import MapFunction
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.runtime.execution_state import ExecutionState
from fluvial.testing import Crash, End, Pause, ScriptedSource, environment, execution_modes, wait_until
from fluvial.testing.oracle import committed_lines

pytestmark = pytest.mark.timeout(90)


def file_sink(out: Path) -> FileSink:
    return (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )


def committed(out: Path) -> list[str]:
    return committed_lines(out)[0]


def assert_exactly_once(lines: list[str], expected: list[str]) -> None:
    counts = Counter(lines)
    duplicated = sorted(line for line, count in counts.items() if count > 1)
    missing = sorted(set(expected) - set(counts))
    assert not duplicated, f"{len(duplicated)} records committed twice, first {duplicated[:5]}"
    assert not missing, f"{len(missing)} records lost, first {missing[:5]}"
    assert len(lines) == len(expected)


def checkpointed(mode, interval_ms: int = 50, configuration: Configuration | None = None):
    env = environment(mode, configuration)
    env.enable_checkpointing(interval_ms)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 10))
    return env


class Slow(MapFunction):
    def map(self, value):
        time.sleep(0.0005)
        return value


@pytest.mark.parametrize("mode", execution_modes())
@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_failure_after_some_subtasks_finished_commits_nothing_twice(tmp_path, mode, parallelism):
    """Pipeline A (a short sequence) finishes while pipeline B waits at a pause; then B's source crashes. A's
    subtasks were FINISHED and their output committed: the restore must not run A over again."""
    env = checkpointed(mode)
    env.set_parallelism(parallelism)
    numbers = [f"a{n}" for n in range(1, 2001)]
    (
        env.from_source(NumberSequenceSource(1, 2000), source_name="short")
        .map(lambda n: f"a{n}")
        .sink_to(file_sink(tmp_path / "a"))
    )
    script = list(range(100)) + [Pause(str(tmp_path / "go")), Crash(str(tmp_path / "crashed"))]
    script += list(range(100, 300)) + [End()]
    env.from_source(ScriptedSource(script), source_name="scripted").map(Slow()).map(lambda n: f"b{n}").sink_to(
        file_sink(tmp_path / "b")
    )
    client = env.execute_async("a failure after some subtasks finished")
    graph = client._job_master.scheduler.graph
    short = [e for e in graph if "short" in e.job_vertex.name]
    wait_until(lambda: all(e.state is ExecutionState.FINISHED for e in short), what="pipeline A to finish")
    store = client._job_master.checkpointing.store
    after = store.latest().checkpoint_id
    wait_until(lambda: store.latest().checkpoint_id > after, what="a checkpoint with A finished")
    assert sorted(committed(tmp_path / "a")) == sorted(numbers), "A's output was not committed when it finished"
    with_a_finished = store.latest().metadata.operator_states.values()
    assert any(state.fully_finished for state in with_a_finished), "the checkpoint did not record A as finished"
    (tmp_path / "go").touch()  # B crashes now
    client.get_job_execution_result().result(timeout=60)
    assert client.get_job_details().result(timeout=5).restarts == 1
    assert_exactly_once(committed(tmp_path / "a"), numbers)
    assert_exactly_once(committed(tmp_path / "b"), [f"b{n}" for n in range(300)])


class RaiseOnceInClose(MapFunction):
    """Identity; its first close() raises (after end of input: no other failure happens in this job)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def map(self, value):
        return value

    def close(self):
        if not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("close() failed once")


@pytest.mark.parametrize("mode", execution_modes())
def test_a_close_that_raises_once_after_end_of_input_commits_nothing_twice(tmp_path, mode):
    env = checkpointed(mode)
    env.set_parallelism(2)
    expected = [str(n) for n in range(1, 5001)]
    (
        env.from_source(NumberSequenceSource(1, 5000))
        .map(Slow())
        .map(RaiseOnceInClose(str(tmp_path / "raised")))
        .map(str)
        .sink_to(file_sink(tmp_path / "out"))
    )
    client = env.execute_async("close raises once")
    client.get_job_execution_result().result(timeout=60)
    assert (tmp_path / "raised").exists()
    assert client.get_job_details().result(timeout=5).restarts == 1
    assert_exactly_once(committed(tmp_path / "out"), expected)


@pytest.mark.parametrize("mode", execution_modes())
def test_an_intermediate_savepoint_commits_nothing_a_failover_would_replay(tmp_path, mode):
    """No periodic checkpoint completes (an hour apart): after the crash the job starts over from its sources.
    Had the savepoint committed the records before it, they would be committed twice."""
    env = checkpointed(mode, interval_ms=3_600_000)
    script = list(range(500)) + [Pause(str(tmp_path / "go")), Crash(str(tmp_path / "crashed"))]
    script += list(range(500, 800)) + [End()]
    env.from_source(ScriptedSource(script)).map(str).sink_to(file_sink(tmp_path / "out"))
    client = env.execute_async("savepoint, then a crash")
    wait_until(lambda: client._job_master.scheduler.graph.all_in(ExecutionState.RUNNING), what="running")
    time.sleep(0.2)  # the first 500 records reach the sink
    client.trigger_savepoint(str(tmp_path / "savepoints")).result(timeout=30)
    assert committed(tmp_path / "out") == [], "an intermediate savepoint committed output"
    (tmp_path / "go").touch()
    client.get_job_execution_result().result(timeout=60)
    assert_exactly_once(committed(tmp_path / "out"), [str(n) for n in range(800)])


@pytest.mark.parametrize("mode", execution_modes())
def test_a_bounded_job_triggers_its_final_checkpoint_at_the_end_of_its_data(tmp_path, mode):
    env = checkpointed(mode, interval_ms=3_600_000)
    env.set_parallelism(2)
    env.from_source(NumberSequenceSource(1, 3000)).map(str).rebalance().map(lambda s: s).sink_to(
        file_sink(tmp_path / "out")
    )
    client = env.execute_async("bounded, checkpoints an hour apart")
    client.get_job_execution_result().result(timeout=30)  # an hour's interval never passes: the end triggered it
    stats = client._job_master.checkpointing.stats
    assert stats.completed >= 1
    assert_exactly_once(committed(tmp_path / "out"), [str(n) for n in range(1, 3001)])


@pytest.mark.parametrize("mode", execution_modes())
def test_without_checkpoints_after_tasks_finish_the_last_output_is_committed_at_end_of_input(tmp_path, mode):
    configuration = Configuration().set_string("execution.checkpointing.checkpoints-after-tasks-finish", "false")
    env = checkpointed(mode, interval_ms=3_600_000, configuration=configuration)
    env.from_source(NumberSequenceSource(1, 1000)).map(str).sink_to(file_sink(tmp_path / "out"))
    client = env.execute_async("legacy end of input")
    client.get_job_execution_result().result(timeout=30)
    assert client._job_master.checkpointing.stats.completed == 0
    assert_exactly_once(committed(tmp_path / "out"), [str(n) for n in range(1, 1001)])
