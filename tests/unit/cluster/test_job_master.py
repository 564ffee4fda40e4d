"""JobMaster with its main thread and I/O executor replaced by ManualScheduledExecutors and its TaskManagers by a
recording fake: every call is a mail that runs only when the test says; the job's result completes as its status
says; savepoints are refused clearly when they cannot be taken; acknowledgements reach the coordinator and the
completion reaches the TaskManagers; a JobMaster that breaks fails the job instead of hanging it."""

from __future__ import annotations

import logging

import pytest

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.stop_mode import StopMode
from fluvial.cluster.job_checkpointing import JobCheckpointing
from fluvial.cluster.job_client import MiniClusterJobClient
from fluvial.cluster.job_master import STOP_GRACE_MS, JobMaster
from fluvial.cluster.messages import AcknowledgeCheckpoint, DeclineCheckpoint, TaskExecutionState
from fluvial.cluster.slots import offered_slots
from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.common.job_status import JobStatus
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.runtime.deployment import ExecutionAttemptId, TaskFailure
from fluvial.runtime.execution_state import ExecutionState
from fluvial.testing import ManualClock, ManualScheduledExecutor
from tests.unit.cluster.fakes import TaskManagerGateway

S = ExecutionState
INTERVAL = 1_000


def job_graph(checkpointing: bool = False, tolerable_failures: int = 0):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    if checkpointing:
        env.enable_checkpointing(INTERVAL)
        env.get_checkpoint_config().set_tolerable_checkpoint_failure_number(tolerable_failures)
    env.from_collection([1]).name("src").map(lambda v: v).name("map").add_sink(lambda v: None)
    return env.get_job_graph()


class Rig:
    def __init__(self, checkpointing: bool = False, manual: bool = True, tolerable_failures: int = 0) -> None:
        self.job_graph = job_graph(checkpointing, tolerable_failures)
        self.gateway = TaskManagerGateway()
        self.clock = ManualClock(0)
        self.main = ManualScheduledExecutor(self.clock) if manual else None
        self.io = ManualScheduledExecutor(self.clock) if manual else None
        self.master = JobMaster(
            self.job_graph,
            [self.gateway],
            offered_slots(1, self.job_graph.required_slots()),
            main_thread=self.main,
            io=self.io,
            clock=self.clock,
        )
        self.job_id = self.job_graph.job_id
        self.tasks = [(vertex.id, index) for vertex in self.job_graph.vertices for index in range(vertex.parallelism)]

    def settle(self) -> None:
        while self.main.advance(0) + self.io.advance(0):
            pass

    def report(self, task, state: ExecutionState, failure: TaskFailure | None = None) -> None:
        self.master.update_task_execution_state(
            TaskExecutionState(ExecutionAttemptId(self.job_id, task[0], task[1], 0), state, failure)
        )

    def report_all(self, state: ExecutionState, tasks=None) -> None:
        for task in tasks if tasks is not None else self.tasks:
            self.report(task, state)
        self.settle()

    def started(self) -> Rig:
        self.master.start()
        self.settle()
        self.report_all(S.RUNNING)
        return self


def test_every_call_is_a_mail_on_the_main_thread() -> None:
    rig = Rig()
    rig.master.start()
    assert rig.gateway.sent == [] and rig.master.status is JobStatus.CREATED
    rig.settle()
    assert len(rig.gateway.of("deploy")) == len(rig.tasks) and rig.master.status is JobStatus.RUNNING
    rig.report(rig.tasks[0], S.RUNNING)
    rig.master.cancel()
    assert rig.master.scheduler.graph.vertices[rig.tasks[0]].state is S.DEPLOYING and rig.gateway.of("cancel") == []
    rig.settle()
    assert rig.master.status is JobStatus.CANCELLING and len(rig.gateway.of("cancel")) == len(rig.tasks)


def test_a_finished_job_completes_its_result_and_releases_the_job_everywhere(caplog) -> None:
    caplog.set_level(logging.INFO, logger="fluvial.cluster.job_master")
    rig = Rig().started()
    rig.report_all(S.FINISHED)
    result = rig.master.result.result(0)
    assert str(result.get_job_id()) == rig.job_id
    assert [m.job_id for m in rig.gateway.of("release")] == [rig.job_id]
    assert "ended FINISHED after" in caplog.text


def test_a_cancelled_job_fails_its_result_with_job_cancelled(caplog) -> None:
    caplog.set_level(logging.INFO, logger="fluvial.cluster.job_master")
    rig = Rig().started()
    rig.master.cancel()
    rig.settle()
    rig.report_all(S.CANCELED)
    with pytest.raises(JobCancelledException, match="was cancelled"):
        rig.master.result.result(0)
    assert "cancel requested while RUNNING" in caplog.text


