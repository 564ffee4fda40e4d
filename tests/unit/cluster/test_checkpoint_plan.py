"""The scheduler's checkpoint plan (Flink's DefaultCheckpointPlanCalculator, FLIP-147): with every subtask
running the sources are triggered; once some FINISHED, each running subtask whose producers all finished is
triggered (no barrier can reach it otherwise), only running subtasks are waited for, and the finished ones are
recorded with their operators — unless checkpoints-after-tasks-finish is off."""

from __future__ import annotations

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.pending import PendingCheckpoint
from fluvial.checkpoint.plan import CheckpointPlan
from fluvial.cluster.execution_graph import ExecutionGraph
from fluvial.cluster.scheduler import Scheduler
from fluvial.common.job_status import JobStatus
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.runtime.deployment import TaskCheckpointSettings
from fluvial.runtime.execution_state import ExecutionState
from fluvial.testing import ManualScheduledExecutor

S = ExecutionState


class Listener:
    def job_status_changed(self, status, error) -> None:
        pass


def scheduler(final_checkpoint: bool = True) -> tuple[Scheduler, dict[str, int]]:
    """source (2) -forward-> map (2) -rebalance-> sink (3): vertex ids by name."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_source(NumberSequenceSource(1, 10), source_name="source").uid("source").disable_chaining().map(
        lambda v: v
    ).name("map").uid("map").disable_chaining().rebalance().map(lambda v: v).name("sink").uid("sink").set_parallelism(
        3
    ).print()
    graph = ExecutionGraph(env.get_job_graph())
    plan_of = Scheduler(
        graph,
        {},
        [],
        ManualScheduledExecutor(),
        None,
        Listener(),
        task_settings=TaskCheckpointSettings(True, None, final_checkpoint),
    )
    plan_of.status = JobStatus.RUNNING
    ids = {
        name: next(v.id for v in graph.job_graph.vertices if v.name.startswith(name) or name in v.name)
        for name in ("source", "map", "sink")
    }
    for execution in graph:
        execution.state = S.RUNNING
    return plan_of, ids


def set_state(scheduler: Scheduler, vertex: int, subtask: int, state: ExecutionState) -> None:
    scheduler.graph.vertex(vertex, subtask).state = state


def test_every_subtask_running_triggers_the_sources_and_waits_for_all():
    plan_of, ids = scheduler()
    plan = plan_of.checkpoint_plan()
    assert isinstance(plan, CheckpointPlan)
    assert sorted(plan.tasks_to_trigger) == [(ids["source"], 0), (ids["source"], 1)]
    assert len(plan.tasks_to_wait_for) == 9 and not plan.finished  # source 2, map 2, sink 3, print 2


def test_a_subtask_whose_producers_finished_is_triggered_pointwise_and_all_to_all():
    plan_of, ids = scheduler()
    set_state(plan_of, ids["source"], 0, S.FINISHED)
    plan = plan_of.checkpoint_plan()
    # map 0 reads only source 0 (forward): triggered; map 1 still gets barriers from source 1
    assert sorted(plan.tasks_to_trigger) == [(ids["source"], 1), (ids["map"], 0)]
    assert (ids["source"], 0) not in plan.tasks_to_wait_for and len(plan.tasks_to_wait_for) == 8
    assert plan.finished == {(ids["source"], 0): ("source",)} and plan.finished_parallelism == {ids["source"]: 2}
    set_state(plan_of, ids["map"], 0, S.FINISHED)
    plan = plan_of.checkpoint_plan()
    assert (ids["sink"], 0) not in plan.tasks_to_trigger, "the sink still reads from map 1 (all to all)"
    set_state(plan_of, ids["source"], 1, S.FINISHED)
    set_state(plan_of, ids["map"], 1, S.FINISHED)
    plan = plan_of.checkpoint_plan()
    assert sorted(plan.tasks_to_trigger) == [(ids["sink"], i) for i in range(3)]


def test_finished_subtasks_need_checkpoints_after_tasks_finish_and_every_other_one_running():
    plan_of, ids = scheduler(final_checkpoint=False)
    set_state(plan_of, ids["source"], 0, S.FINISHED)
    assert plan_of.checkpoint_plan() is CheckpointFailureReason.NOT_ALL_TASKS_RUNNING
    plan_of, ids = scheduler()
    set_state(plan_of, ids["map"], 1, S.DEPLOYING)
    assert plan_of.checkpoint_plan() is CheckpointFailureReason.NOT_ALL_TASKS_RUNNING
    for execution in plan_of.graph:
        execution.state = S.FINISHED
    assert plan_of.checkpoint_plan() is CheckpointFailureReason.NOT_ALL_TASKS_RUNNING


def test_finished_subtasks_are_recorded_as_finished_and_a_vertex_of_them_as_fully_finished():
    plan_of, ids = scheduler()
    set_state(plan_of, ids["source"], 0, S.FINISHED)
    set_state(plan_of, ids["source"], 1, S.FINISHED)
    set_state(plan_of, ids["map"], 0, S.FINISHED)
    plan = plan_of.checkpoint_plan()
    pending = PendingCheckpoint(
        5, 0, plan.tasks_to_wait_for, finished=plan.finished, finished_parallelism=plan.finished_parallelism
    )
    for task in plan.tasks_to_wait_for:
        pending.acknowledge(task, {})
    states = pending.metadata().operator_states
    assert states["source"].fully_finished and states["source"].parallelism == 2
    assert not states["map"].fully_finished and states["map"].subtask_states[0].finished
    assert 1 not in states["map"].subtask_states and states["map"].parallelism == 2
