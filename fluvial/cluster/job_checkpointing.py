"""A job's checkpointing, as its scheduler owns it: builds the CheckpointCoordinator (storage, retained
checkpoints, the scheduler as the coordinator's view of the subtasks), is the one way the scheduler and the
JobMaster talk to it, and turns a completed checkpoint or savepoint into the restore assignments of the
subtasks."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fluvial.checkpoint.coordinator import CheckpointCoordinator
from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.metadata import SubtaskState
from fluvial.checkpoint.plan import CheckpointTasks
from fluvial.checkpoint.restore import JobRestore, assign_restore
from fluvial.checkpoint.store import CompletedCheckpoint, CompletedCheckpointStore
from fluvial.common.executors import Executor, ScheduledExecutor
from fluvial.common.future import CompletableFuture
from fluvial.common.job_status import JobStatus
from fluvial.common.recovery_claim_mode import RecoveryClaimMode
from fluvial.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention
from fluvial.graph.job_graph import JobGraph

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckpointingSetup:
    """What the scheduler needs to build a job's checkpointing besides itself: the executor for checkpoint I/O,
    the clock, and the snapshot the job starts from (a RestoredSnapshot, or None)."""

    io: Executor
    clock: Callable[[], int]
    restored_from: Any = None


DISCARD_WAIT_S = 10


class JobCheckpointing:
    def __init__(
        self,
        job_graph: JobGraph,
        tasks: CheckpointTasks,
        timer: ScheduledExecutor,
        io: Executor,
        clock: Callable[[], int],
        restored_from: Any = None,
    ) -> None:
        """`restored_from`: the RestoredSnapshot the job starts from, if any: checkpoint ids go on from its id, as
        in Flink, so the newest chk-<n> of a directory is always the newest checkpoint; a claimed one joins the
        retained checkpoints."""
        from fluvial.checkpoint.storage import create_checkpoint_storage

        settings = job_graph.fault_tolerance.checkpoints
        self.settings = settings
        self.job_graph = job_graph
        self._io = io
        self._first_checkpoint_id = restored_from.metadata.checkpoint_id + 1 if restored_from is not None else 1
        self.storage = create_checkpoint_storage(settings.storage, job_graph.job_id)
        self.store = CompletedCheckpointStore(settings.num_retained, self.storage)
        self.coordinator = CheckpointCoordinator(
            job_id=job_graph.job_id,
            settings=settings,
            storage=self.storage,
            store=self.store,
            tasks=tasks,
            max_parallelism={vertex.id: vertex.max_parallelism for vertex in job_graph.vertices},
            clock=clock,
            timer=timer,
            io=io,
            first_checkpoint_id=self._first_checkpoint_id,
        )
        if restored_from is not None:
            self._count_restore(restored_from.metadata.checkpoint_id, True, job_graph.fault_tolerance.savepoint_path)
            if restored_from.claim_mode is RecoveryClaimMode.CLAIM:
                self._claim(restored_from)

    def _claim(self, restored: Any) -> None:
        """CLAIM: the snapshot becomes the job's oldest retained checkpoint (its shared files counted with the
        job's own), discarded at its location once subsumed."""
        metadata = restored.metadata
        location = restored.location.rstrip("/")
        if location.endswith("/_metadata"):
            location = location[: -len("/_metadata")]
        self.store.add(
            CompletedCheckpoint(
                metadata.checkpoint_id, metadata.timestamp, location, metadata, is_savepoint=False, claimed=True
            )
        )

    def latest_restore(self) -> JobRestore | None:
        """Restore assignments from the latest completed checkpoint; None when there is none yet."""
        latest = self.store.latest()
        if latest is None:
            return None
        self._count_restore(latest.checkpoint_id, False, latest.metadata_location)
        return assign_restore(latest.metadata, self.job_graph, False, latest.metadata_location, owned=True)

    # -- what the scheduler and the JobMaster ask of it (the coordinator stays inside) ---------------------------

    @property
    def stats(self) -> Any:
        """The CheckpointStats of the job (counts, history, the last restore), as the REST API reports them."""
        return self.coordinator.stats

    def in_progress(self) -> list[dict[str, Any]]:
        """The pending checkpoints, as history entries (IN_PROGRESS)."""
        return self.coordinator.in_progress()

    def start(self) -> None:
        self.coordinator.start()

    def shutdown(self, status: JobStatus | None = None) -> None:
        """The job ended with `status`: no more triggers, every pending checkpoint aborted, and its checkpoints
        deleted when its retention says so for that status (`discards_checkpoints`; savepoints never are)."""
        self.coordinator.stop()
        self.coordinator.abort_all_pending(CheckpointFailureReason.COORDINATOR_SHUTDOWN)
        retention = self.settings.externalized_retention
        if status is not None and discards_checkpoints(retention, status):
            logger.info(
                "job %s ended %s: deleting its %d retained checkpoint(s) (%s)",
                self.job_graph.job_id,
                status.name,
                len(self.store),
                retention.name,
            )
            self.store.shutdown(discard=True)
            self._discard_unfinished()

    def _discard_unfinished(self) -> None:
        """The checkpoints of this job that never reached the store: one being finalized on the I/O thread when
        the job ended writes its metadata after the store was emptied. Runs on the I/O thread, after whatever is
        in flight there, and is waited for (a bounded wait: the job has ended, nothing else runs here)."""
        done = threading.Event()
        # at most max_concurrent checkpoints are pending or being finalized; older ones were retained (and are
        # discarded with the store), subsumed or aborted. Savepoints live in their own directories.
        newest = self.coordinator.next_checkpoint_id
        unfinished = range(max(self._first_checkpoint_id, newest - self.settings.max_concurrent - 1), newest)

        def discard() -> None:
            try:
                for checkpoint_id in unfinished:
                    self.storage.discard_checkpoint(checkpoint_id)
            except Exception as error:  # noqa: BLE001 - a file left behind is logged, never a failure of the job
                logger.warning("job %s: could not delete every unfinished checkpoint: %s", self.job_graph.job_id, error)
            finally:
                done.set()

        self._io.execute(discard)
        if not done.wait(DISCARD_WAIT_S):
            logger.warning(
                "job %s: deleting its unfinished checkpoints took longer than %d s; they finish in the background",
                self.job_graph.job_id,
                DISCARD_WAIT_S,
            )

    def receive_acknowledge(
        self, task: tuple[int, int], checkpoint_id: int, states: Mapping[str, SubtaskState], metrics: Any = None
    ) -> None:
        self.coordinator.receive_acknowledge(task, checkpoint_id, states, metrics)

    def receive_decline(
        self, task: tuple[int, int], checkpoint_id: int, reason: CheckpointFailureReason, detail: str
    ) -> None:
        self.coordinator.receive_decline(task, checkpoint_id, reason, detail)

    def request_checkpoint(self) -> None:
        self.coordinator.request_checkpoint()

    def abort_pending_awaiting(self, task: tuple[int, int]) -> None:
        self.coordinator.abort_pending_awaiting(task)

    def abort_all_pending(self, reason: CheckpointFailureReason) -> None:
        self.coordinator.abort_all_pending(reason)

    def trigger_savepoint(
        self, directory: str, job_id: str, terminal: bool, drain: bool
    ) -> CompletableFuture[CompletedCheckpoint]:
        """A savepoint into `directory`, self-contained; `terminal` (stop-with-savepoint) makes it synchronous
        and notifies the tasks of its completion, `drain` advances the sources to the end of event time first."""
        from fluvial.checkpoint.savepoint import savepoint_storage
        from fluvial.checkpoint.stop_mode import StopMode

        return self.coordinator.trigger_checkpoint(
            is_savepoint=True,
            savepoint_storage=savepoint_storage(directory, job_id, self.settings.storage),
            savepoint_dir=directory,
            notify_tasks=terminal,
            stop=StopMode.of(drain) if terminal else None,
        )

    def _count_restore(self, checkpoint_id: int, is_savepoint: bool, location: str | None) -> None:
        from fluvial.common.time import current_millis

        stats = self.coordinator.stats
        stats.restored += 1
        stats.last_restored = {
            "id": checkpoint_id,
            "restore_timestamp": current_millis(),
            "is_savepoint": is_savepoint,
            "external_path": location,
        }


def restore_from(
    metadata: Any, job_graph: JobGraph, allow_non_restored_state: bool = False, location: str = ""
) -> JobRestore:
    return assign_restore(metadata, job_graph, allow_non_restored_state, location)


def discards_checkpoints(retention: ExternalizedCheckpointRetention, status: JobStatus) -> bool:
    """Whether a job that ended with `status` deletes its checkpoints (Flink's CheckpointProperties of each
    CheckpointRetentionPolicy): a FINISHED job always does — nothing is left to restore; a CANCELED one unless
    RETAIN_ON_CANCELLATION; a FAILED one only without externalized checkpoints (NO_EXTERNALIZED_CHECKPOINTS,
    the default), so DELETE_ON_CANCELLATION and RETAIN_ON_CANCELLATION keep a failed job's checkpoints for a
    restart from them."""
    if status is JobStatus.FINISHED:
        return True
    if status is JobStatus.CANCELED:
        return retention is not ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    if status is JobStatus.FAILED:
        return retention is ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    return False
