"""Interrupting a task's thread from another thread: what Flink's TaskInterrupter does with Thread.interrupt().

Python has no Thread.interrupt(). It can raise an exception asynchronously into another thread
(PyThreadState_SetAsyncExc): the exception arrives at that thread's next bytecode, so it ends a busy loop in
Python code; a blocking call in C (a sleep, a lock, a socket read) does not see it until it returns. Raised at a
bad moment it would land in the TaskExecutor's loop and kill the thread that every task of the TaskManager
shares. So it is only ever raised while the task's thread is inside an InterruptibleSection, which runs the
task's user code, and a section always delivers a pending interruption before it returns: it surfaces inside
the caller's `try`, never later.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class TaskInterrupted(BaseException):
    """Raised into a task's thread by a cancel that the task did not hear. A BaseException, as
    KeyboardInterrupt is, so that `except Exception` in user code does not swallow it."""


def _deliver_pending() -> None:
    """A Python-level call: an asynchronous exception already raised into this thread is delivered here, at the
    function's entry, at the latest."""


class InterruptibleSection:
    """Where a task runs user code. `run` is called on the task's thread; `interrupt` on any other."""

    __slots__ = ("_lock", "_thread")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: int | None = None

    def run(self, call: Callable[[*Ts], T], *args: *Ts) -> T:
        with self._lock:
            self._thread = threading.get_ident()
        try:
            return call(*args)
        finally:
            with self._lock:
                self._thread = None
            _deliver_pending()

    def interrupt(self) -> bool:
        """Raise TaskInterrupted into the thread running the section now; False when none is."""
        with self._lock:
            thread = self._thread
            if thread is None:
                return False
            changed: int = ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(thread), ctypes.py_object(TaskInterrupted)
            )
            if changed > 1:  # never expected: undo rather than interrupt threads that are not ours
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), None)
                return False
            return changed == 1
