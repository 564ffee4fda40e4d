"""HybridSource (PyFlink `pyflink.datastream.connectors.hybrid_source`): bounded sources read one after
another, then a last one that may be unbounded (e.g. files of history, then a live feed).

`HybridSource.builder(first).add_source(second)...build()`. Every source but the last must be bounded.

Runtime contract (beyond `source.py`):
1. At planning every source is split for the job's parallelism; each split is wrapped with the position of
   its source, and split i of a source goes to subtask i % parallelism, as for any source.
2. A subtask's reader reads the splits of the lowest source position it holds; when the reader of that
   source reports its end (None), it switches to the next position. So each subtask switches when it has
   read its own part of a source: the switch is per subtask (Flink's enumerator switches all subtasks
   together, which needs a source coordinator fluvial does not have yet).
3. A checkpoint holds the current source's splits with their positions, then the untouched splits of later
   sources, so a restored reader resumes in the right source at the right record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

__all__ = ["HybridSource", "HybridSourceBuilder", "HybridSplit"]


@dataclass(frozen=True, slots=True)
class HybridSplit:
    """A split of the source at `position` in the chain."""

    position: int
    split: Any

    @property
    def split_id(self) -> str:
        return f"{self.position}:{getattr(self.split, 'split_id', self.split)}"


def _check_source(source: Any) -> Any:
    if not (hasattr(source, "create_reader") and hasattr(source, "create_splits")):
        raise InvalidJobError(f"HybridSource chains Sources (e.g. FileSource, NumberSequenceSource), got {source!r}")
    return source


class HybridSource(Source[HybridSplit]):
    """Sources read one after another: the next starts when the previous ends (PyFlink's `HybridSource`),
    e.g. files of the past, then Kafka.
    """

    def __init__(self, sources: tuple[Any, ...]) -> None:
        for source in sources[:-1]:
            if source.get_boundedness() is not Boundedness.BOUNDED:
                raise InvalidJobError(
                    f"every source of a HybridSource but the last must be bounded; {source!r} is not "
                    "(a continuously monitored FileSource can only come last)"
                )
        self.sources = tuple(sources)

    @staticmethod
    def builder(first_source: Any) -> HybridSourceBuilder:
        """Start a HybridSource with its first source.

        Args:
            first_source: A bounded source.

        Returns:
            The builder.
        """
        return HybridSourceBuilder(first_source)

    def get_boundedness(self) -> Boundedness:
        """BOUNDED when the source ends, CONTINUOUS_UNBOUNDED otherwise."""
        return self.sources[-1].get_boundedness()

    def create_splits(self, parallelism: int) -> list[HybridSplit]:
        """Per source, its splits laid out so that each lands on the subtask it would land on alone."""
        result: list[HybridSplit] = []
        for position, source in enumerate(self.sources):
            splits = source.create_splits(parallelism)
            per_subtask = [splits[i::parallelism] for i in range(parallelism)]
            rounds = max((len(p) for p in per_subtask), default=0)
            for round_index in range(rounds):
                for subtask in range(parallelism):
                    if round_index < len(per_subtask[subtask]):
                        result.append(HybridSplit(position, per_subtask[subtask][round_index]))
                    else:
                        result.append(HybridSplit(position, None))  # a hole, so later splits keep their subtask
        return result

    def create_reader(self, task_info: TaskInfo) -> HybridSourceReader:
        """The reader of one source subtask.

        Args:
            task_info: The subtask.

        Returns:
            The SourceReader.
        """
        return HybridSourceReader(self.sources, task_info)

    def max_parallelism(self) -> int | None:
        """The lowest max parallelism of its sources, or None."""
        limits = [m for m in (s.max_parallelism() for s in self.sources) if m is not None]
        return min(limits) if limits else None

    def default_name(self) -> str:
        """The source's name when `from_source` gives none."""
        return "HybridSource"

    def locations(self) -> tuple[str, ...]:
        """The paths its sources read."""
        return tuple(location for source in self.sources for location in source.locations())


class HybridSourceBuilder:
    """Builds a HybridSource: `add_source` each next source, then `build()`."""

    def __init__(self, first_source: Any) -> None:
        self._sources = [_check_source(first_source)]

    def add_source(self, source: Any) -> HybridSourceBuilder:
        """Read `source` after the ones added before (all but the last must be bounded).

        Args:
            source: The source.

        Returns:
            This builder.
        """
        self._sources.append(_check_source(source))
        return self

    def build(self) -> HybridSource:
        """The HybridSource."""
        return HybridSource(tuple(self._sources))


class HybridSourceReader(SourceReader[HybridSplit]):
    def __init__(self, sources: tuple[Any, ...], task_info: TaskInfo) -> None:
        self._sources = sources
        self._task_info = task_info
        self._pending: dict[int, list[Any]] = {}
        self._position: int | None = None
        self._reader: Any = None

    def add_splits(self, splits: list[HybridSplit]) -> None:
        for split in splits:
            if split.split is not None:
                self._pending.setdefault(split.position, []).append(split.split)

    def _switch(self) -> bool:
        """Open the reader of the next source this subtask holds splits of; False when there is none."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        later = sorted(p for p in self._pending if self._position is None or p > self._position)
        if not later:
            return False
        self._position = later[0]
        self._reader = self._sources[self._position].create_reader(self._task_info)
        self._reader.add_splits(self._pending.pop(self._position))
        return True

    def poll(self, max_records: int) -> Sequence | None:
        while True:
            if self._reader is None and not self._switch():
                return None
            batch = self._reader.poll(max_records)
            if batch is not None:
                return batch
            if not self._switch():
                return None

    def current_split_id(self) -> str | None:
        inner = getattr(self._reader, "current_split_id", None)
        split_id = inner() if callable(inner) else None
        return None if split_id is None else f"{self._position}:{split_id}"

    def snapshot_state(self) -> list[HybridSplit]:
        state: list[HybridSplit] = []
        if self._reader is not None:
            state.extend(HybridSplit(self._position, s) for s in self._reader.snapshot_state())
        for position in sorted(self._pending):
            state.extend(HybridSplit(position, s) for s in self._pending[position])
        return state

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
