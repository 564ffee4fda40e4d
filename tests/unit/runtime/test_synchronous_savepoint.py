"""A task's part in stop-with-savepoint (Flink's synchronous savepoint), stepped by hand on one thread: once it
has taken its snapshot for the savepoint it processes nothing — no record, no timer — until the JobMaster says
how the savepoint ended. Aborted: it resumes, the timers held meanwhile run first, and the job goes on.
Completed: its two-phase-commit sink commits the savepoint's transaction, then the task ends FINISHED without
ending its input (no flush at end of input, nothing committed after the barrier)."""

from __future__ import annotations

from typing import Any

import pytest

from fluvial.checkpoint.stop_mode import StopMode
from fluvial.cluster.execution_graph import ExecutionGraph
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.connectors.sink import Sink, SinkWriter
from fluvial.runtime.channels import ChannelRegistry
from fluvial.runtime.deployment import TaskCheckpointSettings
from fluvial.runtime.execution_state import ExecutionState
from fluvial.runtime.input_processor import StepResult
from fluvial.runtime.task import Task, TaskServices

WRITTEN: list[int] = []  # what the sink's writer received (the task runs on this thread: module state is shared)
COMMITTED: list[int] = []
END_OF_INPUT_FLUSHES: list[bool] = []


class TransactionalWriter(SinkWriter):
    def __init__(self) -> None:
        self.open: list[int] = []

    def write_batch(self, values: list) -> None:
        WRITTEN.extend(values)
        self.open.extend(values)

    def flush(self, end_of_input: bool) -> None:
        if end_of_input:
            END_OF_INPUT_FLUSHES.append(True)

    def prepare_commit(self) -> list[Any]:
        transaction, self.open = list(self.open), []
        return [transaction] if transaction else []


class TransactionalSink(Sink):
    def create_writer(self, task_info, restored_state=None) -> SinkWriter:
        return TransactionalWriter()

    def commit(self, committables: list[Any]) -> None:
        for transaction in committables:
            COMMITTED.extend(transaction)


class Executor:
    """The task's TaskExecutor, reduced to what a test that steps the task itself needs."""

    def __init__(self) -> None:
        self.timers: list[tuple[int, Any, str]] = []

    def wake(self) -> None:
        pass

    def clock(self) -> int:
        return 0

    def schedule(self, timestamp: int, task: Any, callback: Any, label: str = "") -> None:
        self.timers.append((timestamp, callback, label))


class Storage:
    def write_state(self, checkpoint_id: int, name: str, data: bytes) -> str:
        return name

    def checkpoint_storage(self) -> Storage:
        return self

    def savepoint_storage(self, directory: str) -> Storage:
        return self


class Inline:
    def execute(self, action) -> None:
        action()


class Responder:
    def __init__(self) -> None:
        self.acknowledged: list[int] = []
        self.declined: list[int] = []

    def acknowledge(self, checkpoint_id, states, metrics=None) -> None:
        self.acknowledged.append(checkpoint_id)

    def decline(self, checkpoint_id, reason, detail="") -> None:
        self.declined.append(checkpoint_id)


class Listener:
    def __init__(self) -> None:
        self.states: list[ExecutionState] = []

    def task_state_changed(self, task, state, failure) -> None:
        self.states.append(state)

    def task_end_of_data(self, task) -> None:
        raise AssertionError("the stopped task never reached the end of its data")


@pytest.fixture
def task():
    for events in (WRITTEN, COMMITTED, END_OF_INPUT_FLUSHES):
        events.clear()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_source(NumberSequenceSource(1, 10**9), source_name="numbers").map(lambda v: v).sink_to(TransactionalSink())
    graph = ExecutionGraph(env.get_job_graph())
    (execution,) = list(graph)
    spec = graph.task_spec(execution, checkpointing=TaskCheckpointSettings(exactly_once=True, storage=None))
    responder = Responder()
    services = TaskServices(
        ChannelRegistry(),
        Executor(),  # type: ignore[arg-type]
        Listener(),
        checkpoint_storage=Storage(),
        checkpoint_io=Inline(),  # type: ignore[arg-type]
        checkpoint_responder=responder,
    )
    task = Task(spec, services)
    task.open()
    assert task.state is ExecutionState.RUNNING
    task.responder = responder  # type: ignore[attr-defined]
    task.listener = services.listener  # type: ignore[attr-defined]
    return task


def steps(task: Task, count: int = 3) -> list[StepResult]:
    return [task.step() for _ in range(count)]


def suspended_by_stop(task: Task, checkpoint_id: int) -> int:
    """Trigger stop-with-savepoint `checkpoint_id` and check that nothing runs after the snapshot; the number of
    records written before the barrier."""
    steps(task)
    task.trigger_checkpoint(checkpoint_id, 0, "savepoints", StopMode.NO_DRAIN)
    task.step()  # runs the trigger: barrier, snapshot, then suspended
    assert task.suspended and task.responder.acknowledged[-1] == checkpoint_id  # type: ignore[attr-defined]
    before = len(WRITTEN)
    assert 0 < before
    assert steps(task) == [StepResult.IDLE] * 3
    assert len(WRITTEN) == before, "records were processed after the savepoint's barrier"
    return before


def test_an_aborted_stop_resumes_the_task_held_timers_first_and_a_completed_one_commits_then_ends(task):
    before = suspended_by_stop(task, 1)
    fired: list[int] = []
    task.run_timer(fired.append, 42, "a processing-time timer")
    assert fired == [], "a timer ran while the task was suspended"

    task.notify_checkpoint_aborted(1)
    task.step()
    assert not task.suspended and fired == [42], "the held timer did not run on resume"
    assert len(WRITTEN) > before, "the task did not go on after the aborted stop"
    assert task.state is ExecutionState.RUNNING and COMMITTED == []

    before = suspended_by_stop(task, 2)
    task.notify_checkpoint_complete(2)
    assert task.step() is StepResult.END_OF_INPUT
    assert task.state is ExecutionState.FINISHED
    assert task.listener.states[-1] is ExecutionState.FINISHED  # type: ignore[attr-defined]
    assert COMMITTED == WRITTEN and len(WRITTEN) == before, "the sink did not commit exactly the savepoint's records"
    assert END_OF_INPUT_FLUSHES == [], "a stop without drain ended the input"


def test_a_barrier_of_a_stop_already_aborted_suspends_nothing(task):
    steps(task)
    task.notify_checkpoint_aborted(5)  # the JobMaster aborted it before its barrier reached this task
    task.trigger_checkpoint(5, 0, "savepoints", StopMode.NO_DRAIN)
    task.step()
    assert not task.suspended
    before = len(WRITTEN)
    steps(task)
    assert len(WRITTEN) > before


def test_a_drained_stop_ends_the_input_ahead_of_the_barrier(task):
    steps(task)
    task.trigger_checkpoint(3, 0, "savepoints", StopMode.DRAIN)
    task.step()
    assert task.suspended and END_OF_INPUT_FLUSHES == [True]
    task.notify_checkpoint_complete(3)
    task.step()
    assert task.state is ExecutionState.FINISHED and COMMITTED == WRITTEN
    assert END_OF_INPUT_FLUSHES == [True], "the operators finished twice"
