"""The sink contract (Flink's Sink V2 shape): a picklable Sink description builds one SinkWriter per subtask.

Runtime contract:
1. `create_writer(task_info)` on the task thread, before the first record.
2. `write_batch(values)` for each buffer, in order; the list belongs to the runtime (do not keep it).
3. `flush(end_of_input)` when input ends (True) and before a checkpoint barrier (False).
4. Two-phase commit (sinks that return committables): `prepare_commit()` after `flush` at a checkpoint
   barrier returns the committables of that checkpoint; when the checkpoint completes, `commit(committables)`
   makes them visible. Commit must be idempotent: after a restore the same committables may be committed again.
   At end of input of a bounded job, the runtime prepares and commits the final committables itself.
5. `write_watermark(timestamp)` for each watermark that reaches the sink (Flink's `writeWatermark`), before
   it goes on.
6. `snapshot_state()` returns the writer's own state (e.g. in-progress files) for a checkpoint.
7. `close()` once, last, also on failure.
8. A writer with a `set_processing_time_service(service)` method receives the task's processing-time service
   after it is created (Flink's `InitContext.getProcessingTimeService`); its timers run on the task thread.
"""

from __future__ import annotations

import abc
from typing import Any

from fluvial.common.task_info import TaskInfo


class SinkWriter(abc.ABC):
    @abc.abstractmethod
    def write_batch(self, values: list) -> None: ...

    def flush(self, end_of_input: bool) -> None:
        pass

    def write_watermark(self, timestamp: int) -> None:
        """A watermark reached the sink (a partition-time commit waits for it); most writers ignore it."""

    def prepare_commit(self) -> list[Any]:
        return []

    def snapshot_state(self) -> list[Any]:
        return []

    def close(self) -> None:
        pass


class Sink(abc.ABC):
    """A picklable description of an output; builds its writers at run time."""

    @abc.abstractmethod
    def create_writer(self, task_info: TaskInfo, restored_state: list[Any] | None = None) -> SinkWriter:
        """The writer of one sink subtask.

        Args:
            task_info: The subtask.
            restored_state: Its checkpointed state, or None.

        Returns:
            The SinkWriter.
        """

    def commit(self, committables: list[Any]) -> None:
        """Make prepared committables visible. Idempotent. Runs on the writer's task thread."""

    def default_name(self) -> str:
        """The sink's name when none is given."""
        return "Sink"

    def locations(self) -> tuple[str, ...]:
        """The paths or URLs this sink writes, checked before its job goes to TaskManagers in other processes
        (what a TaskManager writes to `memory://` would end with its process). None by default."""
        return ()
