"""InterruptibleSection: an interrupt reaches the user code a section runs, and never the code around it."""

from __future__ import annotations

import threading
import time

import pytest

from fluvial.runtime.interruption import InterruptibleSection, TaskInterrupted

pytestmark = pytest.mark.timeout(30)


def test_an_interrupt_ends_a_busy_loop_in_the_section():
    section = InterruptibleSection()
    outcome: list[str] = []
    inside = threading.Event()

    def spin() -> None:
        inside.set()
        while True:
            pass

    def owner() -> None:
        try:
            section.run(spin)
        except TaskInterrupted:
            outcome.append("interrupted")

    thread = threading.Thread(target=owner, daemon=True)
    thread.start()
    assert inside.wait(5)
    assert section.interrupt()
    thread.join(5)
    assert outcome == ["interrupted"]
    assert not section.interrupt(), "nothing runs in the section any more"


def test_interrupts_racing_the_end_of_sections_never_escape_them():
    """The owner runs short sections back to back, as a task steps; another thread interrupts at random
    moments. Every TaskInterrupted must surface from `run`, inside the owner's try, never between sections."""
    section = InterruptibleSection()
    caught, escaped, stop = [0], [], threading.Event()

    def owner() -> None:
        try:
            while not stop.is_set():
                try:
                    section.run(lambda: sum(range(200)))
                except TaskInterrupted:
                    caught[0] += 1
        except TaskInterrupted as error:  # pragma: no cover - the failure this test looks for
            escaped.append(error)

    thread = threading.Thread(target=owner, daemon=True)
    thread.start()
    deadline = time.monotonic() + 1.0
    sent = 0
    while time.monotonic() < deadline:
        sent += section.interrupt()
        time.sleep(0.0005)
    stop.set()
    thread.join(5)
    assert not escaped
    assert 0 < caught[0] <= sent  # two interrupts sent before the thread ran again arrive as one
