"""CloseableIterator: records in order, close() cancels, and Ctrl-C cancels the job before it propagates —
also when it strikes while the iterator waits with a lock held that the job's end needs."""

from __future__ import annotations

import _thread
import signal
import threading
from typing import Any

import pytest

from fluvial.common.future import CompletableFuture
from fluvial.datastream.closeable_iterator import CloseableIterator


class FakeClient:
    """A job whose cancel ends it on another thread, once that thread gets `needs` (a lock the way to a job's end
    takes, as a TaskManager's report needs its gateway's)."""

    def __init__(self, needs: threading.Lock | None = None) -> None:
        self.result = CompletableFuture()
        self.cancelled = threading.Event()
        self._needs = needs or threading.Lock()

    def get_job_id(self) -> str:
        return "0" * 32

    def get_job_execution_result(self) -> CompletableFuture:
        return self.result

    def cancel(self) -> CompletableFuture:
        self.cancelled.set()

        def end() -> None:
            with self._needs:
                self.result.set_result("CANCELED")

        threading.Thread(target=end, daemon=True).start()
        done = CompletableFuture()
        done.set_result(None)
        return done


class FakeBuffer:
    """Hands out the given buffers, then waits in take() — holding `lock` — until released."""

    END = object()

    def __init__(self, buffers: list[list], lock: threading.Lock | None = None) -> None:
        self._buffers = list(buffers)
        self._lock = lock or threading.Lock()
        self.waiting = threading.Event()
        self.release = threading.Event()
        self.closed = threading.Event()

    def take(self) -> Any:
        if self._buffers:
            return self._buffers.pop(0)
        with self._lock:
            self.waiting.set()
            while not self.release.wait(0.05):
                pass
        return self.END

    def close(self) -> None:
        self.closed.set()


@pytest.mark.timeout(10)
def test_records_in_order_then_the_end() -> None:
    buffer = FakeBuffer([[1, 2], [], [3]])
    buffer.release.set()
    client = FakeClient()
    client.result.set_result("FINISHED")
    assert list(CloseableIterator(client, buffer)) == [1, 2, 3]


@pytest.mark.timeout(10)
def test_close_cancels_a_running_job_and_yields_nothing_more() -> None:
    buffer = FakeBuffer([[1, 2, 3]])
    client = FakeClient()
    iterator = CloseableIterator(client, buffer)
    assert next(iterator) == 1
    iterator.close()
    assert client.cancelled.is_set() and buffer.closed.is_set()
    assert list(iterator) == []


@pytest.mark.timeout(60)
def test_ctrl_c_while_waiting_with_a_lock_held_ends_the_job_before_it_propagates() -> None:
    """The interrupted frame holds a lock the job's end needs: cancelling inside the signal handler would wait on
    it (until the cancel wait gave up); the iterator cancels once the interrupt has left the frame."""
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the guard needs Python's default handler"
    lock = threading.Lock()
    buffer = FakeBuffer([[1]], lock)
    client = FakeClient(needs=lock)
    iterator = CloseableIterator(client, buffer)
    assert next(iterator) == 1

    def interrupt_once_waiting() -> None:
        buffer.waiting.wait(10)
        _thread.interrupt_main(signal.SIGINT)

    threading.Thread(target=interrupt_once_waiting, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        next(iterator)
    assert client.result.done(), "the job had not ended when the interrupt propagated"
    assert buffer.closed.is_set()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the guard is gone with its iterator


@pytest.mark.timeout(60)
def test_ctrl_c_in_the_loop_body_ends_the_job_before_it_propagates() -> None:
    buffer = FakeBuffer([[1, 2]])
    client = FakeClient()
    iterator = CloseableIterator(client, buffer)
    with pytest.raises(KeyboardInterrupt):
        for _ in iterator:
            _thread.interrupt_main(signal.SIGINT)
            while True:  # the body runs on: the interrupt arrives between its bytecodes
                pass
    assert client.result.done() and buffer.closed.is_set()
