"""Scheduler driven by hand: a recording fake TaskManagerGateway, a ManualScheduledExecutor for the restart delay,
the task reports fed in directly. Covers deployment, finishing, failover with its back-off, cancel while a restart
waits, stale reports of old attempts, known races, illegal transitions, the job failing, and the checkpoint plan
and messages the scheduler sends for the coordinator."""

from __future__ import annotations

import logging

import pytest

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.cluster.execution_graph import ExecutionGraph
from fluvial.cluster.messages import TaskExecutionState
from fluvial.cluster.scheduler import PEER_LOSS_GRACE_MS, Scheduler
from fluvial.cluster.slots import assign_slots, offered_slots
from fluvial.common.job_status import JobStatus
from fluvial.common.restart_backoff import create_backoff_strategy
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.runtime.deployment import ExecutionAttemptId, TaskFailure
from fluvial.runtime.execution_state import ExecutionState, IllegalExecutionStateTransition
from fluvial.runtime.network.remote_channels import DataConnectionLost
from fluvial.testing import ManualClock, ManualScheduledExecutor
from tests.unit.cluster.fakes import TaskManagerGateway

DELAY = 500
S = ExecutionState


class Listener:
    def __init__(self) -> None:
        self.statuses: list[tuple[JobStatus, BaseException | None]] = []

    def job_status_changed(self, status: JobStatus, error: BaseException | None) -> None:
        self.statuses.append((status, error))


class Rig:
    def __init__(self, restarts: int | None = 2) -> None:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).name("src").rebalance().map(lambda v: v).set_parallelism(2).name("map").add_sink(
            lambda v: None
        ).set_parallelism(2)
        self.job_graph = env.get_job_graph()
        self.clock = ManualClock(0)
        self.timer = ManualScheduledExecutor(self.clock)
        self.gateway = TaskManagerGateway()
        self.listener = Listener()
        backoff = (
            None
            if restarts is None
            else create_backoff_strategy(RestartStrategies.fixed_delay_restart(restarts, DELAY), clock=self.clock)
        )
        graph = ExecutionGraph(self.job_graph)
        slots = assign_slots(self.job_graph, offered_slots(1, self.job_graph.required_slots()))
        self.scheduler = Scheduler(graph, slots, [self.gateway], self.timer, backoff, self.listener, clock=self.clock)
        self.source = self.job_graph.vertices[0].id
        self.map = self.job_graph.vertices[1].id
        self.ids = [(self.source, 0), (self.map, 0), (self.map, 1)]

    def report(self, task, state: ExecutionState, attempt: int | None = None, failure: TaskFailure | None = None):
        execution = self.scheduler.graph.vertices[task]
        self.scheduler.on_task_state(
            TaskExecutionState(
                ExecutionAttemptId(
                    self.job_graph.job_id, task[0], task[1], execution.attempt if attempt is None else attempt
                ),
                state,
                failure,
            )
        )

    def report_all(self, state: ExecutionState, tasks=None) -> None:
        for task in tasks if tasks is not None else self.ids:
            self.report(task, state)

    def states(self) -> list[ExecutionState]:
        return [self.scheduler.graph.vertices[task].state for task in self.ids]

    def running(self) -> Rig:
        self.scheduler.start(None)
        self.report_all(S.RUNNING)
        return self

    def failed_over(self, restart: bool = True) -> Rig:
        """Running, then map subtask 0 failed and the others are down: the restart waits for its delay (or, with
        `restart`, has happened)."""
        self.running()
        self.fail((self.map, 0))
        self.report_all(S.CANCELED, [self.ids[0], self.ids[2]])
        if restart:
            self.timer.advance(DELAY)
        return self

    def fail(self, task, message: str = "boom") -> ValueError:
        error = ValueError(message)
        self.report(task, S.FAILED, failure=TaskFailure(error, "map", "map (1/2)", "traceback"))
        return error


def test_start_deploys_every_subtask_consumers_first_through_its_slot(caplog) -> None:
    caplog.set_level(logging.INFO, logger="fluvial.cluster.scheduler")
    rig = Rig()
    rig.scheduler.start(None)
    assert f"job {rig.job_graph.job_id}: deploying 3 subtasks (restart 0)" in caplog.text
    assert rig.scheduler.status is JobStatus.RUNNING
    assert rig.listener.statuses == [(JobStatus.RUNNING, None)]
    deployed = [(m.spec.vertex.id, m.spec.subtask_index, m.spec.attempt) for m in rig.gateway.of("deploy")]
    assert deployed == [(rig.map, 0, 0), (rig.map, 1, 0), (rig.source, 0, 0)]
    assert rig.states() == [S.DEPLOYING] * 3


