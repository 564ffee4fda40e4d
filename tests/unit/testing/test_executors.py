"""ManualScheduledExecutor: mails run only when the test says, scheduled mails in due order with the clock at
their due time, cancelled ones never, nothing accepted after shutdown."""

from __future__ import annotations

from fluvial.testing import ManualClock, ManualScheduledExecutor


def test_mails_run_in_order_with_the_mails_they_queue() -> None:
    executor = ManualScheduledExecutor()
    ran: list[str] = []
    executor.execute(lambda: (ran.append("a"), executor.execute(lambda: ran.append("c"))))
    executor.execute(lambda: ran.append("b"))
    assert executor.queued == 2 and ran == []
    assert executor.run_all() == 3
    assert ran == ["a", "b", "c"]


def test_scheduled_mails_run_in_due_order_each_at_its_due_time() -> None:
    clock = ManualClock(1_000)
    executor = ManualScheduledExecutor(clock)
    seen: list[tuple[str, int]] = []
    executor.schedule(300, lambda: seen.append(("late", clock())))
    executor.schedule(100, lambda: seen.append(("early", clock())))
    executor.schedule(100, lambda: executor.schedule(50, lambda: seen.append(("chained", clock()))))
    assert executor.scheduled_delays() == [100, 100, 300]
    executor.advance(500)
    assert seen == [("early", 1_100), ("chained", 1_150), ("late", 1_300)]
    assert clock() == 1_500 and executor.scheduled_delays() == []


def test_a_cancelled_mail_never_runs() -> None:
    executor = ManualScheduledExecutor()
    ran: list[int] = []
    handle = executor.schedule(10, lambda: ran.append(1))
    handle.cancel()
    assert executor.scheduled_delays() == []
    executor.advance(100)
    assert ran == []


def test_after_shutdown_mails_are_refused() -> None:
    executor = ManualScheduledExecutor()
    executor.shutdown()
    assert executor.execute(lambda: None) is False and executor.queued == 0