def test_a_failed_job_names_the_operator_and_chains_the_users_error() -> None:
    rig = Rig().started()
    error = ZeroDivisionError("division by zero")
    rig.report(rig.tasks[1], S.FAILED, TaskFailure(error, "map", "src -> map (2/2)", "traceback"))
    rig.settle()
    rig.report_all(S.CANCELED, [task for task in rig.tasks if task != rig.tasks[1]])
    with pytest.raises(JobExecutionException) as info:
        rig.master.result.result(0)
    assert "operator 'map' in task src -> map (2/2) raised ZeroDivisionError: division by zero" in str(info.value)
    assert info.value.__cause__ is error


def test_a_broken_jobmaster_fails_the_job_instead_of_hanging_it() -> None:
    rig = Rig(manual=False)  # the real main thread: a mail that raises goes to the JobMaster's error handler
    rig.master.start()
    rig.report(rig.tasks[0], S.RUNNING)
    rig.report(rig.tasks[0], S.INITIALIZING)  # no subtask goes back: the scheduler raises on the main thread
    with pytest.raises(JobExecutionException, match="failed inside the JobMaster: IllegalExecutionStateTransition"):
        rig.master.result.result(10)
    assert [m.job_id for m in rig.gateway.of("release")] == [rig.job_id]


# -- savepoints and checkpoints -------------------------------------------------------------------------------------


def test_a_savepoint_without_checkpointing_is_refused_naming_the_fix(tmp_path) -> None:
    rig = Rig().started()
    with pytest.raises(RuntimeError, match=r"enable_checkpointing"):
        rig.master.trigger_savepoint(str(tmp_path))


def test_a_savepoint_while_a_subtask_has_ended_is_refused(tmp_path) -> None:
    rig = Rig(checkpointing=True).started()
    rig.report_all(S.FINISHED, rig.tasks[:1])
    answer = rig.master.trigger_savepoint(str(tmp_path))
    rig.settle()
    with pytest.raises(RuntimeError, match="1 of its subtasks have already ended"):
        answer.result(0)
    assert rig.gateway.of("trigger") == []


def test_a_savepoint_before_the_job_runs_is_refused(tmp_path) -> None:
    rig = Rig(checkpointing=True)
    answer = rig.master.trigger_savepoint(str(tmp_path))
    rig.settle()
    with pytest.raises(RuntimeError, match="it is CREATED"):
        answer.result(0)


def test_a_savepoint_after_the_job_ended_is_refused(tmp_path) -> None:
    rig = Rig(checkpointing=True, manual=False)
    rig.master.cancel()
    with pytest.raises(JobCancelledException):
        rig.master.result.result(10)
    with pytest.raises(RuntimeError, match="cannot take a savepoint of job .*: it is CANCELED"):
        rig.master.trigger_savepoint(str(tmp_path)).result(10)


def test_a_savepoint_goes_to_the_sources_and_completes_with_every_ack(tmp_path) -> None:
    rig = Rig(checkpointing=True).started()
    answer = rig.master.trigger_savepoint(str(tmp_path))
    rig.settle()
    (trigger,) = rig.gateway.take("trigger")
    assert trigger.savepoint_dir == str(tmp_path) and trigger.checkpoint_id == 1
    for vertex_id, index in rig.tasks:
        rig.master.acknowledge_checkpoint(
            AcknowledgeCheckpoint(ExecutionAttemptId(rig.job_id, vertex_id, index, 0), 1, {})
        )
    rig.settle()
    completed = answer.result(0)
    assert completed.is_savepoint and completed.metadata_location.startswith(f"file://{tmp_path}/savepoint-")
    assert rig.gateway.of("complete") == []  # a savepoint of a running job commits nothing (Flink 1.15+)


def test_a_drain_savepoint_tells_the_sources_and_one_that_fails_fails_the_job_over(tmp_path) -> None:
    """stop-with-savepoint --drain: the trigger says drain (the sources send MAX_WATERMARK ahead of the barrier,
    then nothing more), so a drain savepoint that fails cannot leave the job running as it is: it fails over —
    even when the job tolerates failed checkpoints."""
    rig = Rig(checkpointing=True, tolerable_failures=5).started()
    with pytest.raises(ValueError, match="stop-with-savepoint only"):
        rig.master.trigger_savepoint(str(tmp_path), drain=True)
    answer = rig.master.trigger_savepoint(str(tmp_path), terminal=True, drain=True)
    rig.settle()
    (trigger,) = rig.gateway.take("trigger")
    assert trigger.stop is StopMode.DRAIN and trigger.savepoint_dir == str(tmp_path)
    vertex_id, index = rig.tasks[0]
    rig.master.decline_checkpoint(
        DeclineCheckpoint(
            ExecutionAttemptId(rig.job_id, vertex_id, index, 0),
            trigger.checkpoint_id,
            CheckpointFailureReason.DECLINED,
            "disk full",
        )
    )
    rig.settle()
    with pytest.raises(Exception, match="disk full"):
        answer.result(0)
    assert rig.master.status is JobStatus.RESTARTING  # the job's restart strategy decides what comes next
    assert "stop-with-savepoint with drain failed" in rig.master.scheduler.last_failure_info.summary()


