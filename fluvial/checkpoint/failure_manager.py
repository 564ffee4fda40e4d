"""How many checkpoint failures a job tolerates before it fails over (Flink's CheckpointFailureManager).

Counting rules:
1. Only failures whose reason `counts` (timeout, decline, asynchronous or I/O errors) go against the counter;
   the others (a newer checkpoint won, a task failed and failover handles it, the trigger was skipped) are
   IGNORED.
2. Each checkpoint counts once, however many of its tasks report a failure.
3. A failure of a checkpoint not newer than the last successful one is IGNORED (stale news).
4. A success resets the counter.
5. When the counter exceeds `tolerable_failures`, the verdict is FAIL_JOB and the counter starts over;
   `job_failure` then holds the error to fail the job with.
Savepoints: a failure before any task was involved (or pre-flight) never counts, a user retries those by hand;
a task failure of a synchronous savepoint (stop-with-savepoint) always fails the job, or the stop would wait
forever.
"""

from __future__ import annotations

import enum

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.common.errors import FluvialError
from fluvial.datastream.checkpoint_config import UNLIMITED_TOLERABLE_FAILURES

__all__ = [
    "UNLIMITED_TOLERABLE_FAILURES",
    "CheckpointFailureManager",
    "CheckpointFailuresExceededError",
    "FailureVerdict",
]


class FailureVerdict(enum.Enum):
    IGNORED = "not counted"
    TOLERATED = "counted, still within the tolerable number"
    FAIL_JOB = "the tolerable number of consecutive checkpoint failures is exceeded: fail the job"


class CheckpointFailuresExceededError(FluvialError):
    """The job failed because too many consecutive checkpoints failed."""


class CheckpointFailureManager:
    def __init__(self, tolerable_failures: int) -> None:
        if isinstance(tolerable_failures, bool) or not isinstance(tolerable_failures, int) or tolerable_failures < 0:
            raise ValueError(
                f"tolerable checkpoint failures must be an integer >= 0, got {tolerable_failures!r} "
                "(set_tolerable_checkpoint_failure_number)"
            )
        self.tolerable_failures = tolerable_failures
        self._consecutive = 0
        self._counted_ids: set[int] = set()
        self._last_success = -1
        self.job_failure: CheckpointFailuresExceededError | None = None

    @property
    def consecutive_failures(self) -> int:
        return self._consecutive

    def handle_success(self, checkpoint_id: int) -> None:
        if checkpoint_id > self._last_success:
            self._last_success = checkpoint_id
            self._reset()

    def handle_failure(
        self,
        reason: CheckpointFailureReason,
        checkpoint_id: int | None = None,
        *,
        cause: BaseException | None = None,
        from_task: bool = False,
        is_savepoint: bool = False,
        synchronous_savepoint: bool = False,
    ) -> FailureVerdict:
        """Judge one failure. `checkpoint_id` is None when the failure happened before an id was assigned;
        `from_task` when a task reported it (a decline, an asynchronous error) rather than the coordinator."""
        task_level = from_task and not reason.pre_flight
        if is_savepoint and not task_level:
            return FailureVerdict.IGNORED
        if is_savepoint and synchronous_savepoint:
            return self._fail(reason, checkpoint_id, cause, "a stop-with-savepoint cannot complete")
        if checkpoint_id is not None and checkpoint_id <= self._last_success:
            return FailureVerdict.IGNORED
        if self.tolerable_failures == UNLIMITED_TOLERABLE_FAILURES or not reason.counts:
            return FailureVerdict.IGNORED
        if checkpoint_id is not None:
            if checkpoint_id in self._counted_ids:
                return FailureVerdict.IGNORED
            self._counted_ids.add(checkpoint_id)
        self._consecutive += 1
        if self._consecutive > self.tolerable_failures:
            count = self._consecutive
            self._reset()
            return self._fail(
                reason,
                checkpoint_id,
                cause,
                f"{count} consecutive checkpoints failed and {self.tolerable_failures} are tolerated",
            )
        return FailureVerdict.TOLERATED

    def _fail(
        self, reason: CheckpointFailureReason, checkpoint_id: int | None, cause: BaseException | None, why: str
    ) -> FailureVerdict:
        which = "a checkpoint" if checkpoint_id is None else f"checkpoint {checkpoint_id}"
        error = CheckpointFailuresExceededError(
            f"{why}; the last one, {which}, failed because {reason.message} ({reason.name}). Fix the cause "
            "(see the task logs), give checkpoints more time (set_checkpoint_timeout), or tolerate more "
            "failures (set_tolerable_checkpoint_failure_number)"
        )
        error.__cause__ = cause
        self.job_failure = error
        return FailureVerdict.FAIL_JOB

    def _reset(self) -> None:
        self._consecutive = 0
        self._counted_ids.clear()
