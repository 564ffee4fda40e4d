"""TaskManager: offers slots and runs the subtasks deployed into them on one TaskExecutor thread.

It speaks only the dataclass messages of `messages.py`, so an out-of-process TaskManager is the same object
behind a transport.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from fluvial.cluster.messages import (
    AcknowledgeCheckpoint,
    CancelTask,
    DeclineCheckpoint,
    DeployTask,
    NotifyCheckpoint,
    TaskExecutionState,
    TriggerCheckpoint,
)
from fluvial.runtime.channels import ChannelRegistry
from fluvial.runtime.executor import TaskExecutor
from fluvial.runtime.task import Task, TaskFailure, TaskState


class CheckpointServices:
    """What tasks of this TaskManager share for checkpoints: storage access per job (built from the storage
    description, as an out-of-process TaskManager would), a small pool for the asynchronous part, and the way
    back to the JobMaster."""

    def __init__(self, report_checkpoint: Callable[[Any], None]) -> None:
        self._report = report_checkpoint
        self._storages: dict[str, Any] = {}
        self._pool: Any = None
        self._lock = threading.Lock()

    def storage(self, job_id: str, description: Any) -> Any:
        with self._lock:
            access = self._storages.get(job_id)
            if access is None and description is not None:
                from fluvial.checkpoint.storage import create_checkpoint_storage

                access = self._storages[job_id] = create_checkpoint_storage(description, job_id)
            return access  # None: the job only restores (state handles name their own location)

    def savepoint_storage(self, directory: str, job_id: str) -> Any:
        from fluvial.checkpoint.savepoint import savepoint_storage

        return savepoint_storage(directory, job_id)

    def pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fluvial-checkpoint-io")
            return self._pool

    def acknowledge(self, task: Task, checkpoint_id: int, states: dict) -> None:
        spec = task.spec
        self._report(AcknowledgeCheckpoint(spec.job_id, checkpoint_id, spec.vertex.id, spec.subtask_index, states))

    def decline(self, task: Task, checkpoint_id: int, reason: str) -> None:
        spec = task.spec
        self._report(DeclineCheckpoint(spec.job_id, checkpoint_id, spec.vertex.id, spec.subtask_index, reason))

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)


class TaskManager:
    def __init__(self, index: int, number_of_slots: int, channels: ChannelRegistry,
                 report: Callable[[TaskExecutionState], None], collect_target: Any = None,
                 report_checkpoint: Callable[[Any], None] | None = None) -> None:
        self.index = index
        self.number_of_slots = number_of_slots
        self._channels = channels
        self._report = report
        self._collect_target = collect_target
        self._executor = TaskExecutor(f"fluvial-taskmanager-{index}")
        self._tasks: dict[tuple[str, int, int], Task] = {}
        self._checkpoints = CheckpointServices(report_checkpoint or (lambda message: None))

    def deploy(self, message: DeployTask) -> None:
        spec = message.spec
        task = Task(spec, self._channels, self._executor, self._on_state, self._collect_target, self._checkpoints)
        self._tasks[(spec.job_id, spec.vertex.id, spec.subtask_index)] = task
        self._executor.submit(task)

    def cancel(self, message: CancelTask) -> None:
        task = self._tasks.get((message.job_id, message.vertex_id, message.subtask_index))
        if task is not None:
            task.cancel()

    def trigger_checkpoint(self, message: TriggerCheckpoint) -> None:
        task = self._tasks.get((message.job_id, message.vertex_id, message.subtask_index))
        if task is None:
            # It ended (a trigger raced its end). No decline: that would count as a checkpoint failure. The
            # JobMaster hears of the end from the task's final state and aborts what still waits for it.
            return
        task.trigger_checkpoint(message.checkpoint_id, message.timestamp, message.savepoint_dir)

    def notify_checkpoint(self, message: NotifyCheckpoint) -> None:
        for (job_id, _, _), task in list(self._tasks.items()):
            if job_id == message.job_id:
                task.notify_checkpoint(message.checkpoint_id, message.completed)

    def _on_state(self, task: Task, state: TaskState, failure: TaskFailure | None) -> None:
        spec = task.spec
        key = (spec.job_id, spec.vertex.id, spec.subtask_index)
        if state.is_terminal and self._tasks.get(key) is task:
            del self._tasks[key]
        self._report(
            TaskExecutionState(
                job_id=spec.job_id,
                vertex_id=spec.vertex.id,
                subtask_index=spec.subtask_index,
                state=state.value,
                operator_name=failure.operator_name if failure else None,
                task_name=task.name,
                error=failure.error if failure else None,
                traceback_text=failure.traceback_text if failure else None,
                attempt=spec.attempt,
            )
        )

    def shutdown(self) -> None:
        self._executor.shutdown()
        self._checkpoints.shutdown()
