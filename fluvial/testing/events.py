"""EventLog: what a job's functions did, as the test sees it, whichever process they ran in.

A module-level list filled by a sink, or a counter kept on a class, sees only the function copies that ran in
the test's own process. In process mode (the default above parallelism 1) every subtask runs in a TaskManager
process with its own copy of the module, so such a list stays empty and a test built on it fails — or, worse,
passes for the wrong reason. An EventLog is a file under a directory the test owns: functions append one line
per event, from any process, and the test reads the lines back.

    log = EventLog(tmp_path / "events")

    class Opened(MapFunction):
        def __init__(self, log): self.log = log
        def open(self, ctx): self.log.record("open", ctx.get_index_of_this_subtask())

    ...
    assert sorted(log.values("open")) == [0, 1]

Contract: `record` is safe from any thread of any process on this machine (each event is one `write` to a file
opened with O_APPEND, which the kernel never interleaves with another appender's); a reader sees whole events
only (a line still being written is not read); values keep their Python types (pickled). An EventLog is
picklable data — a path — so it travels with the function that holds it.
"""

from __future__ import annotations

import base64
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class EventLog:
    """A log of named events that processes of a job append to and a test reads (module docstring)."""

    path: str

    def __init__(self, path: str | os.PathLike) -> None:
        object.__setattr__(self, "path", os.fspath(path))

    def record(self, name: str, value: Any = None) -> None:
        """Append the event `name` with `value` (anything picklable)."""
        self.record_all(name, [value])

    def record_all(self, name: str, values: list) -> None:
        """Append one `name` event per value, in one write (a sink's whole batch at once)."""
        if not values:
            return
        data = b"".join(base64.b64encode(pickle.dumps((name, value), protocol=5)) + b"\n" for value in values)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def events(self) -> list[tuple[str, Any]]:
        """Every whole event recorded so far, (name, value), in the order they were appended."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        return [pickle.loads(base64.b64decode(line)) for line in complete.splitlines()]

    def values(self, name: str) -> list[Any]:
        """The values of the `name` events, in the order they were appended."""
        return [value for event, value in self.events() if event == name]

    def count(self, name: str) -> int:
        """How many events called `name` were recorded.

        Args:
            name: The event's name.

        Returns:
            The count.
        """
        return len(self.values(name))


def first_time(marker: str | Path) -> bool:
    """True for the first call with `marker` on this machine, across processes and job attempts (it creates the
    marker file, atomically), False ever after: how a user function fails once, on a job's first attempt only.

        def eval(self, id):
            if id == 500 and first_time(self.marker):
                raise RuntimeError("injected failure")
    """
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True
