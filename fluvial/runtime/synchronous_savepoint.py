"""A task's side of stop-with-savepoint (Flink's synchronous savepoint; step 6 of `runtime.task`): which savepoint
the task is suspended for, the processing-time callbacks (timers, operator mails) that came due meanwhile, and
the checkpoints the JobMaster said were aborted — a barrier of a stop already aborted reaches a task late and
must suspend nothing. Only the task's own thread touches it."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

Held = tuple[Callable[[int], None], int, str]  # a callback, the time it came due, its operator's label


class SynchronousSavepoint:
    __slots__ = ("suspended_for", "_held", "_aborted")

    def __init__(self) -> None:
        self.suspended_for: int | None = None  # the stop-with-savepoint whose snapshot the task took
        self._held: list[Held] = []
        self._aborted: deque[int] = deque(maxlen=16)  # the latest checkpoints the JobMaster said were aborted

    def suspend(self, checkpoint_id: int) -> bool:
        """The task took its snapshot for stop-with-savepoint `checkpoint_id`: suspended, unless that savepoint
        was aborted already."""
        if checkpoint_id in self._aborted:
            return False
        self.suspended_for = checkpoint_id
        return True

    def hold(self, callback: Callable[[int], None], now: int, label: str) -> None:
        self._held.append((callback, now, label))

    def completed(self, checkpoint_id: int) -> bool:
        """Whether the savepoint the task is suspended for completed (the task ends; what it held never runs)."""
        if checkpoint_id != self.suspended_for:
            return False
        self.suspended_for = None
        self._held.clear()
        return True

    def aborted(self, checkpoint_id: int) -> list[Held] | None:
        """Checkpoint `checkpoint_id` was aborted. If the task was suspended for it, it resumes: the callbacks
        held meanwhile, in the order they came due, for the task to run first; else None."""
        self._aborted.append(checkpoint_id)
        if checkpoint_id != self.suspended_for:
            return None
        self.suspended_for = None
        held, self._held = self._held, []
        return held
