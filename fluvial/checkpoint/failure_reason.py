"""Why a checkpoint failed (Flink's CheckpointFailureReason): carried by declines from tasks, by aborts in the
coordinator, and judged by the CheckpointFailureManager (only reasons that `count` go against the tolerable
number: a task that was not ready, had finished or saw a newer barrier is no failure of checkpointing)."""

from __future__ import annotations

import enum


class CheckpointFailureReason(enum.Enum):
    """Why a checkpoint failed. `value`/`message`: the reason as words. `pre_flight`: it never started
    (nothing to clean up, no task involved); `counts`: it counts against the tolerable failure number
    (CheckpointFailureManager), as in Flink."""

    _value_: str
    pre_flight: bool
    counts: bool

    # pre-flight: the trigger did not happen
    COORDINATOR_SHUTDOWN = ("the checkpoint coordinator is shut down", True, False)
    TOO_MANY_CONCURRENT = ("the maximum of concurrent checkpoints is reached", True, False)
    MIN_PAUSE_NOT_ELAPSED = ("the minimum pause between checkpoints has not elapsed", True, False)
    NOT_ALL_TASKS_RUNNING = ("not all tasks are running", True, False)
    TRIGGER_FAILURE = ("triggering the checkpoint failed", True, False)
    # after the trigger
    TIMEOUT = ("the checkpoint expired before every task acknowledged it", False, True)
    DECLINED = ("a task declined the checkpoint", False, True)
    DECLINED_TASK_NOT_READY = ("a task was not ready to take a checkpoint", False, False)
    DECLINED_TASK_CLOSING = ("a task was closing", False, False)
    DECLINED_END_OF_INPUT = ("a task's input had ended", False, False)
    DECLINED_SUBSUMED = ("a task saw the barrier of a newer checkpoint first", False, False)
    ASYNC_ERROR = ("a task's asynchronous snapshot part failed", False, True)
    IO_ERROR = ("writing checkpoint data failed", False, True)
    FINALIZE_FAILURE = ("writing the checkpoint metadata failed", False, False)
    SUBSUMED = ("a newer checkpoint completed first", False, False)
    TASK_FAILURE = ("a task failed", False, False)
    JOB_FAILOVER = ("the job is failing over", False, False)

    def __new__(cls, message: str, pre_flight: bool, counts: bool) -> CheckpointFailureReason:
        reason = object.__new__(cls)
        reason._value_ = message  # `.value` reads as a sentence: "checkpoint 3 aborted: <value>"
        reason.pre_flight = pre_flight
        reason.counts = counts
        return reason

    @property
    def message(self) -> str:
        return self._value_
