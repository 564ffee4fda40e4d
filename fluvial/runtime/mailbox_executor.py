"""MailboxExecutor: how code on another thread hands work back to the thread that owns a task (Flink's
MailboxExecutor), so an operator's state is only ever touched by that one thread.

Contract of `execute(mail)`:
1. callable from any thread, never blocks;
2. `mail()` runs later on the task's thread, between buffers, in the order mails were handed in;
3. a mail that raises fails the task, and the failure names the operator the mailbox belongs to;
4. mails handed in after the task stopped running are dropped.

ProcessingTimeMailbox builds one on the task's ProcessingTimeService, whose callbacks already have exactly these
properties (the TaskExecutor runs them on the task thread, labelled, skipped once the task stopped): a mail is a
callback due now.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class MailboxExecutor(Protocol):
    def execute(self, mail: Callable[[], None]) -> None: ...


class ProcessingTimeMailbox:
    """A MailboxExecutor over a ProcessingTimeService whose `register_timer` is thread-safe."""

    __slots__ = ("_service",)

    def __init__(self, processing_time_service: Any) -> None:
        self._service = processing_time_service

    def execute(self, mail: Callable[[], None]) -> None:
        service = self._service
        service.register_timer(service.current_processing_time(), _MailCall(mail))


class _MailCall:
    """Adapts a mail to a processing-time callback (which receives the time it fires at)."""

    __slots__ = ("_mail",)

    def __init__(self, mail: Callable[[], None]) -> None:
        self._mail = mail

    def __call__(self, now: int) -> None:
        self._mail()
