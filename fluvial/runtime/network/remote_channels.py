"""The two ends of a channel whose producer and consumer run in different processes (DESIGN 4).

Items cross in order on one connection, so barriers, watermarks, idleness and end of input stay in order with the
records around them; alignment and the watermark valve work exactly as on a LocalChannel. A buffer of records
crosses as a BUFFER frame: the channel's header (its id, pickled once per channel) and the RecordBatch pickled
with protocol 5 without a memo (`wire.dumps_records`). The connection's reader thread reads only the header and
queues the rest as it came; the consuming task unpickles it when it polls the buffer, just before processing
it. So the records are built by the thread that uses them, while they are in its cache, and the reader thread
holds the GIL only to route the frame (unpickled on the reader thread, a buffer's records cost about twice as
much CPU: they are made on one core and used on the other). Any other item (an event) crosses as a DATA frame,
`(channel id, item)` pickled, and is unpickled by the reader thread, which must see barriers and end of input.

Flow control is credit-based, as in Flink. The consumer end holds at most `capacity` items (plus events, which
never wait): the producer starts with `capacity` credits, spends one per item it pushes, and `writable()` is
false without credit — a producer without credit stops producing. The consumer grants a credit back for every
item its task polls (in batches, and at once whenever its queue runs empty, so the producer never waits on a
grant that is held back). A slow consumer therefore slows its producers across processes exactly as in one,
and memory stays bounded on both sides. Counters are each written by one thread only (sent: the task thread;
granted: the connection's reader thread), so they need no lock. Each end counts the serialized bytes of the
items it carries (`serialized_bytes`: the task's numBytesOut / numBytesIn; in-process channels serialize
nothing and count nothing).
"""

from __future__ import annotations

import pickle
import struct
from collections import deque
from collections.abc import Callable
from typing import Any

from fluvial.common.wire import dumps_records
from fluvial.runtime.channels import UNLIMITED_BUFFER
from fluvial.runtime.network.framing import FrameKind
from fluvial.runtime.records import ChannelBroken, CheckpointBarrier, EndOfInput, RecordBatch

CHANNEL_HEADER = struct.Struct(">H")  # the length of the pickled channel id that starts a BUFFER frame


class DataConnectionLost(ConnectionError):
    """A data connection between two TaskManager processes closed or failed mid-stream: the usual sign that the
    process at the other end was lost (the JobMaster names it when it finds it dead, `cluster.scheduler`)."""


def _noop() -> None:
    pass


def channel_header(channel_id: Any) -> bytes:
    """What starts every BUFFER frame of the channel: the length of its pickled id, then the id."""
    name = pickle.dumps(channel_id, protocol=5)
    return CHANNEL_HEADER.pack(len(name)) + name


class RemoteOutputChannel:
    """The producing end: pushes over `connection`; `writable()` while it holds credit."""

    __slots__ = (
        "channel_id",
        "_connection",
        "capacity",
        "_sent",
        "_granted",
        "_wake_producer",
        "buffer_size",
        "serialized_bytes",
        "_header",
    )

    def __init__(self, channel_id: Any, connection: Any, capacity: int) -> None:
        self.channel_id = channel_id
        self._header = channel_header(channel_id)
        self._connection = connection
        self.capacity = capacity
        self._sent = 0  # items pushed (task thread)
        self._granted = 0  # credits granted back (reader thread)
        self._wake_producer: Callable[[], None] = _noop
        self.buffer_size = UNLIMITED_BUFFER  # set by the consumer's debloater, through credit frames
        self.serialized_bytes = 0  # payload bytes pushed (task thread)

    def set_producer_waker(self, wake: Callable[[], None]) -> None:
        self._wake_producer = wake

    def set_consumer_waker(self, wake: Callable[[], None]) -> None:
        raise TypeError("the consumer of a remote channel lives in another process")

    def push_event(self, event: Any) -> None:
        """Events travel in order with the buffers; the consumer's end tells its listener about barriers."""
        self.push(event)

    def push(self, item: Any) -> None:
        if type(item) is RecordBatch:
            prefix, kind, payload = self._header, FrameKind.BUFFER, dumps_records(item)
        else:
            prefix, kind, payload = b"", FrameKind.DATA, dumps_records((self.channel_id, item))
        try:
            self._connection.send(kind, payload, prefix)
        except OSError as error:
            raise DataConnectionLost(
                f"the data connection to {self._connection.peer} (the consumer of channel "
                f"{self.channel_id.dataset_id}) is gone: {error}"
            ) from error
        self._sent += 1
        self.serialized_bytes += len(prefix) + len(payload)

    def writable(self) -> bool:
        return self._sent - self._granted < self.capacity

    def grant(self, count: int, buffer_size: int | None = None) -> None:
        """`count` credits came back (on the connection's reader thread), maybe with the consumer's debloated
        buffer size."""
        if buffer_size is not None:
            self.buffer_size = buffer_size
        self._granted += count
        self._wake_producer()

    def poll(self) -> Any:
        raise TypeError("the producing end of a remote channel is never polled")


