"""The messages between JobMaster, TaskManagers and clients: the only cross-process contract (plain dataclasses,
so TaskManagers in other processes or Ray actors speak the same language as in-process ones)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fluvial.runtime.task import TaskSpec


class JobStatus(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"

    @property
    def is_globally_terminal(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)


@dataclass(frozen=True, slots=True)
class DeployTask:
    """JobMaster → TaskManager: run this subtask in this slot."""

    spec: TaskSpec
    slot_index: int


@dataclass(frozen=True, slots=True)
class CancelTask:
    """JobMaster → TaskManager."""

    job_id: str
    vertex_id: int
    subtask_index: int


@dataclass(frozen=True, slots=True)
class TaskExecutionState:
    """TaskManager → JobMaster: a subtask reached a state; failures carry the error and its traceback text."""

    job_id: str
    vertex_id: int
    subtask_index: int
    state: str
    operator_name: str | None = None
    task_name: str | None = None
    error: BaseException | None = None
    traceback_text: str | None = None
