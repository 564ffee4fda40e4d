"""The source contract (Flink's FLIP-27 shape, simplified): a picklable Source description splits the input;
each subtask builds a SourceReader for the splits assigned to it.

Runtime contract, numbered as it happens:
1. At planning, `Source.create_splits(parallelism)` returns every split of the input; split i goes to
   subtask `i % parallelism`.
2. On the task thread, `create_reader(context)` builds the reader (`context`: a SourceReaderContext, the
   subtask's TaskInfo plus what its TaskManager offers readers), then `add_splits(...)` hands it its splits
   (fresh ones, or the ones a checkpoint recorded, with their positions).
3. `poll(max_records)` is called repeatedly on the task thread. It never blocks for long: it returns a list
   (possibly empty: "nothing now, ask again soon") or None when every split is exhausted (end of input).
   A reader that returns each poll's records from one split may say which through `current_split_id()`;
   watermarks are then generated per split (DESIGN 2.4), and a split the reader moved on from no longer holds
   the subtask's watermark back.
4. `snapshot_state()` returns splits carrying their current positions, such that a reader given them resumes
   with the first record not yet returned by `poll` (no record twice, none skipped); right after it,
   `on_snapshot(checkpoint_id)` says which checkpoint those positions belong to. When that checkpoint
   completes, `notify_checkpoint_complete(checkpoint_id)` (a reader may then release what it kept for replay).
5. `close()` is called once, last, also on failure.
The optional hooks (`current_split_id`, `on_snapshot`, `notify_checkpoint_complete`, `close`) do nothing by
default.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from fluvial.common.task_info import TaskInfo

SplitT = TypeVar("SplitT")


class Boundedness(enum.Enum):
    BOUNDED = "BOUNDED"
    CONTINUOUS_UNBOUNDED = "CONTINUOUS_UNBOUNDED"


class SourceSplit(Protocol):
    split_id: str


@dataclass(frozen=True)
class SourceReaderContext(TaskInfo):
    """What a reader is built with: who its subtask is (every TaskInfo field), and the services its TaskManager
    offers readers — `receivers`, the receiver streams of the job (for receiver sources), else None.
    Its `operator_id` (a TaskInfo field) is the source operator's id (its uid, else its position in the job):
    what stays the same when the job runs again, so what a reader keeps outside checkpoints is found again by a
    restored run. `metric_group` is the source operator's metric group (None where a reader runs without a
    task)."""

    receivers: Any = None
    metric_group: Any = None  # the source operator's MetricGroup, for a reader's own metrics


class SourceReader(abc.ABC, Generic[SplitT]):
    @abc.abstractmethod
    def add_splits(self, splits: list[SplitT]) -> None: ...

    @abc.abstractmethod
    def poll(self, max_records: int) -> Sequence | None:
        """At most `max_records` records: a list, or another read-only sequence where the reader has one for free
        (NumberSequenceSource returns a `range`); `[]` when none is ready now (never block); None at the end."""

    @abc.abstractmethod
    def snapshot_state(self) -> list[SplitT]: ...

    def current_split_id(self) -> Any:
        """The split the last poll's records came from, when they all came from one (None: not known)."""
        return None

    def on_snapshot(self, checkpoint_id: int) -> None:
        """The positions `snapshot_state` just returned belong to checkpoint `checkpoint_id`."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint `checkpoint_id` completed: what it recorded need not be replayed again."""

    def close(self) -> None:
        """Release what the reader holds; called once, last, also on failure."""


class Source(abc.ABC, Generic[SplitT]):
    """A picklable description of an input; builds its readers at run time. `uses_receivers`: its readers
    read a receiver stream, so the TaskManager that runs them supervises receivers for the job."""

    uses_receivers = False

    @abc.abstractmethod
    def get_boundedness(self) -> Boundedness:
        """Whether the source ends (BOUNDED) or not."""

    @abc.abstractmethod
    def create_splits(self, parallelism: int) -> list[SplitT]:
        """Divide the source's work into splits (files, partitions, ranges).

        Args:
            parallelism: The source's parallelism.

        Returns:
            The splits.
        """

    @abc.abstractmethod
    def create_reader(self, task_info: TaskInfo) -> SourceReader[SplitT]:
        """The reader of one source subtask.

        Args:
            task_info: The subtask.

        Returns:
            The SourceReader.
        """

    def max_parallelism(self) -> int | None:
        """The most subtasks this source can feed (None: no limit). from_collection answers 1."""
        return None

    def default_name(self) -> str:
        """The source's name when `from_source` gives none."""
        return "Custom Source"

    def locations(self) -> tuple[str, ...]:
        """The paths or URLs this source reads, checked before its job goes to TaskManagers in other processes
        (a `memory://` file exists in one process only). None by default."""
        return ()


def assign_splits(splits: list[Any], parallelism: int, subtask_index: int) -> list[Any]:
    """Split i goes to subtask i % parallelism: the same answer in every process."""
    return splits[subtask_index::parallelism]
