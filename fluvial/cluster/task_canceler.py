"""Cancelling a task that may not listen (Flink's TaskCanceler, TaskInterrupter and TaskCancelerWatchDog).

A cancel is a mail that the task's own thread runs at its next step, so a task whose thread is stuck in a user
function never reads it. The TaskManager cancels through a TaskCanceler, which goes on, numbered:
1. `cancel(task)`: the cancel mail is posted and the task is interrupted at once (`Task.interrupt`: Python code
   looping in a user function gets TaskInterrupted; a blocking call hears of it only when it returns).
2. Every `task.cancellation.interval` ms until the task has ended, a WARNING says where its thread is stuck
   (its Python stack, as Flink's TaskInterrupter logs the method), and it is interrupted again.
3. `task.cancellation.timeout` ms after the cancel (0: never), a task that still has not ended is given up:
   its TaskManager's CancellationTimeout handler runs. In thread mode the handler marks the task CANCELED,
   logs an ERROR and moves later tasks to a new thread, abandoning the stuck one; a TaskManager in its own
   process plugs in a handler that ends its process instead (Flink's fatal error), which frees everything.
The canceler's thread only ever waits and interrupts: it never runs task code.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from fluvial.common.executors import SingleThreadExecutor
from fluvial.common.thread_stacks import stack_of

logger = logging.getLogger(__name__)


class CancellationTimeout(Protocol):
    """What a TaskManager does with a task that did not cancel within `task.cancellation.timeout`."""

    def cancellation_timed_out(self, task: Any, timeout_ms: int) -> None: ...


class TaskCanceler:
    def __init__(self, name: str, on_timeout: CancellationTimeout) -> None:
        self._on_timeout = on_timeout
        self._thread: SingleThreadExecutor | None = None
        self._name = name

    def _timer(self) -> SingleThreadExecutor:
        if self._thread is None:  # started on first use: most TaskManagers never cancel a stuck task
            self._thread = SingleThreadExecutor(self._name)
        return self._thread

    def cancel(self, task: Any) -> None:
        """Step 1; steps 2 and 3 are scheduled by the task's TaskCancellationSettings."""
        task.cancel()
        task.interrupt()
        settings = task.spec.cancellation
        if settings.interval_ms > 0:
            interval = settings.interval_ms
            self._timer().schedule(interval, lambda: self._interrupt_again(task, interval, interval))
        if settings.timeout_ms > 0:
            self._timer().schedule(settings.timeout_ms, lambda: self._expire(task, settings.timeout_ms))

    def _interrupt_again(self, task: Any, interval_ms: int, waited_ms: int) -> None:
        if task.state.is_terminal:
            return
        logger.warning(
            "%s (attempt %d) did not react to its cancel in %d ms: interrupting it again. Its thread is stuck in:\n%s",
            task.name,
            task.spec.attempt,
            waited_ms,
            stack_of(task.executor.thread),
        )
        task.interrupt()
        self._timer().schedule(interval_ms, lambda: self._interrupt_again(task, interval_ms, waited_ms + interval_ms))

    def _expire(self, task: Any, timeout_ms: int) -> None:
        if not task.state.is_terminal:
            self._on_timeout.cancellation_timed_out(task, timeout_ms)

    def shutdown(self) -> None:
        if self._thread is not None:
            self._thread.shutdown()
