"""Processes of this machine by PID: running or not, when they started, ended by force. Linux reads /proc; where
there is none, a process that exists counts as running and its start time as unknown (-1)."""

from __future__ import annotations

import os
import signal
import sys


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
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def python_command(*arguments: str) -> list[str]:
    """The command line of a Python process fluvial starts: this interpreter with `-P`, so the working directory
    is not put first on its sys.path. Without it, `python -m` run from the folder holding a clone of fluvial
    imports the clone's `fluvial/` (a namespace package there) instead of the installed one."""
    return [sys.executable, "-P", *arguments]
