"""A subtask's part in checkpoints (DESIGN 2.3): snapshot on the task thread, persist off it, acknowledge.

Protocol, numbered:
1. A source subtask gets a trigger (a mail); any other subtask gets barriers on its inputs and, once aligned
   (fluvial.checkpoint.alignment), performs the checkpoint — both on the task thread, between buffers.
2. Synchronous part: every operator freezes its state (`snapshot_state`: copies, no I/O); a source adds its
   split positions. Then the barrier goes out on every output channel, before any later record.
3. Asynchronous part, on a small thread pool: state is pickled and written through the checkpoint storage;
   the handles are acknowledged to the JobMaster. A failure there declines the checkpoint. The task keeps
   processing meanwhile.
4. When the JobMaster says the checkpoint completed (a mail), operators commit (two-phase-commit sinks);
   when it was aborted, they are told too.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, Callable

from fluvial.checkpoint.snapshots import UNION_PREFIX, OperatorRestore, OperatorSnapshot, RestoreAssignment
from fluvial.runtime.native_state import NativeRocksDBState, NativeUploads, download_native, upload_native
from fluvial.runtime.records import CheckpointBarrier

SOURCE_SPLITS = "source-splits"


@dataclass(frozen=True)
class TaskCheckpointSettings:
    """What a task needs to know about checkpointing (part of its TaskSpec)."""

    exactly_once: bool
    storage: Any  # the storage description; the TaskManager builds the access object from it


class SubtaskCheckpointer:
    def __init__(self, task: Any, storage: Any, savepoint_storage: Callable[[str], Any], pool: Any,
                 acknowledge: Callable[[int, dict], None], decline: Callable[[int, str], None]) -> None:
        self._task = task
        self._storage = storage
        self._savepoint_storage = savepoint_storage
        self._pool = pool
        self._acknowledge = acknowledge
        self._decline = decline
        self._native_uploads = NativeUploads()

    # -- taking a checkpoint ------------------------------------------------------------------------------------

    def perform(self, barrier: CheckpointBarrier) -> None:
        """Steps 2 and 3 on the task thread: freeze, forward the barrier, persist asynchronously."""
        task = self._task
        savepoint = barrier.savepoint_dir is not None
        snapshots = [s for s in (op.snapshot_state(barrier.checkpoint_id, savepoint) for op in task.chain.order) if s]
        if task.spec.vertex.is_source:
            head_id = task.chain.head.context.operator_id
            head = next((s for s in snapshots if s.operator_id == head_id), None)
            if head is None:
                head = OperatorSnapshot(head_id)
                snapshots.insert(0, head)
            head.operator_state[SOURCE_SPLITS] = task.input.snapshot_splits(barrier.checkpoint_id)
        for writer in task.writers:
            writer.broadcast_event(barrier)
        storage = self._storage if barrier.savepoint_dir is None else self._savepoint_storage(barrier.savepoint_dir)
        self._pool.submit(self._persist, barrier.checkpoint_id, snapshots, storage)

    def _persist(self, checkpoint_id: int, snapshots: list[OperatorSnapshot], storage: Any) -> None:
        from fluvial.checkpoint.storage import SubtaskState

        try:
            index = self._task.spec.subtask_index
            states = {}
            for snapshot in snapshots:
                keyed, operator, shared = [], [], []
                name = f"{snapshot.operator_id}-{index}"
                if snapshot.keyed is not None or snapshot.timers:
                    keyed_state = snapshot.keyed
                    if hasattr(keyed_state, "to_snapshot"):  # frozen in the synchronous part, partitioned here
                        keyed_state = keyed_state.to_snapshot()
                    elif hasattr(keyed_state, "new_sst_files"):  # a native RocksDB checkpoint: upload its files
                        keyed_state = upload_native(keyed_state, storage, checkpoint_id, name,
                                                    self._native_uploads, snapshot.operator_id)
                        shared.extend(keyed_state.shared_handles())
                    data = pickle.dumps((keyed_state, snapshot.timers or {}), protocol=5)
                    keyed.append(storage.write_state(checkpoint_id, f"{name}-keyed", data))
                if snapshot.operator_state:
                    data = pickle.dumps(snapshot.operator_state, protocol=5)
                    operator.append(storage.write_state(checkpoint_id, f"{name}-op", data))
                states[snapshot.operator_id] = SubtaskState(keyed=keyed, operator=operator, raw={}, shared=shared)
            self._acknowledge(checkpoint_id, states)
        except BaseException as error:  # noqa: BLE001 - a failed write declines the checkpoint, not the job
            self._decline(checkpoint_id, f"{type(error).__name__}: {error}")

    # -- restoring ----------------------------------------------------------------------------------------------

    def load(self, assignment: RestoreAssignment, operator_id: str) -> OperatorRestore:
        """Read this subtask's share of one operator's state (on the task thread, before it opens). Handles
        name their own location, so a savepoint restores without the storage that wrote it."""
        from fluvial.checkpoint.storage import read_state_handle

        restore = OperatorRestore(operator_id, checkpoint_id=assignment.checkpoint_id)
        natives = []
        for handle in assignment.keyed_handles:
            keyed, timers = pickle.loads(read_state_handle(handle))
            if isinstance(keyed, NativeRocksDBState):
                natives.append(keyed)
                restore.native_keyed.append(download_native(keyed))
            elif keyed is not None:
                restore.keyed.append(keyed)
            for key_group, group_timers in timers.items():
                restore.timers.setdefault(key_group, {})
                for domain, items in group_timers.items():
                    restore.timers[key_group].setdefault(domain, []).extend(items)
        if len(natives) == 1 and natives[0].key_group_range == self._task_key_groups():
            restore.native_base = natives[0]  # same key groups: the restored files are the next diff's base
            self._native_uploads.record(operator_id, assignment.checkpoint_id, natives[0].sst_files)
        restore.operator_state = self._share_of_operator_state(assignment)
        return restore

    def _task_key_groups(self) -> range:
        from fluvial.common.key_groups import key_group_range_for_operator

        info = self._task.info
        return key_group_range_for_operator(info.max_parallelism, info.parallelism, info.subtask_index)

    def _share_of_operator_state(self, assignment: RestoreAssignment) -> dict[str, list]:
        from fluvial.checkpoint.storage import read_state_handle

        info = self._task.info
        per_old_subtask = [
            [pickle.loads(read_state_handle(handle)) for handle in handles]
            for handles in assignment.operator_handles
        ]
        if assignment.old_parallelism == info.parallelism:
            own = per_old_subtask[info.subtask_index] if info.subtask_index < len(per_old_subtask) else []
            merged: dict[str, list] = {}
            for state in own:
                for name, items in state.items():
                    merged.setdefault(name, []).extend(items)
            return merged
        union: dict[str, list] = {}
        for states in per_old_subtask:
            for state in states:
                for name, items in state.items():
                    union.setdefault(name, []).extend(items)
        return {
            name: list(items) if name.startswith(UNION_PREFIX) else items[info.subtask_index::info.parallelism]
            for name, items in union.items()
        }
