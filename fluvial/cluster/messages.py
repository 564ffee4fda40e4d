"""The messages between JobMaster, TaskManagers and clients: the only cross-process contract.

Plain dataclasses of plain values and enums, so a TaskManager in another process or a Ray actor speaks the same
language as one in this process; the gateways (`gateways.py`) carry them. A message is never changed after it
is built (not frozen only because frozen dataclasses cost start-up time in every job).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.stop_mode import StopMode
from fluvial.metrics.snapshot import TaskMetricsSnapshot
from fluvial.runtime.deployment import ExecutionAttemptId, TaskFailure, TaskSpec
from fluvial.runtime.execution_state import ExecutionState

if TYPE_CHECKING:
    from fluvial.checkpoint.metadata import SubtaskState


class AttemptMessage:
    """A message about one subtask attempt: it carries the attempt's ExecutionAttemptId as `attempt_id`."""

    attempt_id: ExecutionAttemptId

    @property
    def job_id(self) -> str:
        return self.attempt_id.job_id


@dataclass(eq=False)
class DeployTask:
    """JobMaster → TaskManager: run this subtask attempt in this slot (Flink's TaskDeploymentDescriptor)."""

    spec: TaskSpec
    slot_index: int


@dataclass(eq=False)
class CancelTask(AttemptMessage):
    """JobMaster → TaskManager: stop this subtask attempt; it answers with its final state."""

    attempt_id: ExecutionAttemptId


@dataclass(eq=False)
class TaskExecutionState(AttemptMessage):
    """TaskManager → JobMaster: a subtask attempt reached `state`; FAILED carries the failure."""

    attempt_id: ExecutionAttemptId
    state: ExecutionState
    failure: TaskFailure | None = None


@dataclass(eq=False)
class TaskEndOfData(AttemptMessage):
    """TaskManager → JobMaster: a subtask attempt finished its input and operators and waits for its final
    checkpoint (Flink's notifyEndOfData); once every subtask has, the JobMaster triggers that checkpoint."""

    attempt_id: ExecutionAttemptId


@dataclass(eq=False)
class TriggerCheckpoint(AttemptMessage):
    """JobMaster → TaskManager: a source subtask starts checkpoint `checkpoint_id` (its barrier follows); with a
    `savepoint_dir`, a savepoint written there, self-contained. `stop`: the synchronous savepoint of a
    stop-with-savepoint — after its snapshot the source emits nothing until the savepoint completes (it ends) or
    is aborted (it resumes); with StopMode.DRAIN it first advances to the end of event time (MAX_WATERMARK, so
    every event-time timer and window downstream fires ahead of the barrier) and ends its input."""

    attempt_id: ExecutionAttemptId
    checkpoint_id: int
    timestamp: int
    savepoint_dir: str | None = None
    stop: StopMode | None = None


@dataclass(eq=False)
class AcknowledgeCheckpoint(AttemptMessage):
    """TaskManager → JobMaster: a subtask's state for a checkpoint is stored; `states` maps operator id to its
    SubtaskState (state handles)."""

    attempt_id: ExecutionAttemptId
    checkpoint_id: int
    states: dict[str, SubtaskState]
    metrics: Any = None  # a CheckpointMetricsReport: alignment duration, persisted in-flight bytes, unaligned


@dataclass(eq=False)
class DeclineCheckpoint(AttemptMessage):
    """TaskManager → JobMaster: a subtask could not take part in a checkpoint, and why (`reason` decides whether
    it counts against the tolerable failures; `detail` is for the log)."""

    attempt_id: ExecutionAttemptId
    checkpoint_id: int
    reason: CheckpointFailureReason
    detail: str = ""


@dataclass(eq=False)
class NotifyCheckpointComplete:
    """JobMaster → TaskManager: checkpoint `checkpoint_id` is complete; two-phase-commit sinks commit now."""

    job_id: str
    checkpoint_id: int


@dataclass(eq=False)
class NotifyCheckpointAborted:
    """JobMaster → TaskManager: checkpoint `checkpoint_id` will never complete."""

    job_id: str
    checkpoint_id: int


@dataclass(eq=False)
class ReleaseJob:
    """JobMaster → TaskManager: the job has ended; drop what the TaskManager keeps for it (channels, receivers,
    checkpoint storage)."""

    job_id: str


@dataclass(eq=False)
class MetricsSnapshot(AttemptMessage):
    """TaskManager → JobMaster: the latest metrics of a subtask attempt (plain names and numbers), sent every
    `metrics.fetcher.update-interval` while it runs and once more, `final`, just before its terminal state."""

    attempt_id: ExecutionAttemptId
    metrics: TaskMetricsSnapshot
