"""Executors that own a thread: how a component with state of its own (the JobMaster, the checkpoint
coordinator) receives work from other threads without a single lock (Flink's main-thread executor).

Every call from outside — a TaskManager's report, a client's cancel, a timer firing — becomes a mail run in
order on the component's one thread. Components take their executors as parameters typed by the Protocols
here, so a unit test hands them `fluvial.testing.ManualScheduledExecutor` and decides when each mail runs and
when time passes.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger(__name__)

Mail = Callable[[], None]


class Cancellable(Protocol):
    def cancel(self) -> None:
        """Never run the scheduled mail (a no-op once it ran)."""
        ...


class Executor(Protocol):
    def execute(self, mail: Mail) -> bool:
        """Run `mail` later, on the executor's own thread, after every mail handed over before it. False when
        the executor has shut down and the mail will never run."""
        ...


class ScheduledExecutor(Executor, Protocol):
    def schedule(self, delay_ms: int, mail: Mail) -> Cancellable:
        """Run `mail` on the executor's thread once `delay_ms` milliseconds have passed."""
        ...


class _Scheduled:
    __slots__ = ("due", "mail", "cancelled")

    def __init__(self, due: float, mail: Mail) -> None:
        self.due = due
        self.mail = mail
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class SingleThreadExecutor:
    """One thread that runs mails in order and scheduled mails when due; the owner of a component's state.

    A mail that raises is handed to `on_error` (on this thread), never lost silently: a component that can
    fail must not hang its waiters because its thread died. After `shutdown()` mails are refused (`execute`
    answers False), so a caller can answer its own waiters."""

    def __init__(self, name: str, on_error: Callable[[BaseException], None] | None = None) -> None:
        self.name = name
        self._on_error = on_error
        self._mails: deque[Mail] = deque()
        self._scheduled: list[tuple[float, int, _Scheduled]] = []
        self._sequence = itertools.count()
        self._wakeup = threading.Condition(threading.Lock())
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def execute(self, mail: Mail) -> bool:
        with self._wakeup:
            if self._stopped:
                return False
            self._mails.append(mail)
            self._wakeup.notify()
            return True

    def schedule(self, delay_ms: int, mail: Mail) -> Cancellable:
        entry = _Scheduled(time.monotonic() + max(0, delay_ms) / 1000, mail)
        with self._wakeup:
            if not self._stopped:
                heapq.heappush(self._scheduled, (entry.due, next(self._sequence), entry))
                self._wakeup.notify()
        return entry

    def is_main_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def shutdown(self, wait_seconds: float = 0.0) -> None:
        """Accept no more mails; the mails already handed over still run (a mail accepted is never lost: it may
        complete a future someone waits on), then the thread ends. Scheduled mails not yet due never run."""
        with self._wakeup:
            self._stopped = True
            self._scheduled.clear()
            self._wakeup.notify()
        if wait_seconds > 0 and not self.is_main_thread():
            self._thread.join(wait_seconds)

    def _next_mail(self) -> Mail | None:
        """Wait for the next mail or due scheduled mail; None once shut down."""
        with self._wakeup:
            while True:
                if self._mails:
                    return self._mails.popleft()
                if self._stopped:
                    return None
                now = time.monotonic()
                while self._scheduled and self._scheduled[0][2].cancelled:
                    heapq.heappop(self._scheduled)
                if self._scheduled and self._scheduled[0][0] <= now:
                    return heapq.heappop(self._scheduled)[2].mail
                timeout = self._scheduled[0][0] - now if self._scheduled else None
                self._wakeup.wait(timeout)

    def _run(self) -> None:
        while True:
            mail = self._next_mail()
            if mail is None:
                return
            try:
                mail()
            except BaseException as error:  # noqa: BLE001 - handed to the owner, the thread lives on
                if self._on_error is None:
                    logger.exception("a mail on %s raised", self.name)
                    continue
                try:
                    self._on_error(error)
                except BaseException:  # noqa: BLE001
                    logger.exception("the error handler of %s raised", self.name)
