"""JobMaster: a subtask that fails while the JobMaster is still deploying must not leave later subtasks running.

TaskManagers report from their own threads, so a report can arrive in the middle of deployment. The JobMaster
handles reports as mails on its own thread, after the deployment that is under way: every later subtask is
deployed, then cancelled, and the job fails only once all of them are down.
"""

from __future__ import annotations

import threading
import time

import pytest

from fluvial.cluster.job_master import JobMaster
from fluvial.cluster.messages import TaskExecutionState
from fluvial.cluster.slots import offered_slots
from fluvial.common.errors import JobExecutionException
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.runtime.deployment import ExecutionAttemptId, TaskFailure
from fluvial.runtime.execution_state import ExecutionState


class FakeTaskManager:
    """Records deploys and cancels; the first deployed subtask fails at once, reported from another thread as a
    real TaskManager's executor thread would."""

    def __init__(self) -> None:
        self.job_master: JobMaster | None = None
        self.deployed: list[tuple[int, int]] = []
        self.cancelled: set[tuple[int, int]] = set()
        self.reporters: list[threading.Thread] = []

    def submit_task(self, message) -> None:
        spec = message.spec
        key = (spec.vertex.id, spec.subtask_index)
        self.deployed.append(key)
        if len(self.deployed) == 1:
            failure = TaskFailure(ZeroDivisionError("boom"), "Map", "Map (1/2)", "")
            update = TaskExecutionState(
                ExecutionAttemptId(spec.job_id, key[0], key[1], 0), ExecutionState.FAILED, failure
            )
            reporter = threading.Thread(target=self.job_master.update_task_execution_state, args=(update,))
            reporter.start()
            reporter.join(0.3)  # give the report every chance to land before the next deploy
            self.reporters.append(reporter)

    def cancel_task(self, message) -> None:
        key = message.attempt_id.execution_vertex_id
        if key in self.deployed:  # as a real TaskManager: a subtask it does not run yet cannot be cancelled
            self.cancelled.add(key)

    def release_job(self, message) -> None:
        pass


def _job_graph():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_source(NumberSequenceSource(1, 10)).map(lambda x: x).disable_chaining().add_sink(lambda v: None)
    return env.get_job_graph()


@pytest.mark.timeout(30)
def test_failure_reported_during_deployment_cancels_every_later_subtask():
    job_graph = _job_graph()
    task_manager = FakeTaskManager()
    master = JobMaster(job_graph, [task_manager], offered_slots(1, job_graph.required_slots()))
    task_manager.job_master = master
    master.start()
    subtasks = sum(vertex.parallelism for vertex in job_graph.vertices)
    deadline = time.monotonic() + 10
    while len(task_manager.cancelled) < subtasks - 1 and time.monotonic() < deadline:
        time.sleep(0.01)  # start and the failure are mails on the JobMaster's thread, in that order
    for reporter in task_manager.reporters:
        reporter.join(10)
    failed = task_manager.deployed[0]
    others = set(task_manager.deployed) - {failed}
    assert len(others) >= 3
    assert others <= task_manager.cancelled, f"never cancelled: {sorted(others - task_manager.cancelled)}"
    assert not master.result.done(), "the job ended while some of its subtasks had not even been deployed"
    for vertex_id, index in others:
        master.update_task_execution_state(
            TaskExecutionState(ExecutionAttemptId(job_graph.job_id, vertex_id, index, 0), ExecutionState.CANCELED)
        )
    with pytest.raises(JobExecutionException) as info:
        master.result.result(timeout=5)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
