"""CheckpointCoordinator (DESIGN 2.3, seed 001): triggers checkpoints, collects acknowledgements, completes,
retains and announces them.

Threads: every method runs on the JobMaster's main thread (the `timer` executor), so the coordinator's state
needs no lock. Time comes from the injected `clock` (ms) and delays from `timer.schedule`; writing `_metadata`,
discarding files and notifying tasks run on the injected `io` executor and report back as mails. A unit test
hands it a ManualClock and manual executors and steps it exactly.

Protocol, numbered:
1. A periodic mail triggers every `interval` ms, respecting the minimum pause after the last completion and the
   maximum of concurrent checkpoints; `request_checkpoint()` brings the next trigger forward (every task waits
   for its final checkpoint). The tasks (`CheckpointTasks`) give the plan: which subtasks to trigger (the
   sources; after some finished, every running subtask no barrier can reach any more), which to wait for, and
   which have finished (FLIP-147); a job not ready (a subtask starting) gives a reason instead.
2. A PendingCheckpoint collects one ack per task (AckResult says how each was taken); a timeout mail aborts it
   if the acks do not all arrive in time.
3. With every ack in: on the I/O executor the metadata is written (`_metadata`, last), then, back on the main
   thread, the CompletedCheckpoint joins the store (which subsumes the oldest) and every task is notified
   (on the I/O executor): two-phase-commit sinks commit then. An intermediate savepoint completes without
   telling the tasks: nothing may be committed that a failover to the job's latest checkpoint replays.
4. A decline, a timeout or a failover aborts the pending checkpoint, discards what it wrote and notifies the
   tasks; the failure manager counts the failures whose reason counts and fails the job past the tolerable
   number.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from fluvial.checkpoint.failure_manager import CheckpointFailureManager, FailureVerdict
from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.metadata import SubtaskState
from fluvial.checkpoint.pending import AckResult, PendingCheckpoint
from fluvial.checkpoint.plan import CheckpointTasks, Task
from fluvial.checkpoint.stop_mode import StopMode
from fluvial.checkpoint.store import CompletedCheckpoint, CompletedCheckpointStore
from fluvial.common.executors import Cancellable, Executor, ScheduledExecutor
from fluvial.common.future import CompletableFuture
from fluvial.common.repeated_logs import limit_repeats

if TYPE_CHECKING:
    from fluvial.datastream.checkpoint_config import CheckpointSettings

logger = logging.getLogger(__name__)
limit_repeats(logger)  # a failure loop says what fails, not 40 lines a second

RETRY_MS = 10  # how soon to look again when a trigger is due but held back (concurrency, tasks not running)


@dataclass
class _Finalizing:
    pending: PendingCheckpoint
    future: CompletableFuture[CompletedCheckpoint] | None
    storage: Any


@dataclass
class CheckpointStats:
    """Counts and the latest outcomes, for logs, the REST API and metrics."""

    triggered: int = 0
    completed: int = 0
    failed: int = 0
    restored: int = 0
    last_completed: CompletedCheckpoint | None = None
    last_duration_ms: int = 0
    last_size_bytes: int = 0
    last_failure: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    last_restored: dict[str, Any] | None = (
        None  # id, restore_timestamp, is_savepoint, external_path of the latest restore
    )


class CheckpointCoordinator:
    HISTORY_SIZE = 16

    def __init__(
        self,
        *,
        job_id: str,
        settings: CheckpointSettings,
        storage: Any,
        store: CompletedCheckpointStore,
        tasks: CheckpointTasks,
        max_parallelism: dict[int, int],
        clock: Callable[[], int],
        timer: ScheduledExecutor,
        io: Executor,
        first_checkpoint_id: int = 1,
    ) -> None:
        self.job_id = job_id
        self.settings = settings
        self.storage = storage
        self.store = store
        self._tasks = tasks
        self._max_parallelism = max_parallelism
        self._clock = clock
        self._timer = timer
        self._io = io
        self._failures = CheckpointFailureManager(settings.tolerable_failures)
        self._pending: dict[int, PendingCheckpoint] = {}
        self._timeouts: dict[int, Cancellable] = {}
        self._futures: dict[int, CompletableFuture[CompletedCheckpoint]] = {}
        self._savepoint_storage: dict[int, Any] = {}
        self._started_at: dict[int, int] = {}
        self._barrier_figures: dict[int, list[int]] = {}  # id → [max alignment ms, persisted bytes, unaligned]
        self._previous_handles: set[Any] = set()  # the last completed checkpoint's state handles
        self._finalizing: set[int] = set()
        self._silent: set[int] = set()  # completed without telling the tasks (intermediate savepoints)
        self._next_id = first_checkpoint_id
        self._last_completion: int | None = None
        self._periodic: Cancellable | None = None
        self._trigger_due = False
        self._stopped = False
        self._stopping_with: int | None = None  # the synchronous savepoint of a stop-with-savepoint, once triggered
        self.stats = CheckpointStats()

    @property
    def stopping_with(self) -> int | None:
        """The id of the stop-with-savepoint's savepoint pending or completed (the job is stopping), or None."""
        return self._stopping_with

    @property
    def next_checkpoint_id(self) -> int:
        return self._next_id

    def latest_completed(self) -> CompletedCheckpoint | None:
        return self.store.latest()

    # -- periodic triggering ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Begin periodic checkpoints (no-op when the interval is off): the first is due one interval from now."""
        if self.settings.interval_ms > 0 and not self._stopped:
            settings = self.settings
            logger.info(
                "job %s takes a checkpoint every %d ms (timeout %d ms, min pause %d ms, at most %d at once)",
                self.job_id,
                settings.interval_ms,
                settings.timeout_ms,
                settings.min_pause_ms,
                settings.max_concurrent,
            )
            self._schedule_tick(settings.interval_ms)

    def request_checkpoint(self) -> None:
        """A checkpoint as soon as the pacing rules allow (every task waits for its final checkpoint): the next
        periodic trigger is brought forward; later ones follow at the interval again."""
        if not self._stopped:
            self._schedule_tick(0)

    def stop(self) -> None:
        """No more triggers; pending checkpoints are left to `abort_all_pending`."""
        self._stopped = True
        if self._periodic is not None:
            self._periodic.cancel()
            self._periodic = None

    def _schedule_tick(self, delay_ms: int) -> None:
        if self._periodic is not None:
            self._periodic.cancel()
        self._periodic = self._timer.schedule(max(0, delay_ms), self._on_tick)

    def _on_tick(self) -> None:
        self._periodic = None
        if self._stopped:
            return
        held = self._held_back()
        if held is not None:
            logger.debug(
                "job %s: the periodic checkpoint waits %d ms (%d pending, %d finalizing)",
                self.job_id,
                held,
                len(self._pending),
                len(self._finalizing),
            )
            self._trigger_due = True
            self._schedule_tick(held)
            return
        self._trigger_due = False
        self.trigger_checkpoint()
        if not self._trigger_due:  # else the trigger was refused (tasks not running) and scheduled its own retry
            self._schedule_tick(self.settings.interval_ms)

    def _held_back(self) -> int | None:
        """Milliseconds to wait before a periodic trigger may go out, or None if it may go out now."""
        if self._stopping_with is not None:  # the job stops: triggers wait until its savepoint fails, if it does
            return max(RETRY_MS, self.settings.interval_ms)
        if len(self._pending) + len(self._finalizing) >= self.settings.max_concurrent:
            return RETRY_MS
        if self._last_completion is not None:
            remaining = self._last_completion + self.settings.min_pause_ms - self._clock()
            if remaining > 0:
                return remaining
        return None

    # -- triggering ---------------------------------------------------------------------------------------------

    def trigger_checkpoint(
        self,
        is_savepoint: bool = False,
        savepoint_storage: Any = None,
        savepoint_dir: str | None = None,
        notify_tasks: bool = True,
        stop: StopMode | None = None,
    ) -> CompletableFuture[CompletedCheckpoint]:
        """Start a checkpoint (or a savepoint into `savepoint_dir`, written through `savepoint_storage`) now; the
        future completes with the CompletedCheckpoint, or with the error that stopped it. Without
        `notify_tasks` the tasks never hear that it completed (an intermediate savepoint: sinks must not commit
        what a restore of the job's own latest checkpoint replays). `stop`: the synchronous savepoint of a
        stop-with-savepoint (`checkpoint.stop_mode`); no periodic checkpoint is triggered while it is pending,
        nor after it completed (the job ends), as Flink stops its checkpoint scheduler."""
        future: CompletableFuture[CompletedCheckpoint] = CompletableFuture()
        if self._stopped:
            return self._refuse(future, CheckpointFailureReason.COORDINATOR_SHUTDOWN, is_savepoint)
        plan = self._tasks.checkpoint_plan()
        if isinstance(plan, CheckpointFailureReason):
            if not is_savepoint:
                self._trigger_due = True
                self._schedule_tick(RETRY_MS)  # try again soon: tasks are still starting or restarting
            return self._refuse(future, plan, is_savepoint)
        checkpoint_id = self._next_id
        self._next_id += 1
        pending = PendingCheckpoint(
            checkpoint_id,
            self._wall_clock_ms(),
            plan.tasks_to_wait_for,
            is_savepoint=is_savepoint,
            job_id=self.job_id,
            max_parallelism=self._max_parallelism,
            finished=plan.finished,
            finished_parallelism=plan.finished_parallelism,
        )
        self._pending[checkpoint_id] = pending
        self._futures[checkpoint_id] = future
        self._started_at[checkpoint_id] = self._clock()
        if savepoint_storage is not None:
            self._savepoint_storage[checkpoint_id] = savepoint_storage
        if not notify_tasks:
            self._silent.add(checkpoint_id)
        if stop is not None:
            self._stopping_with = checkpoint_id
        self._timeouts[checkpoint_id] = self._timer.schedule(
            self.settings.timeout_ms, lambda: self._expire(checkpoint_id)
        )
        self.stats.triggered += 1
        logger.info(
            "triggering %s %d of job %s (%d subtasks to trigger, %d to acknowledge)",
            "savepoint" if is_savepoint else "checkpoint",
            checkpoint_id,
            self.job_id,
            len(plan.tasks_to_trigger),
            len(plan.tasks_to_wait_for),
        )
        for task in plan.tasks_to_trigger:
            self._tasks.trigger(task, checkpoint_id, pending.timestamp, savepoint_dir, stop)
        return future

    def _refuse(
        self, future: CompletableFuture[CompletedCheckpoint], reason: CheckpointFailureReason, is_savepoint: bool
    ) -> CompletableFuture[CompletedCheckpoint]:
        what = "savepoint" if is_savepoint else "checkpoint"
        # a periodic checkpoint retries every RETRY_MS while tasks start: only a user's savepoint is worth INFO
        (logger.info if is_savepoint else logger.debug)(
            "%s of job %s not triggered: %s (%s)", what, self.job_id, reason.value, reason.name
        )
        future.set_exception(RuntimeError(f"{what} of job {self.job_id} not triggered: {reason.value}"))
        return future

    def _wall_clock_ms(self) -> int:
        from fluvial.common.time import current_millis

        return current_millis()

    def _expire(self, checkpoint_id: int) -> None:
        self._timeouts.pop(checkpoint_id, None)
        if checkpoint_id in self._pending:
            self._abort(
                checkpoint_id,
                CheckpointFailureReason.TIMEOUT,
                f"it expired after {self.settings.timeout_ms} ms before every task acknowledged it",
            )

    # -- acknowledgements ---------------------------------------------------------------------------------------

    def receive_acknowledge(
        self, task: Task, checkpoint_id: int, states: Mapping[str, SubtaskState], metrics: Any = None
    ) -> AckResult:
        """`metrics`: the subtask's CheckpointMetricsReport (alignment duration, persisted in-flight bytes,
        unaligned), summed up per checkpoint for its statistics."""
        pending = self._pending.get(checkpoint_id)
        if pending is None:
            if checkpoint_id >= self._next_id:
                return AckResult.UNKNOWN
            logger.debug(
                "job %s: late acknowledgement of aborted checkpoint %d from subtask %s; discarding its state",
                self.job_id,
                checkpoint_id,
                task,
            )
            self._discard_late_state(checkpoint_id, states)
            return AckResult.DISCARDED
        result = pending.acknowledge(task, states)
        if result is AckResult.SUCCESS and metrics is not None:
            figures = self._barrier_figures.setdefault(checkpoint_id, [0, 0, 0])
            figures[0] = max(figures[0], metrics.alignment_duration_ms)
            figures[1] += metrics.persisted_data
            figures[2] |= metrics.unaligned
        if result is AckResult.SUCCESS:
            shared = [handle for state in states.values() for handle in state.shared]
            if shared:
                self.store.register_shared(checkpoint_id, shared)
            if pending.is_fully_acknowledged:
                self._finalize(checkpoint_id)
        return result

    def receive_decline(
        self, task: Task, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = ""
    ) -> None:
        if checkpoint_id not in self._pending:
            return  # it completed or was aborted already
        why = f"subtask {task} declined it: {reason.value}" + (f" ({detail})" if detail else "")
        self._abort(checkpoint_id, reason, why, from_task=True)

    def _discard_late_state(self, checkpoint_id: int, states: Mapping[str, SubtaskState]) -> None:
        """An ack for an aborted checkpoint: what it wrote belongs to no checkpoint any more."""
        shared = [handle for state in states.values() for handle in state.shared]
        storage = self.storage
        self._io.execute(lambda: _quietly(lambda: storage.discard_checkpoint(checkpoint_id)))
        if shared:
            self.store.register_shared(checkpoint_id, shared)
            self.store.release_shared(checkpoint_id)

    # -- completion ---------------------------------------------------------------------------------------------

    def _finalize(self, checkpoint_id: int) -> None:
        """Step 3: write the metadata off this thread; the checkpoint counts against max_concurrent until every
        task has been notified, so each task hears of n before it snapshots n + 1."""
        pending = self._pending.pop(checkpoint_id)
        self._cancel_timeout(checkpoint_id)
        self._finalizing.add(checkpoint_id)
        job = _Finalizing(
            pending, self._futures.pop(checkpoint_id, None), self._savepoint_storage.pop(checkpoint_id, self.storage)
        )

        def write() -> None:
            try:
                location = job.storage.write_metadata(checkpoint_id, pending.metadata())
            except BaseException as error:  # noqa: BLE001 - storage trouble fails this checkpoint only
                # bound now: Python unbinds `error` when the except block ends, before the mail runs
                self._timer.execute(partial(self._on_finalize_failed, job, error))
                return
            self._timer.execute(lambda: self._on_finalized(job, location))

        self._io.execute(write)

    def _on_finalized(self, job: _Finalizing, location: str) -> None:
        pending, checkpoint_id = job.pending, job.pending.checkpoint_id
        completed = pending.mark_completed(location)
        if not pending.is_savepoint:
            self._add_to_store(completed)
        duration = self._clock() - self._started_at.pop(checkpoint_id, self._clock())
        size = sum(handle.size for handle in completed.metadata.handles())
        self._last_completion = self._clock()
        self._failures.handle_success(checkpoint_id)
        self._record(completed, duration, size)
        logger.info(
            "completed %s %d of job %s in %d ms (%d bytes) at %s",
            "savepoint" if pending.is_savepoint else "checkpoint",
            checkpoint_id,
            self.job_id,
            duration,
            size,
            location,
        )
        tasks, future, timer = self._tasks, job.future, self._timer
        notify = checkpoint_id not in self._silent
        self._silent.discard(checkpoint_id)

        def announce() -> None:
            """Tasks hear of the completion before whoever triggered it does: a client that stops the job right
            after its savepoint still lets the sinks commit what the savepoint covers."""
            if notify:
                tasks.notify_complete(checkpoint_id)
            if future is not None:
                future.set_result(completed)
            timer.execute(lambda: self._finished_finalizing(checkpoint_id))

        self._io.execute(announce)

    def _add_to_store(self, completed: CompletedCheckpoint) -> None:
        """Older pending checkpoints are subsumed by a completed newer one (their acks would be wasted)."""
        for older in [cid for cid in self._pending if cid < completed.checkpoint_id]:
            if not self._pending[older].is_savepoint:
                self._abort(older, CheckpointFailureReason.SUBSUMED, "a newer checkpoint completed first")
        self.store.add(completed)

    def _on_finalize_failed(self, job: _Finalizing, error: BaseException) -> None:
        pending, checkpoint_id = job.pending, job.pending.checkpoint_id
        pending.abort(CheckpointFailureReason.FINALIZE_FAILURE, error)
        self._started_at.pop(checkpoint_id, None)
        self._silent.discard(checkpoint_id)
        if self._stopping_with == checkpoint_id:
            self._stopping_with = None
        logger.warning(
            "checkpoint %d of job %s failed: writing its metadata raised %s: %s",
            checkpoint_id,
            self.job_id,
            type(error).__name__,
            error,
        )
        self._discard(checkpoint_id, job.storage)
        tasks = self._tasks
        self._io.execute(lambda: tasks.notify_aborted(checkpoint_id))
        self._finished_finalizing(checkpoint_id)
        self._count_failure(CheckpointFailureReason.IO_ERROR, checkpoint_id, error, pending.is_savepoint)
        if job.future is not None:
            job.future.set_exception(error)

    def _finished_finalizing(self, checkpoint_id: int) -> None:
        self._finalizing.discard(checkpoint_id)
        if self._trigger_due and not self._stopped:
            self._schedule_tick(0)

    def _record(self, completed: CompletedCheckpoint, duration_ms: int, size: int) -> None:
        stats = self.stats
        stats.completed += 1
        stats.last_completed = completed
        stats.last_duration_ms, stats.last_size_bytes = duration_ms, size
        alignment, persisted, unaligned = self._barrier_figures.pop(completed.checkpoint_id, (0, 0, 0))
        kind = "SAVEPOINT" if completed.is_savepoint else "UNALIGNED_CHECKPOINT" if unaligned else "CHECKPOINT"
        handles = set(completed.metadata.handles())
        # Flink's checkpointed size: what this checkpoint stored anew, leaving out the files it shares with the
        # checkpoint before it (incremental RocksDB files, a changelog's materialization and older log segments)
        checkpointed = sum(handle.size for handle in handles - self._previous_handles)
        if not completed.is_savepoint:
            self._previous_handles = handles
        self._history(
            completed.checkpoint_id,
            "COMPLETED",
            completed.timestamp,
            duration_ms,
            size,
            completed.is_savepoint,
            external_path=completed.metadata_location,
            checkpoint_type=kind,
            persisted_data=persisted,
            alignment_duration=alignment,
            checkpointed_size=checkpointed,
        )

    def _history(
        self,
        checkpoint_id: int,
        status: str,
        timestamp: int,
        duration_ms: int,
        size: int,
        is_savepoint: bool,
        **details: object,
    ) -> None:
        """`details`: `external_path` of a completed one, `failure_message` of a failed one (Flink's names); a
        completed one's `checkpoint_type` (CHECKPOINT, UNALIGNED_CHECKPOINT or SAVEPOINT), `persisted_data` (bytes
        of in-flight data its subtasks persisted) and `alignment_duration` (ms, the longest of its subtasks')."""
        self._barrier_figures.pop(checkpoint_id, None)
        history = self.stats.history
        history.append(
            {
                "id": checkpoint_id,
                "status": status,
                "is_savepoint": is_savepoint,
                "trigger_timestamp": timestamp,
                "end_to_end_duration": duration_ms,
                "state_size": size,
                "latest_ack_timestamp": timestamp + duration_ms,
                **details,
            }
        )
        del history[: -self.HISTORY_SIZE]

    def in_progress(self) -> list[dict[str, Any]]:
        """The checkpoints triggered and not yet completed or failed, as the history lists them."""
        now = self._clock()
        entries = []
        for checkpoint_id, pending in sorted(self._pending.items()):
            started = self._started_at.get(checkpoint_id, now)
            entries.append(
                {
                    "id": checkpoint_id,
                    "status": "IN_PROGRESS",
                    "is_savepoint": pending.is_savepoint,
                    "trigger_timestamp": pending.timestamp,
                    "end_to_end_duration": now - started,
                    "state_size": 0,
                    "num_subtasks": len(pending.tasks_to_ack),
                    "num_acknowledged_subtasks": len(pending.tasks_to_ack) - len(pending.not_yet_acknowledged),
                }
            )
        return entries

    # -- aborting -----------------------------------------------------------------------------------------------

    def _abort(
        self, checkpoint_id: int, reason: CheckpointFailureReason, message: str, from_task: bool = False
    ) -> None:
        pending = self._pending.pop(checkpoint_id, None)
        if pending is None:
            return
        self._silent.discard(checkpoint_id)
        if self._stopping_with == checkpoint_id:  # the stop failed: the job goes on, and so do its checkpoints
            self._stopping_with = None
        future = self._futures.pop(checkpoint_id, None)
        storage = self._savepoint_storage.pop(checkpoint_id, self.storage)
        self._cancel_timeout(checkpoint_id)
        pending.abort(reason)
        duration = self._clock() - self._started_at.pop(checkpoint_id, self._clock())
        what = "savepoint" if pending.is_savepoint else "checkpoint"
        log = logger.warning if reason.counts else logger.info
        log(
            "%s %d of job %s aborted (%s) after %d ms: %s",
            what,
            checkpoint_id,
            self.job_id,
            reason.name,
            duration,
            message,
        )
        self._discard(checkpoint_id, storage)
        tasks = self._tasks
        self._io.execute(lambda: tasks.notify_aborted(checkpoint_id))
        error = RuntimeError(f"{what} {checkpoint_id} of job {self.job_id} failed: {message}")
        self.stats.failed += 1
        self.stats.last_failure = message
        self._history(
            checkpoint_id, "FAILED", pending.timestamp, duration, 0, pending.is_savepoint, failure_message=message
        )
        if future is not None:
            future.set_exception(error)
        self._count_failure(reason, checkpoint_id, error, pending.is_savepoint, from_task)
        if self._trigger_due and not self._stopped:
            self._schedule_tick(0)

    def _discard(self, checkpoint_id: int, storage: Any) -> None:
        """What an aborted checkpoint wrote: its private files (on the I/O executor) and its shared references."""
        self._io.execute(lambda: _quietly(lambda: storage.discard_checkpoint(checkpoint_id)))
        self.store.release_shared(checkpoint_id)

    def _cancel_timeout(self, checkpoint_id: int) -> None:
        handle = self._timeouts.pop(checkpoint_id, None)
        if handle is not None:
            handle.cancel()

    def _count_failure(
        self,
        reason: CheckpointFailureReason,
        checkpoint_id: int,
        error: BaseException,
        is_savepoint: bool,
        from_task: bool = False,
    ) -> None:
        verdict = self._failures.handle_failure(
            reason, checkpoint_id, cause=error, from_task=from_task, is_savepoint=is_savepoint
        )
        if verdict is FailureVerdict.FAIL_JOB:
            logger.warning("job %s: %s", self.job_id, self._failures.job_failure)
            failure = self._failures.job_failure
            if failure is not None:  # FAIL_JOB always comes with the error
                self._tasks.fail_job(failure)
        elif verdict is FailureVerdict.TOLERATED:
            logger.info(
                "job %s: checkpoint %d counts as failed (%d in a row, %d tolerated)",
                self.job_id,
                checkpoint_id,
                self._failures.consecutive_failures,
                self._failures.tolerable_failures,
            )

    def abort_pending_awaiting(self, task: Task) -> None:
        """`task` finished its input without acknowledging some pending checkpoints: they can never complete.
        Abort them now as DECLINED_END_OF_INPUT, which does not count as a checkpoint failure, rather than let
        them expire as a TIMEOUT, which would."""
        for checkpoint_id in [cid for cid, p in self._pending.items() if task in p.not_yet_acknowledged]:
            self._abort(
                checkpoint_id,
                CheckpointFailureReason.DECLINED_END_OF_INPUT,
                f"subtask {task} ended before acknowledging it",
            )

    def abort_all_pending(self, reason: CheckpointFailureReason) -> None:
        """On failover or shutdown: every pending checkpoint is aborted (without counting towards failure). A
        failover also ends a stop-with-savepoint whose savepoint completed: the restarted job checkpoints again."""
        for checkpoint_id in list(self._pending):
            self._abort(checkpoint_id, reason, reason.value)
        self._stopping_with = None


def _quietly(action: Callable[[], None]) -> None:
    """Cleanup of files is never fatal: the job's state is intact either way; a leak is logged."""
    try:
        action()
    except Exception:  # noqa: BLE001
        logger.warning("could not discard checkpoint files; remove them by hand", exc_info=True)
