"""CloseableIterator (PyFlink's): the records of `execute_and_collect`, read from the buffer the job's collect
sink fills."""

from __future__ import annotations

import signal
import threading
import weakref
from typing import Any, Protocol


class ResultBuffer(Protocol):
    """Where a job's collected records arrive (the cluster's collect buffer)."""

    END: Any

    def take(self) -> Any:
        """The next list of records, or END once the job has ended; blocks until there is one."""
        ...

    def close(self) -> None:
        """The client reads no more: the job's sinks drop their records from now on."""
        ...

    @property
    def closed(self) -> Any: ...


class CloseableIterator:
    """The records of `execute_and_collect`, in arrival order. Also a context manager: leaving it (or
    `close()`) cancels a job that is still running. A job failure is raised from `next()`. A KeyboardInterrupt
    while the iterator is open — waiting in `next()` or in the loop's body — cancels the job before it
    propagates (see `_InterruptGuard`)."""

    def __init__(self, client: Any, buffer: ResultBuffer) -> None:
        self._client = client
        self._buffer = buffer
        self._pending: list = []
        self._position = 0
        self._done = False
        _INTERRUPTS.watch(self)

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        position = self._position
        if position < len(self._pending):
            self._position = position + 1
            return self._pending[position]
        return self._refill()

    def next(self) -> Any:
        """The next record (PyFlink's name for `__next__`); StopIteration once the job's output is exhausted."""
        return self.__next__()

    def _refill(self) -> Any:
        """The next record once the current buffer is used up: waits for the next buffer (or the job's end)."""
        on_main_thread = threading.current_thread() is threading.main_thread()
        if on_main_thread:
            _INTERRUPTS.waiting_in_next += 1
        try:
            while self._position >= len(self._pending):
                if self._done:
                    raise StopIteration
                item = self._buffer.take()
                if item is self._buffer.END:
                    self._done = True
                    _INTERRUPTS.forget(self)
                    self._raise_failure()
                    raise StopIteration
                self._pending, self._position = item, 0
        except KeyboardInterrupt:
            # raised by the guard at once (see _InterruptGuard): the job is cancelled here, once the stack has let go
            # of the buffer's and the gateways' locks, which the TaskManagers' reports need to end the job
            if not self._done:
                self.interrupted()
            raise
        finally:
            if on_main_thread:
                _INTERRUPTS.waiting_in_next -= 1
        value = self._pending[self._position]
        self._position += 1
        return value

    def _raise_failure(self) -> None:
        result = self._client.get_job_execution_result()
        if result.exception() is not None and not self._buffer.closed.is_set():
            raise result.exception()

    def interrupted(self) -> None:
        """Ctrl-C while the iterator is open: the job is cancelled (and has ended) before the interrupt goes on."""
        from fluvial.common.job_client import cancel_on_interrupt

        _INTERRUPTS.forget(self)
        self._done = True
        self._buffer.close()
        cancel_on_interrupt(self._client)

    def close(self) -> None:
        """Stop reading: cancels the job if it still runs (leaving a `with` block does it too)."""
        _INTERRUPTS.forget(self)
        if not self._buffer.closed.is_set():
            self._buffer.close()
            if not self._client.get_job_execution_result().done():
                self._client.cancel()
        self._done = True
        self._pending, self._position = [], 0  # a closed iterator yields nothing more

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class _InterruptGuard:
    """Cancels the jobs of open iterators on Ctrl-C. While any iterator created on the main thread is open, a
    SIGINT handler runs first: it cancels those jobs (waiting until they have ended), then hands over to the
    handler it replaced, which raises the KeyboardInterrupt as usual. Inside `next()` it hands over at once, and
    `next()` cancels as the interrupt leaves it: the interrupted frame may hold a lock (the collect buffer's, a
    TaskManager gateway's) that the job's end needs, and a handler waiting on the main thread would keep it held. A program with a SIGINT handler of its
    own is left alone: the guard installs itself only over Python's default handler, and puts it back when the
    last open iterator is closed or ends. Iterators are held weakly: one dropped unclosed is forgotten (with
    none left, the guard only hands over)."""

    def __init__(self) -> None:
        self._open: weakref.WeakSet = weakref.WeakSet()
        self._previous: Any = None
        self._lock = threading.Lock()
        self.waiting_in_next = 0  # the main thread waits in CloseableIterator.__next__ for a buffer

    def watch(self, iterator: CloseableIterator) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # a KeyboardInterrupt is only ever raised on the main thread
        with self._lock:
            if self._previous is None:
                if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
                    return
                self._previous = signal.signal(signal.SIGINT, self._on_interrupt)
            self._open.add(iterator)

    def forget(self, iterator: CloseableIterator) -> None:
        with self._lock:
            self._open.discard(iterator)
            if self._open or self._previous is None:
                return
            if (
                threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) == self._on_interrupt
            ):
                signal.signal(signal.SIGINT, self._previous)
                self._previous = None

    def _on_interrupt(self, signum: int, frame: Any) -> None:
        if self.waiting_in_next:
            self._previous(signum, frame)  # next() cancels its job once the interrupt has left the locked frames
            return
        with self._lock:
            iterators, previous = list(self._open), self._previous
        for iterator in iterators:
            self.forget(iterator)
            iterator.interrupted()
        previous(signum, frame)


_INTERRUPTS = _InterruptGuard()
