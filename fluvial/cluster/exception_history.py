"""A job's exception history (Flink's): each failure that restarted or failed the job — its root cause, with
the task and operator it came from — and the failures that came with it, newest last.

Kept by the scheduler on the JobMaster's thread as plain strings and numbers, so that it outlives the job in
its archived details and can be sent to another process as it is.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field

from fluvial.common.time import current_millis

HISTORY_SIZE = 16  # Flink's web.exception-history-size default


@dataclass(slots=True)
class ExceptionEntry:
    exception_name: str
    message: str
    stacktrace: str
    timestamp: int
    task_name: str | None = None  # None: a failure of the job itself (too many failed checkpoints, ...)
    operator_name: str | None = None
    concurrent: list[ExceptionEntry] = field(default_factory=list)


def entry_of(
    error: BaseException, task_name: str | None = None, operator_name: str | None = None, stacktrace: str | None = None
) -> ExceptionEntry:
    text = stacktrace if stacktrace is not None else "".join(traceback.format_exception(error))
    return ExceptionEntry(type(error).__name__, str(error), text, current_millis(), task_name, operator_name)


class ExceptionHistory:
    def __init__(self, size: int = HISTORY_SIZE) -> None:
        self.size = size
        self.entries: list[ExceptionEntry] = []
        self._last_root_error: int | None = None

    def add_root(self, error: BaseException, entry: ExceptionEntry) -> None:
        """A failure that restarts or fails the job. The same error reported twice (a task failure that then
        fails the job) is recorded once."""
        if self._last_root_error == id(error) and self.entries:
            return
        self._last_root_error = id(error)
        self.entries.append(entry)
        del self.entries[: -self.size]

    def add_concurrent(self, entry: ExceptionEntry) -> None:
        """A failure while the job was already restarting, failing or cancelling: a consequence of the latest
        root cause, listed under it."""
        if not self.entries:
            self.entries.append(entry)
            return
        self.entries[-1].concurrent.append(entry)
