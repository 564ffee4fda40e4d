"""TaskManager: offers slots and runs the subtasks deployed into them on one TaskExecutor thread.

It speaks only the dataclass messages of `messages.py`, so an out-of-process TaskManager is the same object
behind a transport.
"""

from __future__ import annotations

from typing import Any, Callable

from fluvial.cluster.messages import CancelTask, DeployTask, TaskExecutionState
from fluvial.runtime.channels import ChannelRegistry
from fluvial.runtime.executor import TaskExecutor
from fluvial.runtime.task import Task, TaskFailure, TaskState


class TaskManager:
    def __init__(self, index: int, number_of_slots: int, channels: ChannelRegistry,
                 report: Callable[[TaskExecutionState], None], collect_target: Any = None) -> None:
        self.index = index
        self.number_of_slots = number_of_slots
        self._channels = channels
        self._report = report
        self._collect_target = collect_target
        self._executor = TaskExecutor(f"fluvial-taskmanager-{index}")
        self._tasks: dict[tuple[str, int, int], Task] = {}

    def deploy(self, message: DeployTask) -> None:
        spec = message.spec
        task = Task(spec, self._channels, self._executor, self._on_state, self._collect_target)
        self._tasks[(spec.job_id, spec.vertex.id, spec.subtask_index)] = task
        self._executor.submit(task)

    def cancel(self, message: CancelTask) -> None:
        task = self._tasks.get((message.job_id, message.vertex_id, message.subtask_index))
        if task is not None:
            task.cancel()

    def _on_state(self, task: Task, state: TaskState, failure: TaskFailure | None) -> None:
        spec = task.spec
        if state.is_terminal:
            self._tasks.pop((spec.job_id, spec.vertex.id, spec.subtask_index), None)
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
            )
        )

    def shutdown(self) -> None:
        self._executor.shutdown()
