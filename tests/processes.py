"""Processes of this machine as /proc shows them, for tests that check what a job leaves behind (on
`fluvial.common.processes`, which reads /proc for fluvial itself)."""

from __future__ import annotations

from fluvial.common.processes import children, pid_running

alive = pid_running  # the process exists and has not exited (a zombie counts as ended)


def descendants(pid: int) -> set[int]:
    """Every living process below `pid` (children, their children, ...)."""
    found, stack = set(), [pid]
    while stack:
        for child in children(stack.pop()):
            found.add(child)
            stack.append(child)
    return found
