"""ManualScheduledExecutor: an Executor and ScheduledExecutor whose mails run only when the test says, on the
test's thread, with time on a ManualClock — what the JobMaster's components (the checkpoint coordinator, the
scheduler) take instead of their thread, so a test steps them deterministically."""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable

from fluvial.common.time import ManualClock


class _Scheduled:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduledExecutor:
    """An executor whose delayed mails run only when the test advances its ManualClock: time-dependent code
    tested without waiting.
    """

    def __init__(self, clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock(0)
        self._mails: deque[Callable[[], None]] = deque()
        self._scheduled: list[tuple[int, int, _Scheduled, Callable[[], None]]] = []
        self._sequence = itertools.count()
        self.shut_down = False

    def execute(self, mail: Callable[[], None]) -> bool:
        """Queue a mail; `run_all()` runs the queued mails.

        Args:
            mail: The callable.

        Returns:
            False after `shutdown`, else True.
        """
        if self.shut_down:
            return False
        self._mails.append(mail)
        return True

    def schedule(self, delay_ms: int, mail: Callable[[], None]) -> _Scheduled:
        """Run a mail once the clock has advanced `delay_ms`.

        Args:
            delay_ms: The delay.
            mail: The callable.

        Returns:
            A handle that can cancel it.
        """
        handle = _Scheduled()
        heapq.heappush(self._scheduled, (self.clock() + max(0, delay_ms), next(self._sequence), handle, mail))
        return handle

    def shutdown(self) -> None:
        """Refuse new mails from now on."""
        self.shut_down = True

    @property
    def queued(self) -> int:
        """How many mails wait to run."""
        return len(self._mails)

    def scheduled_delays(self) -> list[int]:
        """Milliseconds from now until each scheduled mail that is still live, soonest first."""
        now = self.clock()
        return sorted(due - now for due, _, handle, _ in self._scheduled if not handle.cancelled)

    def run_all(self) -> int:
        """Run queued mails, including those they queue, until none is left; return how many ran."""
        ran = 0
        while self._mails:
            self._mails.popleft()()
            ran += 1
        return ran

    def advance(self, millis: int) -> int:
        """Move the clock by `millis`, running every scheduled mail that comes due on the way (in due order,
        each with the clock at its due time) and the queued mails they lead to; return how many ran."""
        target = self.clock() + millis
        ran = self.run_all()
        while self._scheduled and self._scheduled[0][0] <= target:
            due, _, handle, mail = heapq.heappop(self._scheduled)
            if handle.cancelled:
                continue
            self.clock.advance(max(0, due - self.clock()))
            mail()
            ran += 1 + self.run_all()
        self.clock.advance(max(0, target - self.clock()))
        return ran
