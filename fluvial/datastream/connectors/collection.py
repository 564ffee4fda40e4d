"""The source behind `env.from_collection`: a fixed list of elements, read by a single subtask.

The elements travel inside the job description, so they are copied into a tuple when the source is built:
the user may mutate their list afterwards without changing what the job emits.

When the job goes to another process, the elements travel as `PickledElements`: pickled once, in chunks, value
by value (as Flink's serializers copy each element: objects shared between elements arrive as copies), and
unpickled a chunk at a time as the reader reaches them. The job starts at once however large the collection,
downstream subtasks work while the source unpickles, and a checkpoint stores the source's position, never its
elements.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

CHUNK_ELEMENTS = 8192


@dataclass(frozen=True, slots=True)
class CollectionSplit:
    """The index of the next element to emit. `elements` is None in the splits the source makes and the
    snapshots its reader takes — the reader has its source's elements — so a snapshot is one small object; a
    split restored from a snapshot of an older fluvial may carry its elements."""

    split_id: str
    elements: Sequence | None = None
    position: int = 0


class PickledElements(Sequence):
    """A read-only sequence of elements kept as pickled chunks; each chunk is unpickled when it is first read
    (the last one read stays, so a reader going through in order unpickles each chunk once)."""

    __slots__ = ("chunks", "size", "chunk_size", "_index", "_chunk")

    def __init__(self, chunks: list[bytes], size: int, chunk_size: int) -> None:
        self.chunks, self.size, self.chunk_size = chunks, size, chunk_size
        self._index = -1
        self._chunk: tuple = ()

    @classmethod
    def of(cls, elements: tuple, chunk_size: int = CHUNK_ELEMENTS) -> PickledElements:
        return cls(
            [_dumps_values(elements[i : i + chunk_size]) for i in range(0, len(elements), chunk_size)],
            len(elements),
            chunk_size,
        )

    def __reduce__(self) -> tuple:
        return (PickledElements, (self.chunks, self.size, self.chunk_size))

    def __len__(self) -> int:
        return self.size

    def _chunk_at(self, index: int) -> tuple:
        if index != self._index:
            from fluvial.common.wire import loads_code

            self._chunk, self._index = loads_code(self.chunks[index]), index
        return self._chunk

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.size)
            if step != 1:
                return tuple(self[i] for i in range(start, stop, step))
            parts = []
            while start < stop:
                chunk_index, offset = divmod(start, self.chunk_size)
                part = self._chunk_at(chunk_index)[offset : offset + stop - start]
                parts.append(part)
                start += len(part)
            return parts[0] if len(parts) == 1 else tuple(v for part in parts for v in part)
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError(index)
        chunk_index, offset = divmod(index, self.chunk_size)
        return self._chunk_at(chunk_index)[offset]

    def __iter__(self) -> Iterator[Any]:
        for chunk_index in range(len(self.chunks)):
            yield from self._chunk_at(chunk_index)


def _dumps_values(values: tuple) -> bytes:
    """Pickle values without a memo (`wire.dumps_records`: several times faster for many small tuples and
    strings); values that only cloudpickle can write (a lambda among them) take cloudpickle."""
    from fluvial.common.wire import dumps_code, dumps_records

    try:
        return dumps_records(values)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return dumps_code(values)


class CollectionSource(Source[CollectionSplit]):
    """Emits the given elements in order, then ends. Always one split, so at most one subtask."""

    __slots__ = ("elements", "_pickled")

    def __init__(self, elements: Iterable[Any]) -> None:
        if isinstance(elements, (str, bytes)):
            raise InvalidJobError(
                f"from_collection got a {type(elements).__name__}, which would emit one character per record; "
                f"wrap it in a list: [{elements!r}]"
            )
        self.elements: Sequence = tuple(elements)
        self._pickled: PickledElements | None = None

    def __reduce__(self) -> tuple:
        """Pickled once, however often the job is (it is pickled when checked at submission and again in its
        deployment; the elements never change, so the chunks stay right)."""
        if self._pickled is None:
            elements = self.elements
            self._pickled = elements if isinstance(elements, PickledElements) else PickledElements.of(elements)
        return (_unpickled_collection, (self._pickled,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CollectionSource) and tuple(other.elements) == tuple(self.elements)

    def __hash__(self) -> int:
        return hash(("CollectionSource", len(self.elements)))

    def __repr__(self) -> str:
        return f"CollectionSource({len(self.elements)} elements)"

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_splits(self, parallelism: int) -> list[CollectionSplit]:
        """One split whatever the parallelism: element order is only defined when one reader emits them all."""
        return [CollectionSplit("0")]

    def create_reader(self, task_info: TaskInfo) -> CollectionReader:
        return CollectionReader(self.elements)

    def max_parallelism(self) -> int | None:
        return 1

    def default_name(self) -> str:
        return "Collection Source"


def _unpickled_collection(elements: PickledElements) -> CollectionSource:
    source = CollectionSource.__new__(CollectionSource)
    source.elements = source._pickled = elements
    return source


class CollectionReader(SourceReader[CollectionSplit]):
    """Hands out slices of its source's elements; splits added later are read after the current one."""

    __slots__ = ("_elements", "_queue", "_active")

    def __init__(self, elements: Sequence = ()) -> None:
        self._elements = elements
        self._queue: list[CollectionSplit] = []
        self._active: CollectionSplit | None = None

    def add_splits(self, splits: list[CollectionSplit]) -> None:
        self._queue.extend(splits)

    def _elements_of(self, split: CollectionSplit) -> Sequence:
        return self._elements if split.elements is None else split.elements

    def poll(self, max_records: int) -> list | None:
        split = self._active
        while split is None or split.position >= len(self._elements_of(split)):
            if not self._queue:
                self._active = None
                return None
            split = self._active = self._queue.pop(0)
        pos = split.position
        batch = list(self._elements_of(split)[pos : pos + max_records])
        self._active = CollectionSplit(split.split_id, split.elements, pos + len(batch))
        return batch

    def snapshot_state(self) -> list[CollectionSplit]:
        state = []
        if self._active is not None and self._active.position < len(self._elements_of(self._active)):
            state.append(self._active)
        state.extend(self._queue)
        return state
