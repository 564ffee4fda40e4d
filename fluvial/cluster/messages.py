"""The messages between JobMaster, TaskManagers and clients: the only cross-process contract (plain dataclasses,
so TaskManagers in other processes or Ray actors speak the same language as in-process ones).
Messages are never changed after they are built (not frozen only because frozen dataclasses cost start-up
time in every job)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fluvial.runtime.task import TaskSpec


class JobStatus(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    RESTARTING = "RESTARTING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"

    @property
    def is_globally_terminal(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)


@dataclass(eq=False)
class DeployTask:
    """JobMaster → TaskManager: run this subtask in this slot."""

    spec: TaskSpec
    slot_index: int


@dataclass(eq=False)
class CancelTask:
    """JobMaster → TaskManager."""

    job_id: str
    vertex_id: int
    subtask_index: int


@dataclass(eq=False)
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
    attempt: int = 0


@dataclass(eq=False)
class TriggerCheckpoint:
    """JobMaster → TaskManager: a source subtask starts checkpoint `checkpoint_id` (its barrier follows)."""

    job_id: str
    vertex_id: int
    subtask_index: int
    checkpoint_id: int
    timestamp: int
    savepoint_dir: str | None = None


@dataclass(eq=False)
class AcknowledgeCheckpoint:
    """TaskManager → JobMaster: a subtask's state for a checkpoint is stored; `states` maps operator id to its
    SubtaskState (state handles)."""

    job_id: str
    checkpoint_id: int
    vertex_id: int
    subtask_index: int
    states: dict


@dataclass(eq=False)
class DeclineCheckpoint:
    """TaskManager → JobMaster: a subtask could not take part in a checkpoint."""

    job_id: str
    checkpoint_id: int
    vertex_id: int
    subtask_index: int
    reason: str


@dataclass(eq=False)
class NotifyCheckpoint:
    """JobMaster → TaskManager: checkpoint completed (commit now) or aborted."""

    job_id: str
    checkpoint_id: int
    completed: bool