class RemoteInputChannel:
    """The consuming end: items arrive from the connection's reader thread; the task polls them."""

    __slots__ = (
        "channel_id",
        "_queue",
        "capacity",
        "_connection",
        "_ungranted",
        "_grant_batch",
        "_wake_consumer",
        "ended",
        "_on_barrier",
        "_buffer_size",
        "serialized_bytes",
    )

    def __init__(self, channel_id: Any, capacity: int) -> None:
        self.channel_id = channel_id
        self._queue: deque[Any] = deque()
        self.capacity = capacity
        self._connection: Any = None
        self._ungranted = 0
        self._grant_batch = max(1, capacity // 2)
        self._wake_consumer: Callable[[], None] = _noop
        self._on_barrier: Callable[[], None] = _noop
        self._buffer_size: int | None = None  # a debloated size not yet sent to the producer
        self.ended = False
        self.serialized_bytes = 0  # payload bytes delivered (the connection's reader thread)

    def set_buffer_size(self, records: int) -> None:
        """The debloater's size for this channel's buffers: sent to the producer at once, in a credit frame."""
        self._buffer_size = records
        self._grant()

    def set_barrier_listener(self, listener: Callable[[], None]) -> None:
        self._on_barrier = listener
        if any(type(item) is CheckpointBarrier for item in list(self._queue)):
            listener()

    def pending(self) -> list[Any]:
        """The queued items, a copy (the reader thread appends while the task thread reads). Buffers are
        unpickled here and put back in their place unpickled (only this thread takes items out, and the reader
        thread only appends), so looking ahead for barriers never unpickles a buffer twice."""
        queue = self._queue
        items = list(queue)
        for index, item in enumerate(items):
            if type(item) is memoryview:
                items[index] = queue[index] = pickle.loads(item)
        return items

    def set_consumer_waker(self, wake: Callable[[], None]) -> None:
        self._wake_consumer = wake
        if self._queue:
            wake()

    def set_producer_waker(self, wake: Callable[[], None]) -> None:
        raise TypeError("the producer of a remote channel lives in another process")

    def deliver(self, item: Any, connection: Any, size: int = 0) -> None:
        """An item from the network (reader thread), `size` bytes serialized: queue it for the task and wake it."""
        self._connection = connection
        self.serialized_bytes += size
        if isinstance(item, EndOfInput):
            self.ended = True
        self._queue.append(item)
        if type(item) is CheckpointBarrier:
            self._on_barrier()
        self._wake_consumer()

    def deliver_buffer(self, pickled: memoryview, connection: Any, size: int) -> None:
        """A buffer from the network (reader thread), still pickled: the task unpickles it when it polls it."""
        self._connection = connection
        self.serialized_bytes += size
        self._queue.append(pickled)
        self._wake_consumer()

    def break_with(self, error: BaseException) -> None:
        """The connection died before this channel ended."""
        if not self.ended:
            self.ended = True
            self._queue.append(ChannelBroken(error))
            self._wake_consumer()

    def poll(self) -> Any:
        queue = self._queue
        if not queue:
            return None
        item = queue.popleft()
        self._ungranted += 1
        if self._ungranted >= self._grant_batch or not queue:
            self._grant()
        if type(item) is memoryview:
            return pickle.loads(item)
        return item

    def _grant(self) -> None:
        count, self._ungranted = self._ungranted, 0
        connection = self._connection
        if connection is not None and not connection.closed:
            size, self._buffer_size = self._buffer_size, None
            grant = (self.channel_id, count) if size is None else (self.channel_id, count, size)
            try:
                connection.send(FrameKind.CREDIT, pickle.dumps(grant, protocol=5))
            except OSError:
                pass  # the producer is gone; the reader thread reports the broken connection

    def push(self, item: Any) -> None:
        raise TypeError("the consuming end of a remote channel is fed by the network, not pushed to")

    def writable(self) -> bool:
        return True

    def __len__(self) -> int:
        return len(self._queue)
