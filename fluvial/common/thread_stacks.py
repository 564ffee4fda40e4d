"""Where threads are, for the log. Flink logs the method a task that ignores its cancel is stuck in (its
TaskInterrupter and CancellationTimeout); an operator needs the same to tell a slow database call from a
deadlock, and a TaskManager process that will not exit deserves the same look before it is killed.

- `stack_of(thread)`: one thread's Python stack, as `traceback` prints it (innermost call last), read from
  another thread of the same process.
- `dump_stacks_on_signal()`: from then on, STACKS_SIGNAL makes the process write every thread's stack to its
  standard error. The interpreter writes them itself (`faulthandler`), at once, even while a stuck thread holds
  the GIL, when a Python signal handler would wait for it.
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
import traceback

STACKS_SIGNAL = signal.SIGUSR1


def stack_of(thread: threading.Thread | None) -> str:
    """`thread`'s current Python stack, one `File ..., line ..., in ...` entry per call, innermost last."""
    frame = sys._current_frames().get(thread.ident) if thread is not None and thread.ident is not None else None
    if frame is None:
        return "    (its thread has ended)\n"
    return "".join(traceback.format_stack(frame))


def dump_stacks_on_signal() -> bool:
    """STACKS_SIGNAL writes every thread's stack to this process's standard error file descriptor (not
    `sys.stderr`: a TaskManager process forwards that over its control connection, which may be gone by then).
    False when the process has no standard error to write to."""
    stderr = sys.__stderr__
    if stderr is None:
        return False
    try:
        faulthandler.register(STACKS_SIGNAL, file=stderr, all_threads=True)
    except (ValueError, OSError):  # a stderr without a file descriptor
        return False
    return True
