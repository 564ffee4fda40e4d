"""The client's end of the zygote (`zygote.py`): start it once per process, ask it for TaskManager processes,
hear how they end."""

from __future__ import annotations

import logging
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

from fluvial.cluster.process.zygote import EXIT, EXITED, LENGTH, PID, STARTED

logger = logging.getLogger(__name__)

ExitListener = Callable[[int, str], None]


def describe_wait_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"was killed by signal {signal.Signals(number).name}"
        except ValueError:
            return f"was killed by signal {number}"
    return f"exited with code {os.WEXITSTATUS(status)}"


class Launcher:
    """One zygote; `start(config)` returns the new TaskManager process's pid."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "fluvial.cluster.process.zygote"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            close_fds=True, start_new_session=False)
        self._lock = threading.Lock()
        self._started = threading.Condition()
        self._pids: list[int] = []
        self._listeners: dict[int, ExitListener] = {}
        self._exits: dict[int, str] = {}
        self._notices: queue.SimpleQueue = queue.SimpleQueue()  # (listener, pid, how), heard off the reader
        self.alive = True
        threading.Thread(target=self._read, name="fluvial-zygote-reader", daemon=True).start()
        threading.Thread(target=self._notify, name="fluvial-zygote-exits", daemon=True).start()

    def start(self, config: object, on_exit: ExitListener, timeout: float = 30.0) -> int:
        payload = pickle.dumps(config, protocol=5)
        with self._lock:
            with self._started:
                count = len(self._pids)
            self._process.stdin.write(LENGTH.pack(len(payload)) + payload)
            self._process.stdin.flush()
            with self._started:
                if not self._started.wait_for(lambda: len(self._pids) > count or not self.alive, timeout):
                    raise RuntimeError(f"the TaskManager launcher did not start a process within {timeout:.0f} s")
                if len(self._pids) <= count:
                    raise RuntimeError("the TaskManager launcher died; see the error above")
                pid = self._pids[count]
                ended = self._exits.pop(pid, None)
                if ended is None:
                    self._listeners[pid] = on_exit
        if ended is not None:
            self._notices.put((on_exit, pid, ended))
        return pid

    def _read(self) -> None:
        stream = self._process.stdout
        try:
            while tag := stream.read(1):
                if tag == STARTED:
                    (pid,) = PID.unpack(stream.read(PID.size))
                    with self._started:
                        self._pids.append(pid)
                        self._started.notify_all()
                elif tag == EXITED:
                    pid, status = EXIT.unpack(stream.read(EXIT.size))
                    how = describe_wait_status(status)
                    with self._started:
                        listener = self._listeners.pop(pid, None)
                        if listener is None:
                            self._exits[pid] = how
                    if listener is not None:
                        self._notices.put((listener, pid, how))  # a listener may start a process: not here
        finally:
            with self._started:
                self.alive = False
                self._started.notify_all()

    def _notify(self) -> None:
        while True:
            listener, pid, how = self._notices.get()
            try:
                listener(pid, how)
            except Exception:  # noqa: BLE001 - a listener's failure must not stop the others
                logger.exception("a TaskManager exit listener failed")

    def close(self, timeout: float = 0.0) -> None:
        """End the zygote (it exits when its stdin closes); wait up to `timeout` seconds for it, then kill it."""
        try:
            self._process.stdin.close()
        except OSError:
            pass
        if timeout > 0:
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                logger.warning("the TaskManager launcher (pid %d) did not exit; killing it", self._process.pid)
                self._process.kill()
                self._process.wait()


_launcher: Launcher | None = None
_launcher_lock = threading.Lock()


def launcher() -> Launcher:
    """This process's zygote, started on first use (and again if it died)."""
    global _launcher
    with _launcher_lock:
        if _launcher is None or not _launcher.alive:
            _launcher = Launcher()
        return _launcher


def shutdown_launcher(timeout: float = 5.0) -> None:
    """End this process's zygote, if it has one, and wait for its exit: a process that is about to end (a session
    cluster's JobManager shutting down) leaves no launcher behind, not even for the moment it takes the zygote to
    notice its stdin closed. Call after every TaskManager process has ended."""
    global _launcher
    with _launcher_lock:
        current, _launcher = _launcher, None
    if current is not None:
        current.close(timeout)
