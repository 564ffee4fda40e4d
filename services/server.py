"""What every test-server launcher shares: a free loopback port, waiting until the server accepts, and stopping
it by the PID it was started with (never by name: other servers of the same kind may run beside it)."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"


class ServerStartError(RuntimeError):
    """A server did not come up; the message names it and ends with the tail of its log."""


def server_binary(name: str) -> str | None:
    """A server's executable: on PATH, else in the system directories Debian installs servers to (/usr/sbin is not
    on a non-root user's PATH)."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin:/usr/bin")


def free_port(host: str = LOOPBACK) -> int:
    """A port nothing listens on right now (the kernel's pick for port 0)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


@contextmanager
def refusing_port(host: str = LOOPBACK) -> Iterator[int]:
    """A port on `host` that refuses connections and that nothing else can take until the block ends.

    For tests of "nobody answers there". A port from `free_port` races with every other test on the machine:
    with the suite on two workers, another test's server was given the same port a moment later and the
    "refused" connection reached it. A socket bound but never listening holds the port while the kernel answers
    each connection attempt with a reset, which is exactly "connection refused"."""
    with socket.socket() as holder:
        holder.bind((host, 0))
        yield holder.getsockname()[1]


def port_accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


@dataclass
class RunningServer:
    """One started server process: its name for messages, where it listens, its log, and how to stop it."""

    name: str
    process: subprocess.Popen
    host: str
    port: int
    log_path: Path
    data_dir: Path
    stop_timeout: float = 10.0
    extra: dict = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def wait_until_ready(self, timeout: float = 60.0) -> RunningServer:
        """Poll until the port accepts a connection; a server that exits or misses the deadline is stopped and
        reported with the end of its log."""
        deadline = time.monotonic() + timeout
        while not port_accepts(self.host, self.port):
            if self.process.poll() is not None:
                raise ServerStartError(
                    f"{self.name} exited with {self.process.returncode} before accepting on "
                    f"{self.address}; its log ({self.log_path}) ends:\n{log_tail(self.log_path)}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(
                    f"{self.name} did not accept on {self.address} within {timeout:.0f} s; its "
                    f"log ({self.log_path}) ends:\n{log_tail(self.log_path)}"
                )
            time.sleep(0.05)
        logger.info("%s ready on %s (pid %d)", self.name, self.address, self.pid)
        return self

    def stop(self) -> None:
        """SIGTERM the process (its group, when it leads one), then SIGKILL after `stop_timeout` seconds."""
        if self.process.poll() is not None:
            return
        _signal(self.process, signal.SIGTERM)
        try:
            self.process.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            _signal(self.process, signal.SIGKILL)
            self.process.wait(5)
        logger.info("%s stopped (pid %d)", self.name, self.pid)


def _signal(process: subprocess.Popen, sig: int) -> None:
    try:
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
    except ProcessLookupError:
        pass


def start_process(
    name: str,
    argv: list[str],
    *,
    data_dir: Path,
    port: int,
    host: str = LOOPBACK,
    env: dict[str, str] | None = None,
    user: str | None = None,
) -> RunningServer:
    """Start `argv` in a process group of its own with stdout and stderr in `data_dir/NAME.log`; the caller then
    calls `wait_until_ready`. `user` runs it as another user (PostgreSQL refuses to run as root)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir / f"{name}.log"
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child; closed below once it holds its own copy
    try:
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            start_new_session=True,
            user=user,
        )
    finally:
        log.close()
    return RunningServer(name, process, host, port, log_path, data_dir)


def restart(server: RunningServer, timeout: float = 30.0) -> RunningServer:
    """Stop `server` and start the same command again on the same port with the same data directory (what it
    persisted survives): the fault tests' "server restarted mid-job"."""
    server.stop()
    restarted = start_process(server.name, list(server.process.args), data_dir=server.data_dir, port=server.port)
    restarted.extra.update(server.extra)
    return restarted.wait_until_ready(timeout)


def serve_in_temporary_directory(prefix: str, start, usual_port: int):  # type: ignore[no-untyped-def]
    """For `make services`: start `start(directory, port)` in a new temporary directory, on `usual_port` when it is
    free (the examples' default) else on a free one; returns the server and how to stop it and remove the
    directory."""
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix=prefix))
    server = start(directory, free_port() if port_accepts(LOOPBACK, usual_port) else usual_port)

    def stop() -> None:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)

    return server, stop
