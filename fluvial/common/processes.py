"""Processes of this machine by PID: running or not, when they started, ended by force. Linux reads /proc; where
there is none, a process that exists counts as running and its start time as unknown (-1)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable


def pid_running(pid: int) -> bool:
    """The process exists and has not exited (a zombie, exited but not yet reaped, counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat_fields(pid)
    return fields is None or fields[0] != "Z"


def process_start_ticks(pid: int) -> int:
    """When the process started, in clock ticks since boot (field 22 of /proc/PID/stat); -1 if unknown. With the
    PID it names one process: a PID the system gave to another program later has another start time."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None else -1


def environment_value(pid: int, name: str) -> str | None:
    """The value `name` had in the environment process `pid` was started with (/proc/PID/environ: readable
    for this user's own processes only), or None: not set, not this user's, or no /proc."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            entries = environ.read().split(b"\0")
    except OSError:
        return None
    prefix = name.encode() + b"="
    for entry in entries:
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


def processes_with(name: str, value: str) -> list[int]:
    """The living processes of this user that were started with `name=value` in their environment."""
    return sorted(
        pid for pid in _pids() if pid != os.getpid() and environment_value(pid, name) == value and pid_running(pid)
    )


def _pids() -> list[int]:
    """Every process /proc shows (empty where there is none)."""
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def signal_if(pid: int, number: int, still_it: Callable[[], bool]) -> bool:
    """Send signal `number` to `pid` only if `still_it()` holds; whether it was sent. Where Linux has pidfds the
    process is pinned before the check, so the PID cannot pass to another program between check and signal."""
    if pid <= 0:
        return False
    try:
        pinned = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (AttributeError, OSError):
        pinned = None
    try:
        if not still_it():
            return False
        if pinned is not None:
            signal.pidfd_send_signal(pinned, number)
        else:
            os.kill(pid, number)
    except ProcessLookupError:
        return False
    finally:
        if pinned is not None:
            os.close(pinned)
    return True


_PR_SET_PDEATHSIG = 1


def die_with_parent(expected_parent: int) -> bool:
    """Have the kernel SIGKILL this process when the thread that started it ends (PR_SET_PDEATHSIG): SIGKILL,
    because it ends even a stopped process (SIGSTOP, a debugger). False where Linux's prctl is missing. Exits at
    once if the parent already died (this process was re-parented before the request took effect)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != expected_parent:
        os._exit(1)
    return True


def kill(pid: int) -> bool:
    """SIGKILL the process, if it exists; whether a signal was sent."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (the state first), or None without /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode(errors="replace")
    except OSError:
        return None
    return text.rsplit(") ", 1)[1].split()


def children(pid: int) -> list[int]:
    """The living child processes of `pid` (from /proc; empty where there is none)."""
    found = []
    for candidate in _pids():
        fields = _stat_fields(candidate)
        if fields is not None and int(fields[1]) == pid and fields[0] != "Z":
            found.append(candidate)
    return found


def python_command(*arguments: str) -> list[str]:
    """The command line of a Python process fluvial starts: this interpreter with `-P`, so the working directory
    is not put first on its sys.path. Without it, `python -m` run from the folder holding a clone of fluvial
    imports the clone's `fluvial/` (a namespace package there) instead of the installed one."""
    return [sys.executable, "-P", *arguments]
