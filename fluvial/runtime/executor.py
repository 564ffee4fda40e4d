"""TaskExecutor: one thread that runs the mailboxes of several tasks cooperatively (DESIGN 4).

Under the GIL a thread per task buys no parallelism and costs a handoff per buffer; here every task of a
TaskManager takes bounded steps in turn on one thread, and the thread sleeps when none can progress until a
channel push, a freed channel slot or a mail wakes it (or a short timeout, for sources polling idle input).
"""

from __future__ import annotations

import threading
from typing import Any

from fluvial.runtime.input_processor import StepResult

IDLE_WAIT_SECONDS = 0.005


class TaskExecutor:
    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: list[Any] = []
        self._incoming: list[Any] = []
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

    def _run(self) -> None:
        event = self._event
        while not self._stopped:
            event.clear()
            if self._incoming:
                self._admit()
            progressed = False
            finished = None
            for task in self._tasks:
                result = task.step()
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
                event.wait(IDLE_WAIT_SECONDS if self._tasks else 0.1)
