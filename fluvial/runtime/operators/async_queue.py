"""The queues of the async wait operator (Flink's StreamElementQueue): records in flight and the watermarks
between them, and the rule for when a completed record may be emitted.

- OrderedQueue: results leave in input order; a completed record waits for every record before it.
- UnorderedQueue: results leave as they complete, but never across a watermark: the records between two
  watermarks form a segment, and a segment's results are emitted only once every earlier segment is done and
  the watermark before it has been emitted.
In both, a watermark leaves only after every record that came before it, so watermarks never overtake pending
results. Consecutive watermarks with no record between them collapse into the latest (it says everything the
earlier ones said), so a long wait behind one slow record cannot pile up periodic watermarks.

Pure data structures, driven by the operator on its task thread; `entries()` lists what is not emitted yet, for
checkpoints: in input order (in the unordered queue, segment by segment).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from fluvial.runtime.records import Watermark


class AsyncEntry:
    """One input record in flight: its value and timestamp, its attempts, and once done its results.

    `generation` changes whenever an outcome of the current call stops counting (a timeout, a retry), so a late
    completion of an abandoned call is recognised and dropped."""

    __slots__ = ("value", "timestamp", "results", "done", "attempt", "generation", "deadline", "task", "segment")

    def __init__(self, value: Any, timestamp: int | None) -> None:
        self.value = value
        self.timestamp = timestamp
        self.results: Sequence[Any] = ()  # set when done
        self.done = False
        self.attempt = 1
        self.generation = 0
        self.deadline = 0
        self.task: Any = None  # the asyncio task of the current call (set on the loop thread)
        self.segment: Any = None  # UnorderedQueue: the segment the entry belongs to

    def __repr__(self) -> str:
        return f"AsyncEntry({self.value!r}, done={self.done})"


Item = AsyncEntry | Watermark


class _Queue:
    """What both queues share: their items in input order, the records among them, and watermarks."""

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self.record_count = 0

    def add_watermark(self, watermark: Watermark) -> None:
        items = self._items
        if items and type(items[-1]) is Watermark:
            items[-1] = watermark
        else:
            items.append(watermark)

    def __bool__(self) -> bool:
        return bool(self._items)


class OrderedQueue(_Queue):
    def add(self, entry: AsyncEntry) -> None:
        self._items.append(entry)
        self.record_count += 1

    def complete(self, entry: AsyncEntry) -> None:
        """`entry` is done (its results are set)."""

    def pop_ready(self) -> list[Item]:
        """Completed records and watermarks that may leave now, in the order they leave."""
        items = self._items
        ready: list[Item] = []
        while items:
            head = items[0]
            if type(head) is Watermark:
                ready.append(items.popleft())
            elif head.done:
                ready.append(items.popleft())
                self.record_count -= 1
            else:
                break
        return ready

    def entries(self) -> Iterator[Item]:
        return iter(self._items)


class _Segment:
    """The records between two watermarks: the ones in flight, and the completed ones not emitted yet."""

    __slots__ = ("pending", "completed")

    def __init__(self) -> None:
        self.pending: dict[int, AsyncEntry] = {}  # id(entry) -> entry, in input order
        self.completed: list[AsyncEntry] = []


class UnorderedQueue(_Queue):
    def add(self, entry: AsyncEntry) -> None:
        items = self._items
        if not items or type(items[-1]) is Watermark:
            items.append(_Segment())
        segment = items[-1]
        segment.pending[id(entry)] = entry
        entry.segment = segment
        self.record_count += 1

    def complete(self, entry: AsyncEntry) -> None:
        segment = entry.segment
        del segment.pending[id(entry)]
        segment.completed.append(entry)
        entry.segment = None

    def pop_ready(self) -> list[Item]:
        items = self._items
        ready: list[Item] = []
        while items:
            head = items[0]
            if type(head) is Watermark:
                ready.append(items.popleft())
                continue
            if head.completed:
                ready.extend(head.completed)
                self.record_count -= len(head.completed)
                head.completed = []
            if head.pending:
                break
            items.popleft()
        return ready

    def entries(self) -> Iterator[Item]:
        for item in self._items:
            if type(item) is Watermark:
                yield item
            else:
                yield from item.completed
                yield from item.pending.values()
