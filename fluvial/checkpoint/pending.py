"""A checkpoint that has been triggered and is collecting acknowledgements (Flink's PendingCheckpoint).

Life of checkpoint n, owned by the CheckpointCoordinator's one thread:
1. Created PENDING with the tasks that must acknowledge (every running subtask of the job, as (vertex_id,
   subtask)); subtasks that have finished are recorded at once with the state of finished operators.
2. `acknowledge(task, states)` per task; the result says what happened (AckResult), never raises for a late or
   stray message — those are normal in a distributed system.
3. When `is_fully_acknowledged`, `finalize(storage)` writes the metadata and returns the CompletedCheckpoint
   (state COMPLETED). If writing fails, the checkpoint is ABORTED with FINALIZE_FAILURE and the error re-raised.
4. Or, at any time before completion, `abort(reason)` (timeout, a decline, a failover...): state ABORTED. The
   coordinator then discards its files (`storage.discard_checkpoint(n)`, `store.release_shared(n)`).
Calls that make no sense in the current state raise IllegalCheckpointStateError naming the state.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.storage import (
    CheckpointMetadata,
    CheckpointStorageAccess,
    OperatorState,
    SubtaskState,
)
from fluvial.checkpoint.store import CompletedCheckpoint
from fluvial.common.errors import FluvialError
from fluvial.common.key_groups import DEFAULT_MAX_PARALLELISM

TaskId = tuple[int, int]
"""(vertex_id, subtask_index)."""

FINISHED_SUBTASK = SubtaskState(finished=True)
"""The state of an operator in a subtask that had FINISHED when the checkpoint was taken: nothing to restore."""


class AckResult(enum.Enum):
    SUCCESS = "acknowledged"
    DUPLICATE = "this task had already acknowledged"
    UNKNOWN = "this task is not part of the checkpoint"
    DISCARDED = "the checkpoint was aborted; the coordinator must discard the state this ack refers to"


class PendingCheckpointState(enum.Enum):
    PENDING = "pending"
    COMPLETED = "completed"
    ABORTED = "aborted"


class IllegalCheckpointStateError(FluvialError):
    """A pending checkpoint was asked to do something its state forbids."""


class PendingCheckpoint:
    def __init__(
        self,
        checkpoint_id: int,
        timestamp: int,
        tasks_to_ack: set[TaskId],
        is_savepoint: bool = False,
        *,
        job_id: str = "",
        max_parallelism: int | Mapping[int, int] = DEFAULT_MAX_PARALLELISM,
        finished: Mapping[TaskId, tuple[str, ...]] | None = None,
        finished_parallelism: Mapping[int, int] | None = None,
    ) -> None:
        """`max_parallelism`: one value for the job, or per vertex id (what restore rescales by). An operator's
        parallelism is the number of its vertex's subtasks in `tasks_to_ack`, plus those of them in `finished`:
        subtasks that have FINISHED (FLIP-147), each with its operator ids, acknowledged up front with the state
        of finished operators (`SubtaskState.finished`, no handles). `finished_parallelism` gives the
        parallelism of their vertices (a vertex whose subtasks all finished has none left to count)."""
        if not tasks_to_ack:
            raise ValueError(f"checkpoint {checkpoint_id} needs at least one task to acknowledge it")
        self.checkpoint_id = checkpoint_id
        self.timestamp = timestamp
        self.is_savepoint = is_savepoint
        self.job_id = job_id
        self.tasks_to_ack: frozenset[TaskId] = frozenset(tasks_to_ack)
        self._max_parallelism = max_parallelism
        self._not_yet_acknowledged: set[TaskId] = set(tasks_to_ack)
        self._parallelism: dict[int, int] = dict(finished_parallelism or {})
        for vertex_id, _ in tasks_to_ack:
            if vertex_id not in (finished_parallelism or {}):
                self._parallelism[vertex_id] = self._parallelism.get(vertex_id, 0) + 1
        self._operator_states: dict[str, OperatorState] = {}
        for (vertex_id, subtask), operator_ids in (finished or {}).items():
            for operator_id in operator_ids:
                self._operator_state(operator_id, vertex_id).subtask_states[subtask] = FINISHED_SUBTASK
        self.state = PendingCheckpointState.PENDING
        self.failure_reason: CheckpointFailureReason | None = None
        self.failure_cause: BaseException | None = None

    # -- acknowledgements ---------------------------------------------------------------------------------------

    def acknowledge(self, task: TaskId, states: Mapping[str, SubtaskState] | None = None) -> AckResult:
        """Record `task`'s state: `states` maps each operator id of its chain to that operator's SubtaskState."""
        if self.state is PendingCheckpointState.ABORTED:
            return AckResult.DISCARDED
        if task not in self.tasks_to_ack:
            return AckResult.UNKNOWN
        if task not in self._not_yet_acknowledged:
            return AckResult.DUPLICATE
        self._not_yet_acknowledged.discard(task)
        vertex_id, subtask = task
        for operator_id, subtask_state in (states or {}).items():
            self._operator_state(operator_id, vertex_id).subtask_states[subtask] = subtask_state
        return AckResult.SUCCESS

    def _operator_state(self, operator_id: str, vertex_id: int) -> OperatorState:
        operator = self._operator_states.get(operator_id)
        if operator is None:
            operator = OperatorState(operator_id, self._parallelism[vertex_id], self._max_parallelism_of(vertex_id))
            self._operator_states[operator_id] = operator
        return operator

    def _max_parallelism_of(self, vertex_id: int) -> int:
        if isinstance(self._max_parallelism, int):
            return self._max_parallelism
        return self._max_parallelism.get(vertex_id, DEFAULT_MAX_PARALLELISM)

    @property
    def is_fully_acknowledged(self) -> bool:
        return not self._not_yet_acknowledged

    @property
    def not_yet_acknowledged(self) -> frozenset[TaskId]:
        return frozenset(self._not_yet_acknowledged)

    @property
    def operator_states(self) -> dict[str, OperatorState]:
        return dict(self._operator_states)

    # -- transitions --------------------------------------------------------------------------------------------

    def abort(self, reason: CheckpointFailureReason, cause: BaseException | None = None) -> None:
        """PENDING → ABORTED. Aborting an aborted checkpoint again keeps the first reason (timeouts and declines
        race); aborting a completed one is an error."""
        if self.state is PendingCheckpointState.ABORTED:
            return
        self._require_pending(f"abort it ({reason.name})")
        self.state = PendingCheckpointState.ABORTED
        self.failure_reason = reason
        self.failure_cause = cause

    def finalize(self, storage: CheckpointStorageAccess) -> CompletedCheckpoint:
        """PENDING and fully acknowledged → COMPLETED: write the metadata, return the completed checkpoint.
        (The coordinator splits this in two: `metadata()` on its thread, the write on its I/O executor, then
        `mark_completed(location)` back on its thread.)"""
        metadata = self.metadata()
        try:
            location = storage.write_metadata(self.checkpoint_id, metadata)
        except Exception as error:
            self.abort(CheckpointFailureReason.FINALIZE_FAILURE, error)
            raise
        return self.mark_completed(location)

    def metadata(self) -> CheckpointMetadata:
        """What `_metadata` will hold; only a fully acknowledged, pending checkpoint has it."""
        self._require_pending("finalize it")
        if not self.is_fully_acknowledged:
            missing = sorted(self._not_yet_acknowledged)
            raise IllegalCheckpointStateError(
                f"checkpoint {self.checkpoint_id} cannot be finalized: {len(missing)} of {len(self.tasks_to_ack)} "
                f"tasks have not acknowledged it yet (first: vertex {missing[0][0]} subtask {missing[0][1]}); "
                "finalize only when is_fully_acknowledged"
            )
        return CheckpointMetadata(
            self.checkpoint_id, self.timestamp, self.job_id, self.is_savepoint, dict(self._operator_states)
        )

    def mark_completed(self, location: str) -> CompletedCheckpoint:
        """PENDING → COMPLETED, once the metadata is stored at `location`."""
        metadata = self.metadata()
        self.state = PendingCheckpointState.COMPLETED
        return CompletedCheckpoint(self.checkpoint_id, self.timestamp, location, metadata, self.is_savepoint)

    def _require_pending(self, action: str) -> None:
        if self.state is not PendingCheckpointState.PENDING:
            detail = f" ({self.failure_reason.name})" if self.failure_reason is not None else ""
            raise IllegalCheckpointStateError(
                f"cannot {action}: checkpoint {self.checkpoint_id} is {self.state.value}{detail}"
            )

    def __repr__(self) -> str:
        acked = len(self.tasks_to_ack) - len(self._not_yet_acknowledged)
        return (
            f"PendingCheckpoint(id={self.checkpoint_id}, state={self.state.name}, "
            f"acknowledged={acked}/{len(self.tasks_to_ack)})"
        )
