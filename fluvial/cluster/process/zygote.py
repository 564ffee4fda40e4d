"""The process TaskManager processes are forked from: started once (a fresh interpreter, `python -m`), it imports
fluvial and then does nothing but fork a TaskManager process for each request — so each starts in milliseconds
with fluvial already loaded.

Why not multiprocessing's forkserver: its children re-import the client's `__main__` script, and a PyFlink job
script runs its job at module level (no `__main__` guard), so every TaskManager would run the whole job again.
This zygote forks from a single-threaded process (it never starts a thread), which is what makes fork safe, and
its children run only `task_manager_main`.

Protocol on its stdin/stdout pipes (the client's end; a pipe, never a command line, carries the secret):
- request: a length-prefixed pickled TaskManagerProcessConfig → reply: b"P" and the child's pid (">q");
- when a child exits: b"X", its pid and wait status (">qi") — how the client learns that it was SIGKILLed.
The zygote exits when its stdin closes: the client is gone, and so are its TaskManagers (their control
connections end with the client). That needs running processes; a stopped one (SIGSTOP, a debugger) reads
nothing. So each dies with its parent however it is (PR_SET_PDEATHSIG, SIGKILL): the zygote with the client's
thread that started it (the launcher keeps one for that, `launcher.py`), a TaskManager with the zygote.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fluvial.cluster.process.protocol import TaskManagerProcessConfig

LENGTH = struct.Struct(">I")
PID = struct.Struct(">q")
EXIT = struct.Struct(">qi")
STARTED, EXITED = b"P", b"X"
PARENT_VARIABLE = "FLUVIAL_ZYGOTE_PARENT"  # the client's pid: the zygote checks it was not orphaned already
# what every TaskManager would otherwise import after its fork, in every job: keyed state (the default heap
# backend), windows and source watermarks (about a tenth of a small job's CPU in each TaskManager)
PRELOAD = (
    "fluvial.cluster.process.worker",
    "fluvial.cluster.task_manager",
    "fluvial.runtime.task",
    "fluvial.runtime.network.data_plane",
    "fluvial.runtime.chain",
    "fluvial.state.heap",
    "fluvial.runtime.operators.window",
    "fluvial.runtime.source_watermarks",
    "cloudpickle",
)


def _read_exactly(fd: int, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = os.read(fd, count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main() -> None:
    import importlib

    from fluvial.common.processes import die_with_parent

    parent = int(os.environ.pop(PARENT_VARIABLE, "0")) or os.getppid()
    die_with_parent(parent)

    for module in PRELOAD:
        importlib.import_module(module)
    requests, replies = sys.stdin.fileno(), sys.stdout.fileno()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the client, which ends us by closing stdin
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        ready, _, _ = select.select([requests, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            _report_exits(replies)
        if requests in ready:
            header = _read_exactly(requests, LENGTH.size)
            if header is None:
                return
            payload = _read_exactly(requests, LENGTH.unpack(header)[0])
            if payload is None:
                return
            zygote = os.getpid()
            pid = os.fork()
            if pid == 0:
                _child(pickle.loads(payload), zygote, requests, replies, wake_r, wake_w)
            os.write(replies, STARTED + PID.pack(pid))


def _report_exits(replies: int) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        os.write(replies, EXITED + EXIT.pack(pid, status))


def _child(config: TaskManagerProcessConfig, zygote: int, *inherited: int) -> None:
    """In the forked child: die with the zygote, drop its signal handling and pipes, then be a TaskManager."""
    from fluvial.common.processes import die_with_parent

    die_with_parent(zygote)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the client decides when a TaskManager ends
    for fd in inherited:
        os.close(fd)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)  # the zygote's pipes are its own; output goes to the client over the connection
    os.dup2(devnull, 1)
    os.close(devnull)
    from fluvial.cluster.process.worker import task_manager_main

    try:
        task_manager_main(config)
    finally:
        os._exit(1)


if __name__ == "__main__":
    main()
