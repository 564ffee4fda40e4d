"""A task's mailbox: actions (timers, checkpoint triggers, cancellation) that other threads hand to the one
thread that owns the task, so operator state needs no locks. `put` is thread-safe; `run_pending` runs on the
owner thread between steps."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class Mailbox:
    __slots__ = ("_mails", "_wake")

    def __init__(self, wake: Callable[[], None]) -> None:
        self._mails: deque[Callable[[], None]] = deque()
        self._wake = wake

    def put(self, mail: Callable[[], None]) -> None:
        self._mails.append(mail)
        self._wake()

    def set_waker(self, wake: Callable[[], None]) -> None:
        """The task moved to another executor: later mails wake that one."""
        self._wake = wake

    def has_mail(self) -> bool:
        return bool(self._mails)

    def run_pending(self) -> int:
        """Run the mails present now (not ones they add), in order; return how many ran."""
        count = len(self._mails)
        for _ in range(count):
            self._mails.popleft()()
        return count
