"""JobMaster: builds the ExecutionGraph, assigns slots, deploys subtasks, and decides the job's fate from
their states: every subtask FINISHED → the job finishes; one FAILED → every other subtask is cancelled and the
job fails with the user's exception as the cause (no restarts before checkpoints exist)."""

from __future__ import annotations

import threading
import time
from fluvial.common.future import CompletableFuture as Future
from typing import Any

from fluvial.cluster.execution_graph import ExecutionGraph
from fluvial.cluster.messages import CancelTask, DeployTask, JobStatus, TaskExecutionState
from fluvial.cluster.slots import SlotId, assign_slots
from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.common.job_execution_result import JobExecutionResult
from fluvial.graph.job_graph import JobGraph


class JobMaster:
    def __init__(self, job_graph: JobGraph, task_managers: list[Any], free_slots: list[SlotId]) -> None:
        self.job_graph = job_graph
        self.execution_graph = ExecutionGraph(job_graph, _job_parameters(job_graph))
        self._task_managers = task_managers
        self._slots = assign_slots(job_graph, free_slots)
        self._lock = threading.Lock()
        self._states: dict[tuple[int, int], str] = {}
        self._failure: TaskExecutionState | None = None
        self._cancel_requested = False
        self.status = JobStatus.CREATED
        self.result: Future = Future()
        self._started_at = 0.0

    @property
    def job_id(self) -> str:
        return self.job_graph.job_id

    def start(self) -> None:
        """Deploy every subtask. TaskManager threads report while this runs, so it holds the lock: a report
        waits until every subtask is known (no job ends on a partial view) and deployed (a failure's
        cancellation reaches all of them). Deploying only hands the task to an executor; it never reports."""
        self._started_at = time.monotonic()
        with self._lock:
            self.status = JobStatus.RUNNING
            order = [(v, i) for v in reversed(self.job_graph.vertices) for i in range(v.parallelism)]
            for vertex, index in order:  # consumers first, so no producer waits on a ghost
                self._states[(vertex.id, index)] = "DEPLOYING"
            for vertex, index in order:
                slot = self._slots[(vertex.id, index)]
                spec = self.execution_graph.task_spec(vertex, index)
                self._task_managers[slot.task_manager].deploy(DeployTask(spec, slot.index))

    def cancel(self) -> None:
        with self._lock:
            if self.status.is_globally_terminal:
                return
            self._cancel_requested = True
            self.status = JobStatus.CANCELLING
        self._cancel_all()

    def _cancel_all(self) -> None:
        for (vertex_id, index), slot in self._slots.items():
            self._task_managers[slot.task_manager].cancel(CancelTask(self.job_id, vertex_id, index))

    def on_task_state(self, update: TaskExecutionState) -> None:
        """Called from TaskManager threads; decisions are made under the lock, actions outside it."""
        cancel_others = False
        with self._lock:
            self._states[(update.vertex_id, update.subtask_index)] = update.state
            if update.state == "FAILED" and self._failure is None and not self._cancel_requested:
                self._failure = update
                self.status = JobStatus.FAILING
                cancel_others = True
            done = all(state in ("FINISHED", "FAILED", "CANCELED") for state in self._states.values())
        if cancel_others:
            self._cancel_all()
        if done:
            self._complete()

    def _complete(self) -> None:
        if self.result.done():
            return
        runtime_ms = int((time.monotonic() - self._started_at) * 1000)
        name = self.job_graph.job_name
        if self._failure is not None:
            failure = self._failure
            self.status = JobStatus.FAILED
            error = JobExecutionException(
                f"Job '{name}' ({self.job_id}) failed: operator '{failure.operator_name}' in task "
                f"{failure.task_name} raised {type(failure.error).__name__}: {failure.error}",
                self.job_id,
            )
            error.__cause__ = failure.error
            self.result.set_exception(error)
        elif self._cancel_requested:
            self.status = JobStatus.CANCELED
            self.result.set_exception(JobCancelledException(f"Job '{name}' ({self.job_id}) was cancelled", self.job_id))
        else:
            self.status = JobStatus.FINISHED
            self.result.set_result(JobExecutionResult(self.job_id, runtime_ms))


def _job_parameters(job_graph: JobGraph) -> dict[str, str]:
    config = job_graph.execution_config
    return config.get_global_job_parameters() if config is not None else {}
