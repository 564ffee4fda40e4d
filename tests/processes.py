"""Processes of this machine as /proc shows them, for tests that check what a job leaves behind (on
`fluvial.common.processes`, which reads /proc for fluvial itself); and `Parked`, a process stuck in user code
that writes its threads' stacks when asked, as a TaskManager process does."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

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


PARKED = textwrap.dedent(
    """
    import time
    from fluvial.common.thread_stacks import dump_stacks_on_signal

    def parked_in_user_code():
        print("ready", flush=True)
        time.sleep(60)

    assert dump_stacks_on_signal()
    parked_in_user_code()
    """
)


class Parked:
    """A Python process that asked for its threads' stacks on STACKS_SIGNAL (`thread_stacks`), parked in
    `parked_in_user_code`; its standard error is read as it comes. A context manager: killed on exit."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", PARKED], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)

    @property
    def pid(self) -> int:
        return self.process.pid

    def written(self) -> str:
        return "".join(self.stderr)

    def __enter__(self) -> Parked:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self._reader.join(10)