def test_every_subtask_finished_finishes_the_job() -> None:
    rig = Rig().running()
    rig.report_all(S.FINISHED, rig.ids[:2])
    assert rig.scheduler.status is JobStatus.RUNNING
    rig.report(rig.ids[2], S.FINISHED)
    assert rig.scheduler.status is JobStatus.FINISHED
    assert rig.listener.statuses[-1] == (JobStatus.FINISHED, None)


def test_a_failure_restarts_every_subtask_after_the_back_off(caplog) -> None:
    caplog.set_level(logging.INFO, logger="fluvial.cluster.scheduler")
    rig = Rig().running()
    rig.gateway.take("deploy")
    rig.fail((rig.map, 0))
    assert rig.scheduler.status is JobStatus.RESTARTING
    cancelled = [
        (m.attempt_id.vertex_id, m.attempt_id.subtask_index, m.attempt_id.attempt) for m in rig.gateway.take("cancel")
    ]
    assert cancelled == [(rig.source, 0, 0), (rig.map, 1, 0)], "the others are cancelled, attempt 0"
    assert rig.timer.scheduled_delays() == [], "the delay starts once every subtask is down"
    rig.report_all(S.CANCELED, [rig.ids[0], rig.ids[2]])
    assert rig.timer.scheduled_delays() == [DELAY]
    rig.timer.advance(DELAY - 1)
    assert rig.gateway.of("deploy") == []
    rig.timer.advance(1)
    assert rig.scheduler.status is JobStatus.RUNNING and rig.scheduler.restarts == 1
    assert [m.spec.attempt for m in rig.gateway.of("deploy")] == [1, 1, 1]
    assert rig.states() == [S.DEPLOYING] * 3
    assert "map' in map (1/2) (attempt 0) failed with ValueError: boom; restarting (restart 1)" in caplog.text
    assert f"restarting in {DELAY} ms" in caplog.text and "switched from RESTARTING to RUNNING" in caplog.text


def test_reports_of_an_earlier_attempt_are_ignored() -> None:
    rig = Rig().failed_over()
    rig.report(rig.ids[1], S.FAILED, attempt=0)  # the old attempt's goodbye
    rig.report(rig.ids[2], S.RUNNING, attempt=0)
    assert rig.scheduler.status is JobStatus.RUNNING and rig.states() == [S.DEPLOYING] * 3


def test_cancel_while_a_restart_waits_cancels_the_restart() -> None:
    rig = Rig().failed_over(restart=False)
    assert rig.timer.scheduled_delays() == [DELAY]
    rig.gateway.take("deploy")
    rig.scheduler.cancel()
    assert rig.scheduler.status is JobStatus.CANCELED
    assert rig.timer.scheduled_delays() == []
    rig.timer.advance(DELAY * 2)
    assert rig.gateway.of("deploy") == [] and rig.scheduler.restarts == 0


def test_cancel_of_a_running_job_waits_for_every_subtask_to_stop() -> None:
    rig = Rig().running()
    rig.scheduler.cancel()
    assert rig.scheduler.status is JobStatus.CANCELLING and rig.states() == [S.CANCELING] * 3
    assert len(rig.gateway.of("cancel")) == 3
    rig.report(rig.ids[0], S.RUNNING)  # a known race: it was running before it heard the cancel
    rig.report(rig.ids[1], S.FINISHED)  # or it finished first
    rig.report(rig.ids[0], S.CANCELED)
    assert rig.scheduler.status is JobStatus.CANCELLING
    rig.report(rig.ids[2], S.CANCELED)
    assert rig.scheduler.status is JobStatus.CANCELED


def test_a_report_the_state_does_not_lead_to_raises_naming_both_states() -> None:
    rig = Rig()
    rig.scheduler.start(None)
    rig.report(rig.ids[0], S.RUNNING)
    with pytest.raises(IllegalExecutionStateTransition, match="from RUNNING to INITIALIZING"):
        rig.report(rig.ids[0], S.INITIALIZING)


def test_without_restarts_left_the_job_fails_with_the_users_error() -> None:
    rig = Rig(restarts=0).running()
    error = rig.fail((rig.map, 1), "the user's bug")
    assert rig.scheduler.status is JobStatus.FAILING
    rig.report_all(S.CANCELED, rig.ids[:2])
    assert rig.scheduler.status is JobStatus.FAILED
    assert rig.listener.statuses[-1] == (JobStatus.FAILED, error)
    assert rig.scheduler.failure.operator_name == "map"


