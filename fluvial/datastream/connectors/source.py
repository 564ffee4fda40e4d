"""The source contract (Flink's FLIP-27 shape, simplified): a picklable Source description splits the input;
each subtask builds a SourceReader for the splits assigned to it.

Runtime contract, numbered as it happens:
1. At planning, `Source.create_splits(parallelism)` returns every split of the input; split i goes to
   subtask `i % parallelism`.
2. On the task thread, `create_reader(task_info)` builds the reader, then `add_splits(...)` hands it its
   splits (fresh ones, or the ones a checkpoint recorded, with their positions).
3. `poll(max_records)` is called repeatedly on the task thread. It never blocks for long: it returns a list
   (possibly empty: "nothing now, ask again soon") or None when every split is exhausted (end of input).
   A reader that returns each poll's records from one split may say which through an optional
   `current_split_id()`; watermarks are then generated per split (DESIGN 2.4), and a split the reader moved
   on from no longer holds the subtask's watermark back.
4. `snapshot_state()` returns splits carrying their current positions, such that a reader given them resumes
   with the first record not yet returned by `poll` (no record twice, none skipped).
5. `close()` is called once, last, also on failure.
"""

from __future__ import annotations

import abc
import enum
from typing import Any, Generic, Protocol, TypeVar

from fluvial.common.task_info import TaskInfo

SplitT = TypeVar("SplitT")


class Boundedness(enum.Enum):
    BOUNDED = "BOUNDED"
    CONTINUOUS_UNBOUNDED = "CONTINUOUS_UNBOUNDED"


class SourceSplit(Protocol):
    split_id: str


class SourceReader(abc.ABC, Generic[SplitT]):
    @abc.abstractmethod
    def add_splits(self, splits: list[SplitT]) -> None: ...

    @abc.abstractmethod
    def poll(self, max_records: int) -> list | None: ...

    @abc.abstractmethod
    def snapshot_state(self) -> list[SplitT]: ...

    def close(self) -> None:
        pass


class Source(abc.ABC, Generic[SplitT]):
    """A picklable description of an input; builds its readers at run time."""

    @abc.abstractmethod
    def get_boundedness(self) -> Boundedness: ...

    @abc.abstractmethod
    def create_splits(self, parallelism: int) -> list[SplitT]: ...

    @abc.abstractmethod
    def create_reader(self, task_info: TaskInfo) -> SourceReader[SplitT]: ...

    def max_parallelism(self) -> int | None:
        """The most subtasks this source can feed (None: no limit). from_collection answers 1."""
        return None

    def default_name(self) -> str:
        return "Custom Source"


def assign_splits(splits: list[Any], parallelism: int, subtask_index: int) -> list[Any]:
    """Split i goes to subtask i % parallelism: the same answer in every process."""
    return splits[subtask_index::parallelism]
