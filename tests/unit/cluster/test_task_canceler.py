"""The TaskCanceler with a task whose thread is stuck in user code: interrupted at once, then every interval with
a WARNING that shows where its thread is stuck (as Flink's TaskInterrupter logs the method), and given up to
the TaskManager's CancellationTimeout handler after the timeout."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from fluvial.cluster.task_canceler import TaskCanceler
from fluvial.runtime.execution_state import ExecutionState
from fluvial.testing import wait_until

pytestmark = pytest.mark.timeout(60)


def blocked_in_user_code(release: threading.Event) -> None:
    release.wait()


@dataclass
class StuckTask:
    """What the canceler sees of a Task: its name, attempt, cancellation settings, state and executor thread."""

    interval_ms: int
    timeout_ms: int
    name: str = "Map (1/1)"
    state: ExecutionState = ExecutionState.RUNNING
    interrupts: int = 0
    cancelled: bool = False
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.spec = SimpleNamespace(
            attempt=2, cancellation=SimpleNamespace(interval_ms=self.interval_ms, timeout_ms=self.timeout_ms)
        )
        thread = threading.Thread(target=blocked_in_user_code, args=(self.release,), daemon=True)
        thread.start()
        self.executor = SimpleNamespace(thread=thread)

    def cancel(self) -> None:
        self.cancelled = True

    def interrupt(self) -> None:
        self.interrupts += 1


class TimedOut:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, int]] = []

    def cancellation_timed_out(self, task: Any, timeout_ms: int) -> None:
        self.calls.append((task, timeout_ms))


@pytest.fixture
def canceler():
    handler = TimedOut()
    canceler = TaskCanceler("test-canceler", handler)
    yield canceler, handler
    canceler.shutdown()


def stuck_warnings(caplog) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "did not react" in r.getMessage()
    ]


def test_a_stuck_task_is_interrupted_again_each_interval_with_where_its_thread_is_stuck(canceler, caplog):
    canceler, handler = canceler
    task = StuckTask(interval_ms=20, timeout_ms=0)
    try:
        with caplog.at_level(logging.WARNING, logger="fluvial.cluster.task_canceler"):
            canceler.cancel(task)
            assert task.cancelled and task.interrupts >= 1
            wait_until(
                lambda: len(stuck_warnings(caplog)) >= 2 and task.interrupts >= 3, what="two repeated interrupts"
            )
        first, second = stuck_warnings(caplog)[:2]
        assert first.startswith("Map (1/1) (attempt 2) did not react to its cancel in 20 ms: interrupting it again")
        assert "in 40 ms" in second
        assert "in blocked_in_user_code" in first and "release.wait()" in first
        assert not handler.calls, "no timeout: never given up"
    finally:
        task.state = ExecutionState.CANCELED
        task.release.set()


def test_a_task_that_ended_is_neither_interrupted_nor_logged_again(canceler, caplog):
    canceler, _ = canceler
    task = StuckTask(interval_ms=20, timeout_ms=0)
    task.state = ExecutionState.CANCELED
    task.release.set()
    with caplog.at_level(logging.WARNING, logger="fluvial.cluster.task_canceler"):
        canceler._interrupt_again(task, 20, 20)
    assert task.interrupts == 0 and not stuck_warnings(caplog)


def test_a_task_still_running_after_the_timeout_is_handed_to_the_timeout_handler(canceler):
    canceler, handler = canceler
    task = StuckTask(interval_ms=0, timeout_ms=30)
    try:
        canceler.cancel(task)
        wait_until(lambda: handler.calls, what="the cancellation timeout")
        assert handler.calls == [(task, 30)]
        assert task.interrupts == 1, "interval 0: interrupted once, at the cancel"
    finally:
        task.state = ExecutionState.CANCELED
        task.release.set()