def test_a_stop_whose_savepoint_fails_leaves_the_job_running_and_says_why(tmp_path) -> None:
    """stop-with-savepoint without drain: a synchronous savepoint. If it fails, the subtasks hear it was aborted
    (they resume), the job keeps RUNNING, the caller gets the reason, and periodic checkpoints — held back while
    the stop was pending — go on."""
    rig = Rig(checkpointing=True, tolerable_failures=5).started()
    stopped = MiniClusterJobClient(rig.master, None).stop_with_savepoint(False, str(tmp_path))
    rig.settle()
    (trigger,) = rig.gateway.take("trigger")
    assert trigger.stop is StopMode.NO_DRAIN
    rig.main.advance(INTERVAL)
    rig.settle()
    assert rig.gateway.of("trigger") == [], "a periodic checkpoint was triggered while the job was stopping"
    another = rig.master.trigger_savepoint(str(tmp_path))
    rig.settle()
    with pytest.raises(RuntimeError, match="it is being stopped with savepoint 1"):
        another.result(0)
    rig.master.decline_checkpoint(
        DeclineCheckpoint(
            ExecutionAttemptId(rig.job_id, *rig.tasks[0], 0),
            trigger.checkpoint_id,
            CheckpointFailureReason.DECLINED,
            "disk full",
        )
    )
    rig.settle()
    with pytest.raises(RuntimeError, match=r"stop-with-savepoint of job .* failed, the job goes on: .*disk full"):
        stopped.result(0)
    assert [m.checkpoint_id for m in rig.gateway.of("aborted")] == [trigger.checkpoint_id]
    assert rig.master.status is JobStatus.RUNNING and rig.gateway.of("cancel") == []
    rig.main.advance(INTERVAL)
    rig.settle()
    assert [m.checkpoint_id for m in rig.gateway.of("trigger")] == [trigger.checkpoint_id + 1]


def stopped_with_every_ack(tmp_path, monkeypatch):
    """A running job stopped with a savepoint that every subtask acknowledged: the rig, the stop's future and
    the trigger. (The ended job's wait for its I/O thread, which only this test would run, is left out.)"""
    monkeypatch.setattr(JobCheckpointing, "_discard_unfinished", lambda self: None)
    rig = Rig(checkpointing=True).started()
    stopped = MiniClusterJobClient(rig.master, None).stop_with_savepoint(False, str(tmp_path))
    rig.settle()
    (trigger,) = rig.gateway.take("trigger")
    for task in rig.tasks:
        rig.master.acknowledge_checkpoint(
            AcknowledgeCheckpoint(ExecutionAttemptId(rig.job_id, *task, 0), trigger.checkpoint_id, {})
        )
    rig.settle()
    return rig, stopped, trigger


def test_a_stopped_job_ends_when_its_subtasks_end_after_hearing_the_savepoint_completed(tmp_path, monkeypatch) -> None:
    """The subtasks are told the savepoint completed (their sinks commit) and end by themselves: nobody cancels
    them; the stop answers with the savepoint once the job is FINISHED."""
    rig, stopped, trigger = stopped_with_every_ack(tmp_path, monkeypatch)
    assert [m.checkpoint_id for m in rig.gateway.of("complete")] == [trigger.checkpoint_id]
    assert not stopped.done(), "the stop answered before the job ended"
    rig.report_all(S.FINISHED)
    assert rig.master.status is JobStatus.FINISHED and rig.gateway.of("cancel") == []
    assert stopped.result(0).startswith(f"file://{tmp_path}/savepoint-")


def test_subtasks_that_do_not_end_after_a_stop_are_cancelled_and_the_job_still_finishes(tmp_path, monkeypatch) -> None:
    rig, stopped, _ = stopped_with_every_ack(tmp_path, monkeypatch)
    rig.main.advance(STOP_GRACE_MS)
    rig.settle()
    assert len(rig.gateway.of("cancel")) == len(rig.tasks)
    rig.report_all(S.CANCELED)
    assert rig.master.status is JobStatus.FINISHED and stopped.result(0)


def test_periodic_checkpoints_and_declines_travel_as_mails(caplog) -> None:
    caplog.set_level(logging.INFO, logger="fluvial.checkpoint.coordinator")
    rig = Rig(checkpointing=True).started()
    rig.main.advance(INTERVAL)
    rig.settle()
    (trigger,) = rig.gateway.take("trigger")
    rig.master.decline_checkpoint(
        DeclineCheckpoint(
            ExecutionAttemptId(rig.job_id, *rig.tasks[0], 0),
            trigger.checkpoint_id,
            CheckpointFailureReason.DECLINED_TASK_NOT_READY,
            "starting",
        )
    )
    assert rig.gateway.of("aborted") == [], "the decline waits for the main thread"
    rig.settle()
    assert [m.checkpoint_id for m in rig.gateway.of("aborted")] == [trigger.checkpoint_id]
    assert rig.master.status is JobStatus.RUNNING, "a task that was not ready is no checkpoint failure"
    assert "aborted (DECLINED_TASK_NOT_READY)" in caplog.text
