"""TaskExecutor: one thread that runs the mailboxes of several tasks cooperatively (DESIGN 4).

Under the GIL a thread per task buys no parallelism and costs a handoff per buffer; here every task of a
TaskManager takes bounded steps in turn on one thread, and the thread sleeps when none can progress until a
channel push, a freed channel slot or a mail wakes it, or until the next processing-time timer is due.
Processing-time callbacks run on this thread too, so they own their task's state like every other action.
Each step and callback is timed for the task's busy / back-pressured / idle time (two clock reads per step).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from fluvial.common.time import current_millis
from fluvial.runtime.input_processor import StepResult

IDLE_WAIT_SECONDS = 0.005
EMPTY_WAIT_SECONDS = 0.1


class TaskExecutor:
    """`clock`: the wall clock (ms) timers are due against; a test may pass a ManualClock."""

    def __init__(self, name: str, clock: Callable[[], int] = current_millis) -> None:
        self.name = name
        self.clock = clock
        self._tasks: list[Any] = []
        self._incoming: list[Any] = []
        self._timers: list[tuple[int, int, Any, Callable[[int], None], str]] = []
        self._timer_seq = itertools.count()
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        event = self._event
        if not event.is_set():
            event.set()

    def submit(self, task: Any) -> None:
        """Thread-safe: the task is opened on the executor thread, which then owns it."""
        with self._lock:
            self._incoming.append(task)
        self.wake()

    def schedule(self, timestamp: int, task: Any, callback: Callable[[int], None], label: str = "") -> None:
        """Run `callback(now)` on this thread once the clock reaches `timestamp` (ms), if the task still runs
        then; a failure is labelled with `label` (the operator that registered it). Thread-safe."""
        with self._lock:
            heapq.heappush(self._timers, (timestamp, next(self._timer_seq), task, callback, label))
        self.wake()

    def shutdown(self, timeout: float = 5.0) -> None:
        self._stopped = True
        self.wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def task_count(self) -> int:
        return len(self._tasks) + len(self._incoming)

    def _admit(self) -> None:
        with self._lock:
            fresh, self._incoming = self._incoming, []
        for task in fresh:
            task.open()
            self._tasks.append(task)

    def _fire_due_timers(self) -> float | None:
        """Fire due timers; return seconds until the next one (None: no timers)."""
        timers = self._timers
        now = self.clock()
        while timers and timers[0][0] <= now:
            with self._lock:
                _, _, task, callback, label = heapq.heappop(timers)
            start = time.perf_counter_ns()
            task.run_timer(callback, now, label)
            task.metrics.time.add_busy(start, time.perf_counter_ns())
        return (timers[0][0] - now) / 1000 if timers else None

    def _run(self) -> None:
        event = self._event
        clock = time.perf_counter_ns
        while not self._stopped:
            event.clear()
            if self._incoming:
                self._admit()
            until_timer = self._fire_due_timers() if self._timers else None
            progressed = False
            finished = None
            for task in self._tasks:
                start = clock()
                result = task.step()
                task.metrics.time.after_step(result, start, clock())
                if result is StepResult.PROGRESS:
                    progressed = True
                elif result is StepResult.END_OF_INPUT and task.state.is_terminal:
                    finished = finished or []
                    finished.append(task)
            if finished:
                for task in finished:
                    self._tasks.remove(task)
                progressed = True
            if not progressed:
                wait = IDLE_WAIT_SECONDS if self._tasks else EMPTY_WAIT_SECONDS
                if until_timer is not None:
                    wait = max(0.0, min(wait, until_timer))
                event.wait(wait)


class TaskProcessingTimeService:
    """One operator's view of its task executor's clock and timers (the ProcessingTimeService of `timers.py`);
    `label` names the operator in the error if a callback raises."""

    __slots__ = ("_executor", "_task", "_label")

    def __init__(self, executor: TaskExecutor, task: Any, label: str = "") -> None:
        self._executor = executor
        self._task = task
        self._label = label

    def current_processing_time(self) -> int:
        return self._executor.clock()

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> None:
        self._executor.schedule(timestamp, self._task, callback, self._label)
