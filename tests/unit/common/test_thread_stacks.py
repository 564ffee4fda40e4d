"""Where threads are, for the log: one thread's stack read from another, and every thread's stack written to
standard error on STACKS_SIGNAL by a process that asked for it (what a TaskManager process does)."""

from __future__ import annotations

import os
import threading

import pytest

from fluvial.common.thread_stacks import STACKS_SIGNAL, stack_of
from fluvial.testing import wait_until
from tests.processes import Parked

pytestmark = pytest.mark.timeout(60)


def wait_in_user_code(release: threading.Event) -> None:
    release.wait()


def test_the_stack_of_a_waiting_thread_names_its_function_and_line():
    release = threading.Event()
    thread = threading.Thread(target=wait_in_user_code, args=(release,), daemon=True)
    thread.start()
    try:
        wait_until(lambda: "wait_in_user_code" in stack_of(thread), what="the thread to wait")
        stack = stack_of(thread)
        assert "release.wait()" in stack
        assert stack.index("in run") < stack.index("in wait_in_user_code"), "outermost call first, innermost last"
    finally:
        release.set()
        thread.join(10)


def test_an_ended_or_unstarted_thread_has_no_stack():
    thread = threading.Thread(target=lambda: None)
    assert "has ended" in stack_of(thread)  # not started: no ident yet
    thread.start()
    thread.join(10)
    assert "has ended" in stack_of(thread)
    assert "has ended" in stack_of(None)


def test_the_signal_writes_every_threads_stack_to_standard_error_and_the_process_goes_on():
    with Parked() as parked:
        os.kill(parked.pid, STACKS_SIGNAL)
        wait_until(lambda: "parked_in_user_code" in parked.written(), what="the stacks on standard error")
        assert "most recent call first" in parked.written()
        assert parked.process.poll() is None, "the signal must not end the process"
