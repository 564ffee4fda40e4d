"""A subtask's part in checkpoints (Flink's SubtaskCheckpointCoordinator, DESIGN 2.3): snapshot on the task
thread, persist off it, answer through a CheckpointResponder.

It is handed what it works on — the operator chain, the record writers, the source input (for a source
subtask) — and never sees the Task. `checkpoint_state(barrier)` runs, numbered:
1. On the task thread, between buffers: a source subtask got a trigger (a mail); any other subtask has
   aligned the barriers of every input (`runtime.alignment`). The savepoint of a stop-with-savepoint --drain
   first finishes the operators (end of input), so what they emit at the end goes ahead of the barrier.
2. Each operator, head first, emits what it holds outside its state (`prepare_snapshot_pre_barrier`: a
   mini-batch's bundle); then the barrier goes out on every output channel, before any later record.
3. Synchronous part: every operator freezes its state (`snapshot_state`: the keyed backend's pending snapshot,
   timers, operator state; no I/O); a source adds its split positions.
   An unaligned checkpoint (`runtime.alignment`) waits here until its in-flight data is complete
   (`channel_state_complete`), which is written with the operators' state, on the head operator.
   A synchronous savepoint (stop-with-savepoint) then suspends the task (`on_synchronous_savepoint`): see
   `runtime.task`.
4. Asynchronous part, on the TaskManager's checkpoint I/O executor: keyed backends write their pending
   snapshots, then timers and operator state are pickled and written through the checkpoint storage, and the
   handles are acknowledged. A failure there declines the checkpoint (ASYNC_ERROR); the task keeps running.
When the JobMaster says a checkpoint completed or was aborted, the Task tells the chain (and the source).
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.snapshots import OperatorRestore, OperatorSnapshot, RestoreAssignment
from fluvial.checkpoint.stop_mode import StopMode
from fluvial.common.errors import UnreadableStateError
from fluvial.common.executors import Executor
from fluvial.common.repeated_logs import limit_repeats
from fluvial.common.task_info import TaskInfo
from fluvial.runtime.alignment import BarrierStats
from fluvial.runtime.records import CheckpointBarrier
from fluvial.state.snapshot import SnapshotType

if TYPE_CHECKING:
    from fluvial.checkpoint.metadata import SubtaskState

logger = logging.getLogger(__name__)
limit_repeats(logger)  # a failure loop says what fails, not 40 lines a second

SOURCE_SPLITS = "source-splits"


class CheckpointResponder(Protocol):
    """How a subtask answers the CheckpointCoordinator (Flink's CheckpointResponder); the TaskManager turns each
    call into an AcknowledgeCheckpoint or DeclineCheckpoint message to the JobMaster."""

    def acknowledge(
        self, checkpoint_id: int, states: dict[str, SubtaskState], metrics: CheckpointMetricsReport | None = None
    ) -> None: ...

    def decline(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None: ...


@dataclass(frozen=True, slots=True)
class CheckpointMetricsReport:
    """What a subtask reports with its acknowledgement for the checkpoint statistics (Flink's CheckpointMetrics):
    how long its barriers took to align, how many bytes of in-flight data it persisted, whether the checkpoint
    was unaligned here."""

    alignment_duration_ms: int = 0
    persisted_data: int = 0
    unaligned: bool = False


class CheckpointStorageProvider(Protocol):
    """The storage a subtask's state goes to: the job's checkpoint storage, or a savepoint directory."""

    def checkpoint_storage(self) -> Any: ...

    def savepoint_storage(self, directory: str) -> Any: ...


class _SubtaskStateWriter:
    """The StateWriter a keyed backend writes one operator's files through (names made unique per subtask)."""

    __slots__ = ("_storage", "_checkpoint_id", "_prefix")

    def __init__(self, storage: Any, checkpoint_id: int, prefix: str) -> None:
        self._storage = storage
        self._checkpoint_id = checkpoint_id
        self._prefix = prefix

    def write(self, name: str, data: bytes) -> Any:
        return self._storage.write_state(self._checkpoint_id, f"{self._prefix}-{name}", data)

    def write_shared(self, name: str, data: bytes) -> Any:
        return self._storage.write_shared(f"{self._prefix}-{name}", data)


class SubtaskCheckpointCoordinator:
    def __init__(
        self,
        chain: Any,
        writers: list[Any],
        source_input: Any,
        storage: CheckpointStorageProvider,
        io: Executor,
        responder: CheckpointResponder,
        task_info: TaskInfo,
    ) -> None:
        self._chain = chain
        self._writers = writers
        self._source = source_input  # the SourceInput of a source subtask, else None
        self._storage = storage
        self._io = io
        self._responder = responder
        self._info = task_info
        self._input_finished = False
        self._final_checkpoints: set[int] = set()
        self.channel_keys: list[str] = []  # input channel index → its key in channel state (set by the Task)
        # the Task's hook for a synchronous savepoint (stop-with-savepoint): called once its snapshot is taken
        self.on_synchronous_savepoint: Callable[[int], None] | None = None
        self._awaiting_channels: dict[int, tuple[list[OperatorSnapshot], Any, BarrierStats]] = {}

    # -- the final checkpoint (FLIP-147) ------------------------------------------------------------------------

    def input_finished(self) -> None:
        """The task's input and operators have finished: every checkpoint it takes from now on covers all it
        will ever emit, so each can be its final checkpoint."""
        self._input_finished = True

    def is_final_checkpoint(self, checkpoint_id: int) -> bool:
        """Whether `checkpoint_id` is a checkpoint (never a savepoint: restores do not start from those) that
        this task took after its input finished."""
        return checkpoint_id in self._final_checkpoints

    # -- taking a checkpoint ------------------------------------------------------------------------------------

    def checkpoint_state(self, barrier: CheckpointBarrier, stats: BarrierStats = BarrierStats()) -> None:
        """Steps 2 to 4 (see the module docstring). A failure of the synchronous part raises: it fails the task."""
        checkpoint_id = barrier.checkpoint_id
        if self._input_finished and barrier.savepoint_dir is None:
            self._final_checkpoints.add(checkpoint_id)
        if barrier.stop is StopMode.DRAIN:
            # end of input ahead of the barrier, as Flink's EndOfData(DRAIN): operators finish into the
            # savepoint's output; one still awaiting asynchronous results keeps them in its snapshot
            self._chain.finish()
        for operator in self._chain.order:  # what operators hold outside state goes out before the barrier
            operator.prepare_snapshot_pre_barrier(checkpoint_id)
        for writer in self._writers:  # 2
            writer.broadcast_event(barrier)
        snapshot_type = SnapshotType.SAVEPOINT if barrier.savepoint_dir is not None else SnapshotType.CHECKPOINT
        snapshots = []  # 3
        try:
            for operator in self._chain.order:
                snapshot = operator.snapshot_state(checkpoint_id, snapshot_type)
                if snapshot is not None:
                    snapshots.append(snapshot)
            if self._source is not None:
                self._add_source_splits(snapshots, checkpoint_id)
        except BaseException:
            _discard(snapshots)
            raise
        storage = (
            self._storage.checkpoint_storage()
            if barrier.savepoint_dir is None
            else self._storage.savepoint_storage(barrier.savepoint_dir)
        )
        if barrier.stop is not None and self.on_synchronous_savepoint is not None:
            self.on_synchronous_savepoint(checkpoint_id)  # savepoints are always aligned: never unaligned below
        if stats.unaligned:
            self._awaiting_channels[checkpoint_id] = (snapshots, storage, stats)
            return
        self._io.execute(lambda: self._persist(checkpoint_id, snapshots, storage, stats))  # 4

    def channel_state_complete(self, checkpoint_id: int, channels: dict[int, list[Any]]) -> None:
        """An unaligned checkpoint's in-flight data is complete: persist it with the snapshot taken before."""
        waiting = self._awaiting_channels.pop(checkpoint_id, None)
        if waiting is None:
            return
        snapshots, storage, stats = waiting
        keys = self.channel_keys
        in_flight = {keys[index]: items for index, items in channels.items() if items}
        self._io.execute(lambda: self._persist(checkpoint_id, snapshots, storage, stats, in_flight))

    def _add_source_splits(self, snapshots: list[OperatorSnapshot], checkpoint_id: int) -> None:
        head_id = self._chain.head.context.operator_id
        head = next((s for s in snapshots if s.operator_id == head_id), None)
        if head is None:
            head = OperatorSnapshot(head_id)
            snapshots.insert(0, head)
        head.operator_state[SOURCE_SPLITS] = self._source.snapshot_splits(checkpoint_id)

    def _persist(
        self,
        checkpoint_id: int,
        snapshots: list[OperatorSnapshot],
        storage: Any,
        stats: BarrierStats = BarrierStats(),
        in_flight: dict[str, list[Any]] | None = None,
    ) -> None:
        from fluvial.checkpoint.storage import SubtaskState

        index = self._info.subtask_index
        persisted = 0
        try:
            states = {}
            channel_handles = []
            head_id = None
            if in_flight:
                head_id = self._chain.head.context.operator_id
                data = pickle.dumps(in_flight, protocol=5)
                persisted = len(data)
                channel_handles.append(storage.write_state(checkpoint_id, f"{head_id}-{index}-channel", data))
                if not any(snapshot.operator_id == head_id for snapshot in snapshots):
                    snapshots.insert(0, OperatorSnapshot(head_id))
            for snapshot in snapshots:
                name = f"{snapshot.operator_id}-{index}"
                keyed, operator, shared = [], [], []
                if snapshot.keyed is not None or snapshot.timers:
                    handle = None
                    if snapshot.keyed is not None:
                        handle = snapshot.keyed.write(_SubtaskStateWriter(storage, checkpoint_id, name))
                        snapshot.keyed = None
                        shared.extend(handle.shared_handles())
                    data = pickle.dumps((handle, snapshot.timers or {}), protocol=5)
                    keyed.append(storage.write_state(checkpoint_id, f"{name}-keyed", data))
                if snapshot.operator_state:
                    data = pickle.dumps(snapshot.operator_state, protocol=5)
                    operator.append(storage.write_state(checkpoint_id, f"{name}-op", data))
                channels = channel_handles if snapshot.operator_id == head_id else []
                states[snapshot.operator_id] = SubtaskState(
                    keyed=keyed, operator=operator, raw={}, shared=shared, input_channel=channels
                )
        except BaseException as error:  # noqa: BLE001 - a failed write declines the checkpoint, not the job
            _discard(snapshots)
            logger.warning(
                "%s could not write its state for checkpoint %d: %s: %s",
                self._info.task_name_with_subtasks,
                checkpoint_id,
                type(error).__name__,
                error,
            )
            self._responder.decline(
                checkpoint_id, CheckpointFailureReason.ASYNC_ERROR, f"{type(error).__name__}: {error}"
            )
            return
        self._responder.acknowledge(
            checkpoint_id, states, CheckpointMetricsReport(stats.alignment_duration_ms, persisted, stats.unaligned)
        )

    def abort_checkpoint(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None:
        """This subtask takes no part in `checkpoint_id` (a newer barrier overtook it, or it was not running)."""
        waiting = self._awaiting_channels.pop(checkpoint_id, None)
        if waiting is not None:
            _discard(waiting[0])
        self._responder.decline(checkpoint_id, reason, detail)

    def close(self) -> None:
        """The task ends: unaligned checkpoints still waiting for in-flight data never complete here."""
        for snapshots, _, _ in self._awaiting_channels.values():
            _discard(snapshots)
        self._awaiting_channels.clear()

    # -- restoring ----------------------------------------------------------------------------------------------

    @staticmethod
    def load(assignment: RestoreAssignment, operator_id: str, info: TaskInfo) -> OperatorRestore:
        """Read this subtask's share of one operator's state (on the task thread, before it opens). Handles
        name their own location, so a savepoint restores without the storage that wrote it."""
        from fluvial.checkpoint.restore import share_of_operator_state
        from fluvial.checkpoint.storage import read_state_handle

        restore = OperatorRestore(
            operator_id, checkpoint_id=assignment.checkpoint_id, owned=assignment.owned, reader=read_state_handle
        )
        for blob in assignment.keyed_handles:
            keyed, timers = _unpickle(read_state_handle(blob), blob, operator_id)
            restore.sources.append(_where(blob))
            if keyed is not None:
                restore.keyed.append(keyed)
            for key_group, group_timers in timers.items():
                restore.timers.setdefault(key_group, {})
                for domain, items in group_timers.items():
                    restore.timers[key_group].setdefault(domain, []).extend(items)
        for handle in assignment.input_channel_handles:
            for key, items in _unpickle(read_state_handle(handle), handle, operator_id).items():
                restore.channel_state.setdefault(key, []).extend(items)
        per_old_subtask = [
            [_unpickle(read_state_handle(handle), handle, operator_id) for handle in handles]
            for handles in assignment.operator_handles
        ]
        restore.operator_state = share_of_operator_state(
            per_old_subtask, assignment.old_parallelism, info.subtask_index, info.parallelism
        )
        return restore


def _unpickle(data: bytes, handle: Any, operator_id: str) -> Any:
    """The objects a state handle holds; UnreadableStateError naming the file (or inline state) when they cannot
    be unpickled — a restart would fail the same way, so the job fails at once."""
    try:
        return pickle.loads(data)
    except Exception as error:  # noqa: BLE001 - any unpickling failure means the same: the state is unusable
        raise UnreadableStateError(
            f"the state of operator '{operator_id}' in {_where(handle)} cannot be unpickled ({type(error).__name__}: "
            f"{error}): it is damaged, or was pickled by code this program no longer has (a renamed or removed "
            "class); restore from another checkpoint or savepoint, or bring that code back"
        ) from error


def _where(handle: Any) -> str:
    """A state handle as an error names it: its file, or the name of inline state."""
    path = getattr(handle, "path", None)
    return f"state file {path}" if path else f"inline state '{getattr(handle, 'name', handle)}'"


def _discard(snapshots: list[OperatorSnapshot]) -> None:
    """Give back what pending snapshots hold (e.g. a native checkpoint's local directory)."""
    for snapshot in snapshots:
        if snapshot.keyed is not None:
            try:
                snapshot.keyed.discard()
            except Exception:  # noqa: BLE001 - cleanup only
                logger.debug("discarding a pending snapshot failed", exc_info=True)
