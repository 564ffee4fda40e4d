"""The source behind `env.from_collection`: a fixed list of elements, read by a single subtask.

The elements travel inside the job description, so they are copied into a tuple when the source is built:
the user may mutate their list afterwards without changing what the job emits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader


@dataclass(frozen=True, slots=True)
class CollectionSplit:
    """All the elements and the index of the next one to emit.

    The tuple is shared, never copied, between the source, the reader and every snapshot; only `position`
    changes, so a snapshot costs one small object.
    """

    split_id: str
    elements: tuple
    position: int = 0


class CollectionSource(Source[CollectionSplit]):
    """Emits the given elements in order, then ends. Always one split, so at most one subtask."""

    __slots__ = ("elements", "_pickled")

    def __init__(self, elements: Iterable[Any]) -> None:
        if isinstance(elements, (str, bytes)):
            raise InvalidJobError(
                f"from_collection got a {type(elements).__name__}, which would emit one character per record; "
                f"wrap it in a list: [{elements!r}]"
            )
        self.elements: tuple = tuple(elements)
        self._pickled: bytes | None = None

    def __reduce__(self) -> tuple:
        """Pickled once, however often the job is: a job that goes to TaskManager processes is pickled when it
        is checked at submission and again in its deployment, and a large collection is most of the cost
        (the elements never change, so the bytes stay right)."""
        if self._pickled is None:
            from fluvial.common.wire import dumps_code

            self._pickled = dumps_code(self.elements)  # cloudpickle: elements may be of the script's classes
        return (_unpickled_collection, (self._pickled,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CollectionSource) and other.elements == self.elements

    def __hash__(self) -> int:
        return hash(("CollectionSource", len(self.elements)))

    def __repr__(self) -> str:
        return f"CollectionSource({len(self.elements)} elements)"

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_splits(self, parallelism: int) -> list[CollectionSplit]:
        """One split whatever the parallelism: element order is only defined when one reader emits them all."""
        return [CollectionSplit("0", self.elements, 0)]

    def create_reader(self, task_info: TaskInfo) -> CollectionReader:
        return CollectionReader()

    def max_parallelism(self) -> int | None:
        return 1

    def default_name(self) -> str:
        return "Collection Source"


def _unpickled_collection(pickled: bytes) -> CollectionSource:
    from fluvial.common.wire import loads_code

    source = CollectionSource(loads_code(pickled))
    source._pickled = pickled
    return source


class CollectionReader(SourceReader[CollectionSplit]):
    """Hands out slices of its split's tuple; splits added later are read after the current one."""

    __slots__ = ("_queue", "_active")

    def __init__(self) -> None:
        self._queue: list[CollectionSplit] = []
        self._active: CollectionSplit | None = None

    def add_splits(self, splits: list[CollectionSplit]) -> None:
        self._queue.extend(splits)

    def poll(self, max_records: int) -> list | None:
        split = self._active
        while split is None or split.position >= len(split.elements):
            if not self._queue:
                self._active = None
                return None
            split = self._active = self._queue.pop(0)
        pos = split.position
        batch = list(split.elements[pos : pos + max_records])
        self._active = CollectionSplit(split.split_id, split.elements, pos + len(batch))
        return batch

    def snapshot_state(self) -> list[CollectionSplit]:
        state = []
        if self._active is not None and self._active.position < len(self._active.elements):
            state.append(self._active)
        state.extend(self._queue)
        return state
