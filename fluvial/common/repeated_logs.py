"""RepeatedMessages: a logging filter that lets a failure loop say what fails without flooding the log.

A job that fails the same way again and again — a checkpoint directory made read-only, a restart loop — would
log the same lines tens of times a second. The filter passes the first `first` records of each kind in a window
of `window_s` seconds and counts the rest; the first record of that kind after the window says how many were
left out: "... (and 37 more like it in the last 60 s)". Records are of one kind when their messages are equal
with every number masked (checkpoint ids, restart counts, attempts and durations differ in every line).

Only warnings and errors are limited: a failure loop repeats those, while the INFO lines of a healthy job
(each checkpoint triggered and completed, with its duration and size) are what an operator reads and must all
be there. Added to the loggers of the modules whose failures repeat in a loop (scheduler, checkpoint
coordinator, task checkpointing); other loggers are untouched.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

FIRST = 3
WINDOW_S = 60.0
_NUMBER = re.compile(r"\d+")
_MAX_KINDS = 1000  # kinds remembered; the oldest are forgotten beyond that


@dataclass
class _Kind:
    window_start: float
    passed: int = 0
    suppressed: int = 0


class RepeatedMessages(logging.Filter):
    def __init__(
        self, first: int = FIRST, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._first = first
        self._window_s = window_s
        self._clock = clock
        self._kinds: dict[str, _Kind] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        try:
            key = f"{record.name}:{record.levelno}:{_NUMBER.sub('#', record.getMessage())}"
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is logging's to report
            return True
        now = self._clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None or now - kind.window_start > self._window_s:
                suppressed = kind.suppressed if kind is not None else 0
                if len(self._kinds) >= _MAX_KINDS and kind is None:
                    self._kinds.pop(next(iter(self._kinds)))
                kind = self._kinds[key] = _Kind(now)
            else:
                suppressed = 0
            if kind.passed >= self._first:
                kind.suppressed += 1
                return False
            kind.passed += 1
        if suppressed:
            record.msg = f"{record.getMessage()} (and {suppressed} more like it in the last {self._window_s:.0f} s)"
            record.args = None
        return True


def limit_repeats(*loggers: logging.Logger) -> None:
    """Add one RepeatedMessages filter to each logger (once)."""
    for logger in loggers:
        if not any(isinstance(existing, RepeatedMessages) for existing in logger.filters):
            logger.addFilter(RepeatedMessages())
