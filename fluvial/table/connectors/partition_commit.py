"""The partition commit of the filesystem sink (`sink.partition-commit.*`): a `_SUCCESS` file in a partition's
directory once the partition is complete, written only after the checkpoint that committed its last files.

Flink runs a committer task of parallelism 1 that hears from every writer after each checkpoint. fluvial's
sink has no task after its writers, so the writers commit together through the file system: after a writer
has committed its part files of a checkpoint (`FileSink.commit`), it records its progress in
`<path>/_partition-commit/<sink>/<subtask>-of-<parallelism>` (written whole, then moved in place): how many
checkpoints it has committed, its watermark then, whether its input has ended, and the partitions it wrote
that are not committed yet with the time it first wrote each. Then it reads every writer's progress and commits
each listed partition that the trigger allows:

- `process-time`: every writer has committed the checkpoint that listed the partition (or has ended), and the
  time is at least the partition's creation time plus `sink.partition-commit.delay`;
- `partition-time`: the smallest committed watermark of the writers (an ended writer counts as the end of
  time) is at least the partition's time (`partition.time-extractor.*`) plus the delay;
- and once every writer's input has ended (a bounded job), every partition, as Flink's committer does at the end
  of input.

So a partition is committed once, by whichever writer sees the condition first (another that sees it too writes
the same empty file again), and never before every file written to it before the deciding checkpoint is
visible. The directory starts with `_`, so a source reading `path` never sees it; the writer that finds every
writer's input ended removes it. A writer forgets a partition once it committed it itself and has not written
it since.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fluvial.common.task_info import TaskInfo
from fluvial.common.time import MAX_WATERMARK, MIN_WATERMARK
from fluvial.datastream.connectors import file_systems as fsys
from fluvial.datastream.connectors.file_sink import (
    FileSink,
    FileSinkWriter,
    FileSinkWriterState,
    PendingFile,
    _sink_mark,
)
from fluvial.table.connectors.partitions import PartitionTimeExtractor

__all__ = ["PartitionCommitConfig", "PartitionCommitSink", "PartitionProgress"]

log = logging.getLogger(__name__)

PROGRESS_DIRECTORY = "_partition-commit"


@dataclass(frozen=True)
class PartitionCommitConfig:
    """When a partition is complete (`trigger`, `delay_ms`, `extractor`) and what committing it does."""

    trigger: str  # "process-time" or "partition-time"
    delay_ms: int
    success_file_name: str
    extractor: PartitionTimeExtractor

    def ready(self, partition: str, created: int, listed_at: int, progress: list[PartitionProgress], now: int) -> bool:
        if all(p.finished for p in progress):
            return True  # the input has ended: every partition is complete, whatever the trigger and the delay
        if self.trigger == "partition-time":
            watermark = min(MAX_WATERMARK if p.finished else p.watermark for p in progress)
            return watermark >= self.extractor.millis(partition) + self.delay_ms
        return all(p.finished or p.sequence >= listed_at for p in progress) and now >= created + self.delay_ms


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    """One writer's committable next to its part files: its progress as of one checkpoint."""

    mark: str
    subtask: int
    parallelism: int
    sequence: int
    watermark: int
    finished: bool
    pending: tuple[tuple[str, int, int], ...]  # (partition, created ms, sequence that listed it)

    def to_json(self) -> str:
        return json.dumps(
            {
                "sequence": self.sequence,
                "watermark": self.watermark,
                "finished": self.finished,
                "pending": [list(p) for p in self.pending],
            }
        )

    @staticmethod
    def from_json(text: str, mark: str, subtask: int, parallelism: int) -> PartitionProgress:
        data = json.loads(text)
        pending = tuple((str(p), int(c), int(s)) for p, c, s in data["pending"])
        return PartitionProgress(
            mark, subtask, parallelism, data["sequence"], data["watermark"], data["finished"], pending
        )


@dataclass(frozen=True, slots=True)
class PartitionWriterState:
    """The partition side of a writer's state: its checkpoint count and the partitions not yet committed."""

    subtask_index: int
    sequence: int
    pending: tuple[tuple[str, int, int], ...]


# Writers by (sink mark, subtask): `commit` runs on the writer's task thread and tells the writer which partitions
# it committed, so the writer stops listing them.
_WRITERS: dict[tuple[str, int], PartitionCommitWriter] = {}


