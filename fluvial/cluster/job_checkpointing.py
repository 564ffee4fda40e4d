"""The JobMaster's checkpointing: builds the CheckpointCoordinator for a job (storage, retained checkpoints,
the trigger and acknowledge plan) and turns a completed checkpoint or savepoint into restore assignments."""

from __future__ import annotations

from typing import Any, Callable

from fluvial.checkpoint.coordinator import CheckpointCoordinator
from fluvial.checkpoint.restore import assign_restore
from fluvial.checkpoint.store import CompletedCheckpointStore
from fluvial.cluster.messages import NotifyCheckpoint, TriggerCheckpoint
from fluvial.graph.job_graph import JobGraph
from fluvial.runtime.checkpointing import TaskCheckpointSettings


class JobCheckpointing:
    def __init__(self, job_graph: JobGraph, send_trigger: Callable[[TriggerCheckpoint], None],
                 send_notify: Callable[[NotifyCheckpoint], None], all_tasks_running: Callable[[], bool],
                 fail_job: Callable[[BaseException], None]) -> None:
        from fluvial.checkpoint.storage import create_checkpoint_storage

        settings = job_graph.fault_tolerance.checkpoints
        self.settings = settings
        self.job_id = job_graph.job_id
        self.storage = create_checkpoint_storage(settings.storage, job_graph.job_id)
        self.store = CompletedCheckpointStore(settings.num_retained, self.storage)
        tasks = [(v.id, i) for v in job_graph.vertices for i in range(v.parallelism)]
        sources = [(v.id, i) for v in job_graph.vertices if v.is_source for i in range(v.parallelism)]
        max_parallelism = {vertex.id: vertex.max_parallelism for vertex in job_graph.vertices}
        self.task_settings = TaskCheckpointSettings(settings.exactly_once, settings.storage)
        self.coordinator = CheckpointCoordinator(
            job_id=job_graph.job_id,
            settings=settings,
            storage=self.storage,
            store=self.store,
            tasks_to_trigger=sources,
            tasks_to_ack=set(tasks),
            max_parallelism=max_parallelism,
            trigger_task=lambda task, cid, ts, savepoint_dir: send_trigger(
                TriggerCheckpoint(self.job_id, task[0], task[1], cid, ts, savepoint_dir)),
            notify_tasks=lambda cid, completed: send_notify(NotifyCheckpoint(self.job_id, cid, completed)),
            all_tasks_running=all_tasks_running,
            fail_job=fail_job,
        )


    def abort_pending_for_failover(self) -> None:
        from fluvial.checkpoint.pending import CheckpointFailureReason

        self.coordinator.abort_all_pending(CheckpointFailureReason.JOB_FAILOVER)

    def abort_pending_awaiting(self, task: tuple[int, int]) -> None:
        """`task` finished: the pending checkpoints it never acknowledged cannot complete; abort them without
        counting a checkpoint failure (its input ended, as in Flink's CHECKPOINT_DECLINED_INPUT_END_OF_STREAM)."""
        from fluvial.checkpoint.pending import CheckpointFailureReason

        self.coordinator.abort_pending_awaiting(task, CheckpointFailureReason.DECLINED_END_OF_INPUT)


def restore_from(metadata: Any, job_graph: JobGraph, allow_non_restored_state: bool = False,
                 location: str = "") -> dict[tuple[int, int], dict]:
    return assign_restore(metadata, job_graph, allow_non_restored_state, location)
