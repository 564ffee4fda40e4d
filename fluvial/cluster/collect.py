"""The cluster end of `execute_and_collect`: a bounded buffer the collect sink fills and the client's
CloseableIterator (fluvial.datastream.closeable_iterator) reads."""

from __future__ import annotations

import queue
import threading


class CollectBuffer:
    """A bounded queue of buffers (a ResultBuffer). A slow client slows the job; a closed client makes the sink
    drop records instead of blocking forever."""

    CAPACITY = 64
    END = object()

    def __init__(self) -> None:
        self.queue: queue.Queue = queue.Queue(self.CAPACITY)
        self.closed = threading.Event()

    def send(self, values: list) -> None:
        while not self.closed.is_set():
            try:
                self.queue.put(values, timeout=0.05)
                return
            except queue.Full:
                continue

    def finish(self) -> None:
        while not self.closed.is_set():
            try:
                self.queue.put(self.END, timeout=0.05)
                return
            except queue.Full:
                continue