@dataclass(frozen=True, slots=True)
class PartitionCommitSink(FileSink):
    """A FileSink whose writers also commit partitions (see the module docstring)."""

    partition_commit: PartitionCommitConfig | None = field(default=None)

    def create_writer(self, task_info: TaskInfo, restored_state: list[Any] | None = None) -> FileSinkWriter:
        return PartitionCommitWriter(self, task_info, restored_state)

    def commit(self, committables: list[Any]) -> None:
        FileSink.commit(self, [c for c in committables if isinstance(c, PendingFile)])
        progress = [c for c in committables if isinstance(c, PartitionProgress)]
        if progress and self.partition_commit is not None:
            self._commit_partitions(progress[-1])

    def _commit_partitions(self, own: PartitionProgress) -> None:
        config = self.partition_commit
        assert config is not None
        directory = fsys.join(self.base_path, PROGRESS_DIRECTORY, own.mark)
        fsys.make_dirs(directory)
        try:
            _write_whole(fsys.join(directory, f"{own.subtask}-of-{own.parallelism}"), own.to_json().encode())
        except FileNotFoundError:  # another writer, seeing every writer finished, removed the directory
            fsys.make_dirs(directory)
            _write_whole(fsys.join(directory, f"{own.subtask}-of-{own.parallelism}"), own.to_json().encode())
        everyone = [own]
        for subtask in range(own.parallelism):
            if subtask == own.subtask:
                continue
            path = fsys.join(directory, f"{subtask}-of-{own.parallelism}")
            try:
                with fsys.open_for_read(path) as handle:
                    everyone.append(
                        PartitionProgress.from_json(handle.read().decode(), own.mark, subtask, own.parallelism)
                    )
            except FileNotFoundError:
                return  # a writer that has committed nothing yet: no partition is complete
        now = int(time.time() * 1000)
        # a partition several writers list is complete when it is for each of them (the latest writes decide)
        entries: dict[str, list[tuple[int, int]]] = {}
        for progress in everyone:
            for partition, created, listed_at in progress.pending:
                entries.setdefault(partition, []).append((created, listed_at))
        committed = []
        for partition, listed in entries.items():
            if all(config.ready(partition, created, listed_at, everyone, now) for created, listed_at in listed):
                _write_whole(fsys.join(self.base_path, partition, config.success_file_name), b"")
                log.info("committed partition %s of %s (%s)", partition, self.base_path, config.trigger)
                committed.append(partition)
        writer = _WRITERS.get((own.mark, own.subtask))
        if writer is not None and committed:
            writer.partitions_committed(committed, own.sequence)
        if all(p.finished for p in everyone):  # every partition is committed: the progress is of no more use
            for path in fsys.find_named(directory, lambda name: True):
                fsys.remove_file(path)
            _remove_directory(directory)
            _remove_directory(fsys.join(self.base_path, PROGRESS_DIRECTORY))


def _remove_directory(path: str) -> None:
    """Remove an empty directory; one that is gone or still holds files (another sink's) stays as it is."""
    try:
        if fsys.is_local(path):
            os.rmdir(path)
        else:
            fs, inner = fsys.filesystem(path)
            if not fs.ls(inner):
                fs.rmdir(inner)
    except OSError:
        pass


def _write_whole(path: str, data: bytes) -> None:
    """Write a file under a hidden name, then move it in place: a reader sees all of it or none."""
    directory, _, name = path.rpartition("/") if not fsys.is_local(path) else path.rpartition(os.sep)
    hidden = f"{directory}{path[len(directory)]}.{name}.{uuid.uuid4()}"
    with fsys.open_for_new_file(hidden) as handle:
        handle.write(data)
    fsys.commit_file(hidden, path)


class PartitionCommitWriter(FileSinkWriter):
    """A FileSink writer that remembers the partitions it writes and its watermark, and hands its progress to
    `commit` with every checkpoint's part files."""

    def __init__(self, sink: PartitionCommitSink, task_info: TaskInfo, restored_state: list[Any] | None = None) -> None:
        restored = list(restored_state or ())
        own = [s for s in restored if isinstance(s, PartitionWriterState)]
        files = [s for s in restored if isinstance(s, FileSinkWriterState)]
        super().__init__(sink, task_info, None if restored_state is None else files)
        self._task = task_info
        self._sequence = max((s.sequence for s in own), default=0)
        # partition -> (created ms, the sequence of the checkpoint that will list it, last written at sequence)
        self._pending: dict[str, tuple[int, int]] = {}
        for state in own:
            for partition, created, listed_at in state.pending:
                self._pending.setdefault(partition, (created, listed_at))
        self._watermark = MIN_WATERMARK
        self._finished = False
        self._key = (_sink_mark(task_info, sink.base_path) or "sink", task_info.subtask_index)
        _WRITERS[self._key] = self

    def _open_part(self, bucket: str, now: int) -> Any:
        entry = self._pending.get(bucket)
        self._pending[bucket] = (now if entry is None else entry[0], self._sequence + 1)
        return super()._open_part(bucket, now)

    def write_watermark(self, timestamp: int) -> None:
        self._watermark = timestamp

    def flush(self, end_of_input: bool) -> None:
        super().flush(end_of_input)
        if end_of_input:
            self._finished = True

    def prepare_commit(self) -> list[Any]:
        committables = super().prepare_commit()
        self._sequence += 1
        progress = PartitionProgress(
            self._key[0],
            self._task.subtask_index,
            self._task.parallelism,
            self._sequence,
            MAX_WATERMARK if self._finished else self._watermark,
            self._finished,
            tuple((p, created, listed_at) for p, (created, listed_at) in sorted(self._pending.items())),
        )
        return [*committables, progress]

    def partitions_committed(self, partitions: list[str], sequence: int) -> None:
        """Forget the partitions committed as of `sequence` that were not written after it."""
        for partition in partitions:
            entry = self._pending.get(partition)
            if entry is not None and entry[1] <= sequence:
                del self._pending[partition]

    def snapshot_state(self) -> list[Any]:
        pending = tuple((p, created, listed_at) for p, (created, listed_at) in sorted(self._pending.items()))
        return [*super().snapshot_state(), PartitionWriterState(self._task.subtask_index, self._sequence, pending)]

    def close(self) -> None:
        super().close()
        if _WRITERS.get(self._key) is self:
            del _WRITERS[self._key]