def test_without_a_restart_strategy_the_first_failure_fails_the_job() -> None:
    rig = Rig(restarts=None)
    rig.scheduler.start(None)
    rig.fail((rig.source, 0))
    rig.report_all(S.CANCELED, rig.ids[1:])
    assert rig.scheduler.status is JobStatus.FAILED


def test_a_closed_data_connection_waits_for_the_lost_task_manager_it_comes_from_which_fails_the_job() -> None:
    rig = Rig(restarts=None).running()
    closed = DataConnectionLost("the data connection from 127.0.0.1:56802 closed")
    rig.report((rig.map, 1), S.FAILED, failure=TaskFailure(closed, "map", "map (2/2)", "traceback"))
    assert rig.scheduler.status is JobStatus.RUNNING  # held: its cause may be reported in a moment
    lost = RuntimeError("TaskManager 0 was lost: its process (pid 42) was killed by SIGKILL")
    rig.scheduler.on_task_manager_lost(0, lost)
    assert rig.scheduler.status is JobStatus.FAILED
    assert rig.listener.statuses[-1] == (JobStatus.FAILED, lost)
    rig.timer.advance(PEER_LOSS_GRACE_MS)  # the held failure is a consequence now: nothing changes
    assert rig.listener.statuses[-1] == (JobStatus.FAILED, lost)


def test_a_closed_data_connection_with_no_task_manager_lost_counts_on_its_own_after_the_grace() -> None:
    rig = Rig(restarts=None).running()
    closed = DataConnectionLost("the data connection from 127.0.0.1:56802 closed")
    rig.report((rig.map, 1), S.FAILED, failure=TaskFailure(closed, "map", "map (2/2)", "traceback"))
    rig.timer.advance(PEER_LOSS_GRACE_MS - 1)
    assert rig.scheduler.status is JobStatus.RUNNING
    rig.timer.advance(1)
    assert rig.scheduler.status is JobStatus.FAILING
    rig.report_all(S.CANCELED, rig.ids[:2])
    assert rig.listener.statuses[-1] == (JobStatus.FAILED, closed)


def test_subtasks_ending_unfinished_while_the_job_runs_fail_it() -> None:
    rig = Rig().running()
    rig.report_all(S.FINISHED, rig.ids[:2])
    rig.report(rig.ids[2], S.CANCELED)  # nobody asked it to stop
    assert rig.scheduler.status is JobStatus.FAILED
    assert "ended without finishing" in str(rig.listener.statuses[-1][1])


def test_a_global_failure_restarts_when_allowed_and_fails_when_not() -> None:
    rig = Rig(restarts=1).running()
    rig.scheduler.handle_global_failure(RuntimeError("too many failed checkpoints"))
    assert rig.scheduler.status is JobStatus.RESTARTING
    rig.report_all(S.CANCELED)
    rig.timer.advance(DELAY)
    rig.report_all(S.RUNNING)
    rig.scheduler.handle_global_failure(RuntimeError("again"))
    assert rig.scheduler.status is JobStatus.FAILING
    rig.report_all(S.CANCELED)
    assert rig.listener.statuses[-1][0] is JobStatus.FAILED
    assert str(rig.listener.statuses[-1][1]) == "again"


# -- the coordinator's view of the subtasks -------------------------------------------------------------------------


def test_no_checkpoint_plan_until_every_subtask_runs() -> None:
    rig = Rig()
    rig.scheduler.start(None)
    assert rig.scheduler.checkpoint_plan() is CheckpointFailureReason.NOT_ALL_TASKS_RUNNING
    rig.report_all(S.RUNNING, rig.ids[:2])
    assert rig.scheduler.checkpoint_plan() is CheckpointFailureReason.NOT_ALL_TASKS_RUNNING
    rig.report(rig.ids[2], S.RUNNING)
    plan = rig.scheduler.checkpoint_plan()
    assert plan.tasks_to_trigger == [(rig.source, 0)] and plan.tasks_to_wait_for == set(rig.ids)


def test_checkpoint_messages_name_the_current_attempt() -> None:
    rig = Rig().failed_over()
    rig.scheduler.trigger((rig.source, 0), 4, 1234, "/savepoints")
    rig.scheduler.notify_complete(4)
    rig.scheduler.notify_aborted(5)
    (trigger,) = rig.gateway.of("trigger")
    assert (
        trigger.attempt_id.vertex_id,
        trigger.attempt_id.subtask_index,
        trigger.attempt_id.attempt,
        trigger.checkpoint_id,
        trigger.timestamp,
        trigger.savepoint_dir,
    ) == (rig.source, 0, 1, 4, 1234, "/savepoints")
    assert [m.checkpoint_id for m in rig.gateway.of("complete")] == [4]
    assert [m.checkpoint_id for m in rig.gateway.of("aborted")] == [5]
