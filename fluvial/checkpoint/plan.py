"""What the CheckpointCoordinator needs of the job's subtasks: the plan of a checkpoint, and the way to reach them.

Kept apart from the coordinator so the scheduler, which implements it, loads nothing of checkpointing — storage,
fsspec — in a job that takes no checkpoints (start-up time is part of every small job's latency)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.stop_mode import StopMode

Task = tuple[int, int]  # (vertex id, subtask index)


@dataclass(frozen=True)
class CheckpointPlan:
    """Which subtasks start checkpoint n (its barriers flow from them) and which must acknowledge it. Subtasks
    that have FINISHED (FLIP-147) count as acknowledged: `finished` names each one's operators (their state is
    recorded as finished), `finished_parallelism` the parallelism of their vertices."""

    tasks_to_trigger: list[Task]
    tasks_to_wait_for: set[Task]
    finished: dict[Task, tuple[str, ...]] = field(default_factory=dict)
    finished_parallelism: dict[int, int] = field(default_factory=dict)


class CheckpointTasks(Protocol):
    """The coordinator's view of the job's subtasks (the scheduler implements it)."""

    def checkpoint_plan(self) -> CheckpointPlan | CheckpointFailureReason:
        """The plan for a checkpoint now, or why none can be taken now (e.g. NOT_ALL_TASKS_RUNNING)."""
        ...

    def trigger(
        self, task: Task, checkpoint_id: int, timestamp: int, savepoint_dir: str | None, stop: StopMode | None = None
    ) -> None:
        """Start the checkpoint at source subtask `task` (`stop`: see messages.TriggerCheckpoint)."""
        ...

    def notify_complete(self, checkpoint_id: int) -> None: ...

    def notify_aborted(self, checkpoint_id: int) -> None: ...

    def fail_job(self, error: BaseException) -> None:
        """Too many checkpoints failed in a row: fail over (or fail) the job, as its restart strategy says."""
        ...
