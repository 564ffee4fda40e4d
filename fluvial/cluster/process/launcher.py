"""The client's end of the zygote (`zygote.py`): start it once per process, ask it for TaskManager processes,
hear how they end."""

from __future__ import annotations

import logging
import os
import pickle
import queue
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import IO, cast

from fluvial.cluster.process.zygote import EXIT, EXITED, LENGTH, PARENT_VARIABLE, PID, STARTED
from fluvial.common.processes import python_command

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
        self._process = self._start_zygote()
        # both are pipes (subprocess.PIPE in _start_zygote), never None
        self._stdin = cast(IO[bytes], self._process.stdin)
        self._stdout = cast(IO[bytes], self._process.stdout)
        self._lock = threading.Lock()
        self._started = threading.Condition()
        self._pids: list[int] = []
        self._listeners: dict[int, ExitListener] = {}
        self._exits: dict[int, str] = {}
        # (listener, pid, how), heard off the reader
        self._notices: queue.SimpleQueue[tuple[ExitListener, int, str]] = queue.SimpleQueue()
        self.alive = True
        threading.Thread(target=self._read, name="fluvial-zygote-reader", daemon=True).start()
        threading.Thread(target=self._notify, name="fluvial-zygote-exits", daemon=True).start()

    def _start_zygote(self) -> subprocess.Popen[bytes]:
        """The zygote, started from a thread of its own that lives as long as the zygote may: the zygote dies
        with the thread that started it (PR_SET_PDEATHSIG counts threads), and the caller's thread may be short."""
        started: list[subprocess.Popen[bytes] | BaseException] = []
        ready = threading.Event()
        self._parent_released = threading.Event()

        def parent() -> None:
            try:
                started.append(
                    subprocess.Popen(
                        python_command("-m", "fluvial.cluster.process.zygote"),
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        close_fds=True,
                        start_new_session=False,
                        env={**os.environ, PARENT_VARIABLE: str(os.getpid())},
                    )
                )
            except BaseException as error:  # noqa: BLE001 - raised on the caller's thread below
                started.append(error)
            ready.set()
            self._parent_released.wait()  # until the zygote is closed (daemon: or this process ends)

        threading.Thread(target=parent, name="fluvial-zygote-parent", daemon=True).start()
        ready.wait()
        if isinstance(started[0], BaseException):
            self._parent_released.set()
            raise started[0]
        return started[0]

    def start(self, config: object, on_exit: ExitListener, timeout: float = 30.0) -> int:
        payload = pickle.dumps(config, protocol=5)
        with self._lock:
            with self._started:
                count = len(self._pids)
            self._stdin.write(LENGTH.pack(len(payload)) + payload)
            self._stdin.flush()
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
        stream = self._stdout
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
            self._parent_released.set()  # the zygote is gone (its stdout closed): its parent thread may end

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
            self._stdin.close()
        except OSError:
            pass
        if timeout > 0:
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                logger.warning("the TaskManager launcher (pid %d) did not exit; killing it", self._process.pid)
                self._process.kill()
                self._process.wait()
            self._parent_released.set()


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
