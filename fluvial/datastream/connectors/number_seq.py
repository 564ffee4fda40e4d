"""A bounded source of consecutive integers (PyFlink `pyflink.datastream.connectors.number_seq`).

The range is cut into contiguous splits at planning time; a reader hands out whole `range` slices, so the
per-record cost is whatever `list(range(...))` costs in C. This is the source every throughput benchmark
starts from, so `poll` must stay free of per-record Python work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader


@dataclass(frozen=True, slots=True)
class NumberSequenceSplit:
    """The numbers `current..end` (inclusive) not yet emitted; `current > end` means the split is done.

    `current` is the *next* number to emit, so a reader restored from a snapshot starts exactly there.
    """

    split_id: str
    current: int
    end: int

    def is_exhausted(self) -> bool:
        return self.current > self.end


@dataclass(frozen=True, slots=True)
class NumberSequenceSource(Source[NumberSequenceSplit]):
    """Emits every integer from `start` to `end`, both inclusive, then ends (bounded)."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise InvalidJobError(
                f"NumberSequenceSource(start={self.start}, end={self.end}) is empty: start must not exceed end "
                f"(the end is inclusive); swap the bounds or use start == end for a single number"
            )

    def get_boundedness(self) -> Boundedness:
        """BOUNDED when the source ends, CONTINUOUS_UNBOUNDED otherwise."""
        return Boundedness.BOUNDED

    def create_splits(self, parallelism: int) -> list[NumberSequenceSplit]:
        """Cut the range into at most `parallelism` contiguous, non-empty splits of near-equal size.

        Fewer splits than `parallelism` come back only when the range holds fewer numbers; the subtasks left
        without a split end at once.
        """
        if parallelism < 1:
            raise InvalidJobError(f"cannot split a number sequence for parallelism {parallelism}; use 1 or more")
        count = self.end - self.start + 1
        n = min(parallelism, count)
        base, extra = divmod(count, n)
        splits: list[NumberSequenceSplit] = []
        lo = self.start
        for i in range(n):
            size = base + (1 if i < extra else 0)
            splits.append(NumberSequenceSplit(str(i), lo, lo + size - 1))
            lo += size
        return splits

    def create_reader(self, task_info: TaskInfo) -> NumberSequenceReader:
        """The reader of one source subtask.

        Args:
            task_info: The subtask.

        Returns:
            The SourceReader.
        """
        return NumberSequenceReader()

    def default_name(self) -> str:
        """The source's name when `from_source` gives none."""
        return "Sequence Source"


class NumberSequenceReader(SourceReader[NumberSequenceSplit]):
    """Reads its splits one after another. The active split lives in two ints so `poll` touches no objects."""

    __slots__ = ("_queue", "_split_id", "_current", "_end")

    def __init__(self) -> None:
        self._queue: list[NumberSequenceSplit] = []
        self._split_id = ""
        self._current = 1
        self._end = 0  # current > end: no active split

    def add_splits(self, splits: list[NumberSequenceSplit]) -> None:
        self._queue.extend(splits)

    def poll(self, max_records: int) -> Sequence | None:
        cur = self._current
        if cur > self._end and not self._activate_next():
            return None
        cur = self._current
        stop = min(cur + max_records, self._end + 1)
        self._current = stop
        return range(cur, stop)  # a read-only sequence: consumers iterate it at C speed, nothing is materialized

    def current_split_id(self) -> str:
        """The split the last `poll` read from (splits are read one after another)."""
        return self._split_id

    def _activate_next(self) -> bool:
        """Make the next non-empty queued split active; False when none is left."""
        while self._queue:
            split = self._queue.pop(0)
            if not split.is_exhausted():
                self._split_id, self._current, self._end = split.split_id, split.current, split.end
                return True
        return False

    def snapshot_state(self) -> list[NumberSequenceSplit]:
        state = []
        if self._current <= self._end:
            state.append(NumberSequenceSplit(self._split_id, self._current, self._end))
        state.extend(self._queue)
        return state
