"""TaskExecutor: one thread that runs the mailboxes of several tasks cooperatively (DESIGN 4).

Under the GIL a thread per task buys no parallelism and costs a handoff per buffer; here every task of a
TaskManager takes bounded steps in turn on one thread, and the thread sleeps when none can progress until a
channel push, a freed channel slot or a mail wakes it, or until the next processing-time timer is due.
Processing-time callbacks run on this thread too, so they own their task's state like every other action.
Each step and callback is timed for the task's busy / back-pressured / idle time (two clock reads per step).

A task that blocks gets a thread of its own. Steps are bounded (a few buffers; a slow chain takes its input in
slices of about 20 ms, `input_processor`), so a step that took longer than BLOCKING_STEP_NS was held up in user
code — a sleep, a socket read, a slow database call — or, once, by a machine too busy to run this thread. Two
such steps in a row, or one longer than BLOCKED_STEP_NS, and the task leaves this thread for a TaskExecutor of
its own (its wake-ups, mails and timers move with it), as every Flink task has, and blocks only itself from
then on; CPU-bound chains never take such steps, so they keep sharing one thread at cooperative speed.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from fluvial.common.time import current_millis
from fluvial.runtime.input_processor import StepResult

logger = logging.getLogger(__name__)

IDLE_WAIT_SECONDS = 0.005
EMPTY_WAIT_SECONDS = 0.1
BLOCKING_STEP_NS = 200_000_000
BLOCKED_STEP_NS = 800_000_000


class TaskExecutor:
    """`clock`: the wall clock (ms) timers are due against; a test may pass a ManualClock."""

    def __init__(self, name: str, clock: Callable[[], int] = current_millis, solo: bool = False) -> None:
        """`solo`: the thread of one task that blocked (module docstring); it ends when that task ends."""
        self.name = name
        self._solo = solo
        self.detached: list[TaskExecutor] = []  # the threads given to tasks that blocked
        self.clock = clock
        self._tasks: list[Any] = []
        self._incoming: list[Any] = []
        self._moved_in: list[Any] = []
        self._slow: dict[Any, int] = {}  # tasks whose last step(s) blocked: how many in a row
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
        for solo in list(self.detached):
            solo.shutdown(timeout)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _blocked_step(self, task: Any, elapsed_ns: int) -> bool:
        """Whether `task`, whose step just took `elapsed_ns`, should get a thread of its own."""
        if self._solo or len(self._tasks) < 2:
            return False
        strikes = self._slow[task] = self._slow.get(task, 0) + 1
        if strikes >= 2 or elapsed_ns > BLOCKED_STEP_NS:
            del self._slow[task]
            return True
        return False

    def _detach(self, task: Any) -> None:
        """Move `task`, whose step blocked, to a thread of its own, with its pending timers. On this thread,
        between steps: the task runs nowhere while it moves."""
        solo = TaskExecutor(f"{self.name}-{task.name}", self.clock, solo=True)
        with self._lock:
            mine = [timer for timer in self._timers if timer[2] is task]
            if mine:
                self._timers = [timer for timer in self._timers if timer[2] is not task]
                heapq.heapify(self._timers)
        for timestamp, _, _, callback, label in mine:
            solo.schedule(timestamp, task, callback, label)
        self.detached = [executor for executor in self.detached if executor._thread.is_alive()] + [solo]
        task.move_to(solo)
        solo._adopt(task)
        logger.info(
            "%s blocked its thread for more than %d ms in user code: it runs on a thread of its own now, "
            "so the other tasks of %s go on",
            task.name,
            BLOCKING_STEP_NS // 1_000_000,
            self.name,
        )

    def _adopt(self, task: Any) -> None:
        """A running task moved here from another executor (already open)."""
        with self._lock:
            self._moved_in.append(task)
        self.wake()

    @property
    def thread(self) -> threading.Thread:
        """The thread that runs this executor's tasks: where a task that does not return from user code is stuck."""
        return self._thread

    @property
    def task_count(self) -> int:
        return len(self._tasks) + len(self._incoming)

    def _admit(self) -> None:
        with self._lock:
            fresh, self._incoming = self._incoming, []
            moved, self._moved_in = self._moved_in, []
        self._tasks.extend(moved)
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
            if self._incoming or self._moved_in:
                self._admit()
            until_timer = self._fire_due_timers() if self._timers else None
            progressed = False
            finished = None
            blocking = None
            slow = self._slow
            for task in self._tasks:
                start = clock()
                result = task.step()
                end = clock()
                task.metrics.time.after_step(result, start, end)
                if result is StepResult.PROGRESS:
                    progressed = True
                    if end - start > BLOCKING_STEP_NS:
                        if self._blocked_step(task, end - start):
                            blocking = blocking or []
                            blocking.append(task)
                    elif slow and task in slow:
                        del slow[task]
                elif result is StepResult.END_OF_INPUT and task.state.is_terminal:
                    finished = finished or []
                    finished.append(task)
            if finished:
                for task in finished:
                    self._tasks.remove(task)
                    self._slow.pop(task, None)
                progressed = True
                if self._solo and not self._tasks and not self._moved_in:
                    return  # its one task ended: so does its thread
            if blocking:
                for task in blocking:
                    if task in self._tasks and not task.state.is_terminal:
                        self._tasks.remove(task)
                        self._detach(task)
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
        # the task's executor now: a task that blocked has moved to a thread of its own
        executor = getattr(self._task, "executor", None) or self._executor
        executor.schedule(timestamp, self._task, callback, self._label)
