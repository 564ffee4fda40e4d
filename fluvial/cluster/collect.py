"""The cluster end of `execute_and_collect`: the buffer a job's collect sink fills and the client's
CloseableIterator (fluvial.datastream.closeable_iterator) takes from.

Bounded either way: a collect sink in this process waits while the buffer is full (a slow client slows the
job); one in a TaskManager process may have only a few buffers in flight (a credit window), and each buffer the
client takes sends one credit back. A closed client makes the sinks drop records instead of waiting forever:
closing gives back the credits of the remote buffers nobody will take, and every remote buffer that arrives
afterwards is dropped with its credit given back at once — else a sink whose window was full when the client
stopped reading would wait for credit forever, and its task could never be cancelled.
"""

from __future__ import annotations

import queue
import threading
from typing import Protocol


class CreditOrigin(Protocol):
    """Where remote records came from: told when the client took them."""

    def grant_collect_credit(self, count: int) -> None: ...


class CollectBuffer:
    CAPACITY = 64
    END = object()

    def __init__(self) -> None:
        self._local: queue.Queue = queue.Queue(self.CAPACITY)
        self._items: queue.Queue = queue.Queue()  # what take() reads: local lists, remote (list, gateway), END
        self.closed = threading.Event()
        self._lock = threading.Lock()

    def send(self, values: list) -> None:
        """A collect sink in this process: wait while the client is CAPACITY buffers behind."""
        while not self.closed.is_set():
            try:
                self._local.put(None, timeout=0.05)
                self._items.put(values)
                return
            except queue.Full:
                continue

    def put_remote(self, values: list, origin: CreditOrigin) -> None:
        """Records a TaskManager process sent (its credit window bounds how many wait here)."""
        with self._lock:  # never queued after close() drained the queue: its credit would be lost
            if not self.closed.is_set():
                self._items.put((values, origin))
                return
        origin.grant_collect_credit(1)

    def finish(self) -> None:
        """The job ended: after what was sent, the end."""
        self._items.put(self.END)

    def take(self) -> object:
        """The next list of records, or END; blocks until there is one."""
        item = self._items.get()
        if item is self.END:
            return item
        if type(item) is tuple:
            values, origin = item
            origin.grant_collect_credit(1)
            return values
        self._local.get_nowait()
        return item

    def close(self) -> None:
        """The client stopped reading: drop what comes, release what waits (remote buffers give their credit
        back; the end, if it came, stays)."""
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
                item[1].grant_collect_credit(1)
