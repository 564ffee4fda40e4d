"""Channels carry buffers and events from one producing subtask to one consuming subtask. They know nothing
about operators: items are opaque.

Flow control is credit-like and never blocks a thread (tasks of a TaskManager share one thread): a producer
asks `writable()` before it produces a step's output, so a channel holds at most `capacity` items plus one
step's output; a slow consumer therefore slows its producers. Wake-ups cross threads: a push wakes the
consumer's executor, and a poll that frees space in a full channel wakes the producer's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fluvial.runtime.records import CheckpointBarrier

DEFAULT_CAPACITY = 8
UNLIMITED_BUFFER = 1 << 62  # a producer's buffers are as large as its steps make them (no debloating)


@dataclass(frozen=True, slots=True)
class ChannelId:
    """Names a channel in every process: the intermediate data set (edge), both subtask indices, the attempt of
    the job's subtasks it connects (a restarted job gets new channels: nothing an old attempt left behind, or
    still writes, reaches the new one), and the job (a session cluster's TaskManagers run several jobs, whose
    edges have the same names)."""

    dataset_id: str
    producer_index: int
    consumer_index: int
    attempt: int = 0
    job_id: str = ""

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its fields: it names every frame of a remote channel, and the dataclass default
        (a Python-level walk over the fields) would cost more than the frame's header."""
        return (ChannelId, (self.dataset_id, self.producer_index, self.consumer_index, self.attempt, self.job_id))


def channel_state_key(channel_id: ChannelId) -> str:
    """How an unaligned checkpoint's channel state names an input channel: its edge and producer subtask, which
    stay the same across attempts and restores at the same parallelism."""
    return f"{channel_id.dataset_id}/{channel_id.producer_index}"


ALL_ATTEMPTS = 1 << 62  # release_attempts_before(job, ALL_ATTEMPTS): the job has ended, drop all its channels


class Channel(Protocol):
    buffer_size: int  # records per buffer its consumer takes (buffer debloating; UNLIMITED_BUFFER when off)

    def push(self, item: Any) -> None: ...

    def push_event(self, event: Any) -> None: ...

    def poll(self) -> Any | None: ...

    def writable(self) -> bool: ...

    def set_consumer_waker(self, wake: Callable[[], None]) -> None: ...

    def set_producer_waker(self, wake: Callable[[], None]) -> None: ...


class Channels(Protocol):
    """Where a TaskManager's tasks get their channels: a ChannelRegistry (TaskManagers as threads) or, in a
    TaskManager process, ProcessChannels (`fluvial.runtime.network.data_plane`), which are remote when the peer
    lives in another process."""

    def output_channel(self, channel_id: ChannelId, peer: int) -> Channel: ...

    def input_channel(self, channel_id: ChannelId, peer: int) -> InputChannel: ...

    def release_attempts_before(self, job_id: str, attempt: int) -> None: ...


class ConsumingChannel(Protocol):
    """What the consuming end offers an unaligned checkpoint (`runtime.alignment`): the items queued and not yet
    polled, in order (a copy; the channel's single consumer calls it), and a listener told, on whatever thread
    pushed it, that a checkpoint barrier was queued (so the consumer looks for it before the items ahead)."""

    def pending(self) -> list[Any]: ...

    def set_barrier_listener(self, listener: Callable[[], None]) -> None: ...


class InputChannel(Channel, ConsumingChannel, Protocol):
    """The consuming end of a channel as a task's input gate holds it: polled, and read ahead by unaligned
    checkpoints."""


def _noop() -> None:
    pass


class LocalChannel:
    """A bounded single-producer single-consumer queue within one process. deque append/popleft are atomic
    under the GIL, so producer and consumer may live on different threads without a lock."""

    __slots__ = ("_queue", "capacity", "_wake_consumer", "_wake_producer", "_on_barrier", "buffer_size")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"channel capacity must be >= 1, got {capacity}")
        self._queue: deque[Any] = deque()
        self.capacity = capacity
        self._wake_consumer: Callable[[], None] = _noop
        self._wake_producer: Callable[[], None] = _noop
        self._on_barrier: Callable[[], None] = _noop
        self.buffer_size = UNLIMITED_BUFFER  # records per buffer the producer may push (buffer debloating)

    def set_buffer_size(self, records: int) -> None:
        """The consumer's debloater: the producer cuts what it pushes to buffers of at most `records`."""
        self.buffer_size = records

    def set_consumer_waker(self, wake: Callable[[], None]) -> None:
        self._wake_consumer = wake

    def set_producer_waker(self, wake: Callable[[], None]) -> None:
        self._wake_producer = wake

    def set_barrier_listener(self, listener: Callable[[], None]) -> None:
        self._on_barrier = listener

    def push(self, item: Any) -> None:
        self._queue.append(item)
        self._wake_consumer()

    def push_event(self, event: Any) -> None:
        """An event (watermark, barrier, end of input): queued like a buffer; a barrier also tells the consumer's
        barrier listener, before the wake-up, so an unaligned checkpoint can start ahead of the queued items."""
        self._queue.append(event)
        if type(event) is CheckpointBarrier:
            self._on_barrier()
        self._wake_consumer()

    def pending(self) -> list[Any]:
        """The queued items (list() of a deque runs in C under the GIL: a consistent copy while the producer
        appends on another thread)."""
        return list(self._queue)

    def poll(self) -> Any | None:
        queue = self._queue
        if not queue:
            return None
        item = queue.popleft()
        if len(queue) == self.capacity - 1:
            self._wake_producer()
        return item

    def writable(self) -> bool:
        return len(self._queue) < self.capacity

    def __len__(self) -> int:
        return len(self._queue)


class ChannelRegistry:
    """The channels of one process, by id; both ends ask for the same id and get the same channel."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._channels: dict[ChannelId, LocalChannel] = {}
        self._capacity = capacity

    def get(self, channel_id: ChannelId) -> LocalChannel:
        channel = self._channels.get(channel_id)
        if channel is None:  # setdefault: the two ends may ask at once, from two TaskManager threads
            channel = self._channels.setdefault(channel_id, LocalChannel(self._capacity))
        return channel

    def output_channel(self, channel_id: ChannelId, peer: int) -> LocalChannel:
        """The producing end of `channel_id` (`peer`: the consumer's TaskManager; all are in this process)."""
        return self.get(channel_id)

    def input_channel(self, channel_id: ChannelId, peer: int) -> LocalChannel:
        """The consuming end of `channel_id` (`peer`: the producer's TaskManager; all are in this process)."""
        return self.get(channel_id)

    def release_attempts_before(self, job_id: str, attempt: int) -> None:
        """Drop the channels of `job_id`'s attempts older than `attempt` (their tasks have all ended).
        Idempotent."""
        for channel_id in [cid for cid in self._channels if cid.job_id == job_id and cid.attempt < attempt]:
            self._channels.pop(channel_id, None)
