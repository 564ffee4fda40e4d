"""The cluster end of `execute_and_collect`: the buffer a job's collect sink fills and the client's
CloseableIterator (fluvial.datastream.closeable_iterator) takes from.

Bounded either way: a collect sink in this process waits while the buffer is full (a slow client slows the
job); one in a TaskManager process may have only a few buffers in flight (a credit window per collect sink), and
each buffer the client takes sends one credit back. A closed client makes the sinks drop records instead of waiting
forever: closing gives back the credits of the remote buffers nobody will take, and every remote buffer that
arrives afterwards is dropped with its credit given back at once — else a sink whose window was full when the
client stopped reading would wait for credit forever, and its task could never be cancelled.

Buffers from a TaskManager process stay pickled until the client takes them: a session cluster's JobManager
passes them on to a client in another process (`take_serialized`) and never unpickles a record — it has none of
the job's classes (those of the job's script live in the client and the TaskManagers only).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol, cast

from fluvial.common.wire import dumps_records, loads_records


class CreditOrigin(Protocol):
    """Where remote records came from: told when the client took them."""

    def grant_collect_credit(self, count: int, collect_id: str) -> None: ...


class CollectBuffer:
    CAPACITY = 64
    END = object()

    def __init__(self, collect_id: str = "") -> None:
        self.collect_id = collect_id  # whose credits go back to TaskManager processes
        self._local: queue.Queue[None] = queue.Queue(self.CAPACITY)  # one slot per local buffer not yet taken
        # what take() reads: local sequences of records, remote (bytes, origin) tuples, END
        self._items: queue.Queue[object] = queue.Queue()
        self.closed = threading.Event()
        self._lock = threading.Lock()
        self._ended = False  # END was taken: every later take ends at once

    def send(self, values: Sequence[Any]) -> None:
        """A collect sink in this process: wait while the client is CAPACITY buffers behind."""
        while not self.closed.is_set():
            try:
                self._local.put(None, timeout=0.05)
                self._items.put(values)
                return
            except queue.Full:
                continue

    def writable(self) -> bool:
        """A collect sink in this process may send without waiting (or the client is gone: it is dropped)."""
        return self.closed.is_set() or not self._local.full()

    def put_remote(self, data: bytes, origin: CreditOrigin) -> None:
        """A pickled list of records a TaskManager process sent (its credit window bounds how many wait here)."""
        with self._lock:  # never queued after close() drained the queue: its credit would be lost
            if not self.closed.is_set():
                self._items.put((data, origin))
                return
        origin.grant_collect_credit(1, self.collect_id)

    def finish(self) -> None:
        """The job ended: after what was sent, the end."""
        self._items.put(self.END)

    def take(self) -> object:
        """The next list of records, or END; blocks until there is one."""
        remote, item = self._next(None)
        return loads_records(cast(bytes, item)) if remote else item  # _next: remote items are bytes

    def take_serialized(self, timeout: float, max_buffers: int = 64) -> tuple[list[bytes], bool]:
        """Up to `max_buffers` buffers, pickled, waiting up to `timeout` seconds for the first; and whether the end
        was reached (nothing more will come)."""
        taken: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(taken) < max_buffers:
            wait = 0.0 if taken else max(0.0, deadline - time.monotonic())
            try:
                remote, item = self._next(wait)
            except queue.Empty:
                break
            if item is self.END:
                return taken, True
            taken.append(cast(bytes, item) if remote else dumps_records(list(cast(Sequence[Any], item))))
        return taken, False

    def _next(self, timeout: float | None) -> tuple[bool, object]:
        """(whether it came from a TaskManager process — pickled, its credit given back —, the item): a local
        sequence of records, remote bytes, or END. A None timeout blocks, 0 does not wait; raises queue.Empty
        when nothing came in time."""
        if self._ended:
            return False, self.END
        item = (
            self._items.get()
            if timeout is None
            else self._items.get(timeout=timeout)
            if timeout > 0
            else self._items.get_nowait()
        )
        if item is self.END:
            self._ended = True
            return False, item
        if type(item) is tuple:
            data, origin = item
            origin.grant_collect_credit(1, self.collect_id)
            return True, data
        self._local.get_nowait()
        return False, item

    def close(self) -> None:
        """The client stopped reading: drop what comes, release what waits (remote buffers give their credit
        back, local ones their room; the end, if it came, stays)."""
        with self._lock:
            self.closed.set()
            waiting = []
            while True:
                try:
                    waiting.append(self._items.get_nowait())
                except queue.Empty:
                    break
        for item in waiting:
            if item is self.END:
                self._items.put(item)
            elif type(item) is tuple:
                item[1].grant_collect_credit(1, self.collect_id)
            else:
                self._local.get_nowait()
