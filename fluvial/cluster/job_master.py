"""JobMaster: the endpoint of one job. It owns one main thread; everything that happens to the job — a
TaskManager's report, an acknowledgement, a client's cancel or savepoint, the checkpoint tick, the restart
delay — is a mail on that thread, so the scheduler, the execution graph and the checkpoint coordinator are
only ever touched by it (Flink's main-thread executor).

Lifecycle, numbered:
1. Built with the JobGraph, the TaskManagers' gateways and the offered slots: assigns slots (a clear error if
   too few), reads the savepoint to start from (if any) and builds the scheduler, which builds the job's
   checkpointing when it is on.
2. `start()`: every subtask is deployed; the coordinator starts its periodic trigger.
3. The scheduler decides the job's fate (see `scheduler.py`); when the job reaches a globally terminal status,
   checkpointing stops, every TaskManager is told to release the job, and `result` completes.
Beside running the job it answers questions about it: `request_job()` gives its JobDetails, built on the main
thread while the job runs; once it has ended nothing changes them any more, so they are built where they are
asked for (Flink's archived execution graph), after the main thread has gone. `metrics` holds the latest
metrics snapshot of each subtask, which the TaskManagers report (`report_metrics`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fluvial.cluster.execution_graph import ExecutionGraph
from fluvial.cluster.gateways import TaskManagerGateway
from fluvial.cluster.job_timeline import JobTimeline
from fluvial.cluster.messages import (
    AcknowledgeCheckpoint,
    DeclineCheckpoint,
    MetricsSnapshot,
    ReleaseJob,
    TaskEndOfData,
    TaskExecutionState,
)
from fluvial.cluster.scheduler import Scheduler
from fluvial.cluster.slots import SlotId, assign_slots
from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.common.executors import Executor, ScheduledExecutor, SingleThreadExecutor
from fluvial.common.future import CompletableFuture as Future
from fluvial.common.future import forward
from fluvial.common.job_execution_result import JobExecutionResult
from fluvial.common.job_id import JobID
from fluvial.common.job_status import JobStatus
from fluvial.graph.job_graph import JobGraph
from fluvial.metrics.store import MetricStore

if TYPE_CHECKING:
    from fluvial.checkpoint.restore import JobRestore
    from fluvial.checkpoint.store import CompletedCheckpoint
    from fluvial.cluster.job_details import JobDetails

logger = logging.getLogger(__name__)

SAVEPOINT_POLL_MS = 20
SAVEPOINT_START_WAIT_MS = 30_000
STOP_GRACE_MS = 30_000  # how long the subtasks of a stopped job may take to end by themselves before a cancel


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class JobMaster:
    """Implements JobMasterGateway for its TaskManagers; its other public methods serve the JobClient. All of
    them may be called from any thread: they post a mail and return."""

    def __init__(
        self,
        job_graph: JobGraph,
        task_managers: Sequence[TaskManagerGateway],
        free_slots: list[SlotId],
        *,
        main_thread: ScheduledExecutor | None = None,
        io: Executor | None = None,
        clock: Callable[[], int] = _monotonic_ms,
        resources: Any = None,
    ) -> None:
        """`resources`: whether every TaskManager is up (ResourceAvailability; None: they always are)."""
        self.job_graph = job_graph
        self.result: Future[JobExecutionResult] = Future()
        self.timeline = JobTimeline()  # touched on the main thread only
        self.metrics = MetricStore()
        self._ended = False  # the job reached a globally terminal status: its details no longer change
        self._archive: JobDetails | None = None  # built once after it ended
        self._archive_lock = threading.Lock()
        self._task_managers = list(task_managers)
        self._started_at = 0.0
        slots = assign_slots(job_graph, free_slots)
        tolerance = job_graph.fault_tolerance
        restored_from, initial_restore = self._savepoint_restore(tolerance)
        self._initial_restore = initial_restore
        self._own_threads: list[SingleThreadExecutor] = []
        self._main = main_thread or self._thread(f"fluvial-jobmaster-{job_graph.job_id[:8]}", self._fail_internally)
        checkpoints = tolerance.checkpoints if tolerance is not None else None
        checkpointing_on = checkpoints is not None and checkpoints.enabled
        task_settings = None
        if checkpoints is not None and checkpoints.enabled:
            from fluvial.runtime.deployment import TaskCheckpointSettings

            task_settings = TaskCheckpointSettings(
                checkpoints.exactly_once,
                checkpoints.storage,
                checkpoints.checkpoints_after_tasks_finish,
                checkpoints.aligned_checkpoint_timeout_ms if checkpoints.unaligned else None,
            )
        setup = None
        if checkpointing_on:
            from fluvial.cluster.job_checkpointing import CheckpointingSetup

            io = io or self._thread(f"fluvial-checkpoint-io-{job_graph.job_id[:8]}", None)
            setup = CheckpointingSetup(io, clock, restored_from)
        self.scheduler = Scheduler(
            ExecutionGraph(job_graph, _job_parameters(job_graph)),
            slots,
            self._task_managers,
            self._main,
            _backoff_strategy(job_graph, checkpointing_on),
            self,
            task_settings=task_settings,
            templates=_templates(job_graph, tolerance),
            receiver_settings=_receiver_settings(job_graph, checkpoints),
            resources=resources,
            restore_source=self,
            checkpointing=setup,
        )
        self.checkpointing = self.scheduler.checkpointing  # the scheduler's JobCheckpointing, or None

    def _thread(self, name: str, on_error: Callable[[BaseException], None] | None) -> SingleThreadExecutor:
        thread = SingleThreadExecutor(name, on_error)
        self._own_threads.append(thread)
        return thread

    @property
    def job_id(self) -> str:
        return self.job_graph.job_id

    @property
    def status(self) -> JobStatus:
        return self.scheduler.status

    @property
    def restarts(self) -> int:
        return self.scheduler.restarts

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._main.execute(self._start)

    def _start(self) -> None:
        self._started_at = time.monotonic()
        logger.info(
            "starting job %s (%s): %d subtasks in %d slots",
            self.job_graph.job_name,
            self.job_id,
            len(self.scheduler.graph.vertices),
            len(set(self.scheduler._slots.values())),
        )
        self.scheduler.start(self._initial_restore)
        if self.checkpointing is not None:
            self.checkpointing.start()

    def _savepoint_restore(self, tolerance: Any) -> tuple[Any, JobRestore | None]:
        """(restored snapshot, assignments) of the savepoint or checkpoint to start from, or (None, None). Under
        CLAIM the job owns it (backends may build on its files); under NO_CLAIM, the default, it never does."""
        if tolerance is None or not tolerance.savepoint_path:
            return None, None
        from fluvial.checkpoint.restore import assign_restore
        from fluvial.checkpoint.savepoint import read_savepoint
        from fluvial.common.recovery_claim_mode import RecoveryClaimMode

        claim = tolerance.claim_mode or RecoveryClaimMode.NO_CLAIM
        metadata = read_savepoint(tolerance.savepoint_path)
        logger.info(
            "job %s restores from %s %s (checkpoint %d) in %s mode",
            self.job_graph.job_id,
            "savepoint" if metadata.is_savepoint else "checkpoint",
            tolerance.savepoint_path,
            metadata.checkpoint_id,
            claim.value,
        )
        assignments = assign_restore(
            metadata,
            self.job_graph,
            tolerance.allow_non_restored_state,
            tolerance.savepoint_path,
            owned=claim is RecoveryClaimMode.CLAIM,
        )
        return RestoredSnapshot(metadata, tolerance.savepoint_path, claim), assignments

    def restore_for_restart(self) -> JobRestore | None:
        """RestoreSource: the latest completed checkpoint, else the savepoint the job started from."""
        if self.checkpointing is not None:
            restore = self.checkpointing.latest_restore()
            if restore is not None:
                return restore
        return self._initial_restore

    # -- JobMasterGateway (any thread) ---------------------------------------------------------------------------

    def update_task_execution_state(self, message: TaskExecutionState) -> None:
        self._main.execute(lambda: self._on_task_state(message))

    def _on_task_state(self, message: TaskExecutionState) -> None:
        attempt_id = message.attempt_id
        self.timeline.task_state(attempt_id.vertex_id, attempt_id.subtask_index, attempt_id.attempt, message.state)
        self.scheduler.on_task_state(message)

    def report_metrics(self, message: MetricsSnapshot) -> None:
        """Kept at once (the store locks): metrics must reach the store even after the job's thread ended."""
        self.metrics.update(message.metrics)

    def acknowledge_checkpoint(self, message: AcknowledgeCheckpoint) -> None:
        self._main.execute(lambda: self.scheduler.on_acknowledge(message))

    def decline_checkpoint(self, message: DeclineCheckpoint) -> None:
        self._main.execute(lambda: self.scheduler.on_decline(message))

    def task_manager_lost(self, index: int, error: BaseException) -> None:
        """TaskManager `index` died or stopped answering (from the cluster's monitor): its subtasks failed."""
        self._main.execute(lambda: self.scheduler.on_task_manager_lost(index, error))

    def notify_end_of_data(self, message: TaskEndOfData) -> None:
        self._main.execute(lambda: self.scheduler.on_end_of_data(message))

    # -- client requests (any thread) ---------------------------------------------------------------------------

    def cancel(self) -> None:
        self._main.execute(self._cancel)

    def _cancel(self) -> None:
        logger.info("job %s (%s): cancel requested while %s", self.job_graph.job_name, self.job_id, self.status.name)
        self.scheduler.cancel()

    def trigger_savepoint(
        self, target_directory: str | None, terminal: bool = False, drain: bool = False
    ) -> Future[CompletedCheckpoint]:
        """A future of the CompletedCheckpoint of a savepoint into `target_directory` (or state.savepoints.dir).
        Only a `terminal` savepoint (stop-with-savepoint: the job ends right after it) lets two-phase-commit sinks
        commit when it completes; an intermediate one commits nothing (Flink 1.15+), because a failover restores
        the job's latest checkpoint, older than the savepoint, and would emit the committed output again. A
        terminal savepoint is synchronous: every subtask processes nothing after its snapshot; if it fails, the
        subtasks resume and the job goes on (the future fails with the reason).
        `drain` (terminal only): the sources advance to the end of event time before their barriers, so every
        window and event-time timer fires into the savepoint's output; they emit nothing after it, so a drain
        savepoint that fails fails the job over (from its latest checkpoint, before the drain), as in Flink."""
        if drain and not terminal:
            raise ValueError("drain (advance to the end of event time) is for stop-with-savepoint only")
        checkpointing = self.checkpointing
        if checkpointing is None:
            raise RuntimeError("savepoints need checkpointing: call env.enable_checkpointing(...)")
        from fluvial.checkpoint.savepoint import savepoint_target

        directory = savepoint_target(target_directory, self.job_graph.configuration)
        answer: Future[CompletedCheckpoint] = Future()
        waited = 0

        def trigger() -> None:
            """Subtasks still starting (deployed, not yet running) are waited for, a while; a subtask that has
            ended can take no part: refused at once."""
            nonlocal waited
            refusal = self._savepoint_refusal()
            if refusal is not None:
                logger.info("job %s: savepoint into %s refused: %s", self.job_id, directory, refusal)
                answer.set_exception(RuntimeError(f"cannot take a savepoint of job {self.job_id}: {refusal}"))
                return
            if self.scheduler.starting_subtasks() and waited < SAVEPOINT_START_WAIT_MS:
                waited += SAVEPOINT_POLL_MS
                self._main.schedule(SAVEPOINT_POLL_MS, trigger)
                return
            logger.info("job %s: savepoint into %s requested", self.job_id, directory)
            started = checkpointing.trigger_savepoint(directory, self.job_id, terminal, drain)
            started.add_done_callback(lambda done: forward(done, answer))
            if drain:
                started.add_done_callback(self._after_drain_savepoint)

        if not self._main.execute(trigger):
            answer.set_exception(
                RuntimeError(f"cannot take a savepoint of job {self.job_id}: it is {self.status.name}")
            )
        return answer

    def _after_drain_savepoint(self, done: Future[CompletedCheckpoint]) -> None:
        """The sources of a drained job emit nothing more: if its savepoint failed, the job cannot go on as it is
        and fails over (its restart strategy decides), resuming from its latest checkpoint."""
        error = done.exception()
        if error is not None:
            failure = RuntimeError(
                f"stop-with-savepoint with drain failed, and the drained sources emit nothing "
                f"more: {type(error).__name__}: {error}"
            )
            self._main.execute(lambda: self.scheduler.handle_global_failure(failure))

    def _savepoint_refusal(self) -> str | None:
        """Why no savepoint can be taken now (a subtask that ended can take no part), or None."""
        if self.status is not JobStatus.RUNNING:
            return f"it is {self.status.name}"
        checkpointing = self.checkpointing
        stopping = None if checkpointing is None else checkpointing.coordinator.stopping_with
        if stopping is not None:  # its subtasks process nothing more: no other barrier would get through
            return f"it is being stopped with savepoint {stopping}"
        ended = self.scheduler.ended_subtasks()
        if ended:
            return f"{len(ended)} of its subtasks have already ended (first: {ended[0].name})"
        return None

    def request_job(self) -> Future[JobDetails]:
        """A future of the job's JobDetails now: built on the main thread while the job runs, its archive once
        the job has ended."""
        answer: Future[JobDetails] = Future()

        def describe() -> None:
            try:
                answer.set_result(self._archived() if self._ended else self._details())
            except BaseException as error:  # noqa: BLE001 - handed to whoever asked
                answer.set_exception(error)

        if self._ended or not self._main.execute(describe):  # the thread ends only after the job has
            describe()
        return answer

    def _details(self) -> JobDetails:
        from fluvial.cluster.job_details import build_job_details  # loaded when somebody asks, never for a job alone

        return build_job_details(self, self.timeline)

    def _archived(self) -> JobDetails:
        with self._archive_lock:
            if self._archive is None:
                self._archive = self._details()
            return self._archive

    def stop_after_savepoint(self) -> None:
        """stop-with-savepoint: the savepoint is complete and every subtask, told so after its snapshot (its sinks
        committed), ends by itself, FINISHED (`runtime.task`, step 6); so does the job, as in Flink, where a stopped
        job's execute() returns its result; its state lives on in the savepoint. A subtask that has not ended
        within STOP_GRACE_MS is cancelled, and the job still ends FINISHED."""
        self._main.execute(self._await_stop)

    def _await_stop(self) -> None:
        self._main.schedule(STOP_GRACE_MS, self._stop)

    def _stop(self) -> None:
        if self.status is not JobStatus.RUNNING:
            return
        logger.warning(
            "job %s (%s): its subtasks did not all end within %d ms of its stop-with-savepoint; cancelling them",
            self.job_graph.job_name,
            self.job_id,
            STOP_GRACE_MS,
        )
        self.scheduler.cancel(stopping=True)

    # -- the end ------------------------------------------------------------------------------------------------

    def job_status_changed(self, status: JobStatus, error: BaseException | None) -> None:
        """JobStatusListener, on the main thread: a globally terminal status ends the job for good."""
        self.timeline.job_status(status)
        if status.is_globally_terminal:
            self._finish_job(status, error)

    def _finish_job(self, status: JobStatus, error: BaseException | None) -> None:
        failure = self.scheduler.last_failure_info  # (not the whole JobDetails: nobody may ever ask for them)
        last = f"; last failure: {failure.summary()}" if failure is not None else ""
        logger.info(
            "job %s (%s) ended %s after %d restart(s)%s",
            self.job_graph.job_name,
            self.job_id,
            status.name,
            self.scheduler.restarts,
            last,
        )
        if self.checkpointing is not None:
            self.checkpointing.shutdown(status)
        self._ended = True
        for task_manager in self._task_managers:
            task_manager.release_job(ReleaseJob(self.job_id))
        for thread in self._own_threads:
            thread.shutdown()  # mails already handed over still run (a savepoint request gets its refusal)
        self._complete_result(status, error)

    def _complete_result(self, status: JobStatus, error: BaseException | None) -> None:
        if self.result.done():
            return
        name = self.job_graph.job_name
        runtime_ms = int((time.monotonic() - self._started_at) * 1000)
        logger.info(
            "job %s (%s) ended %s after %d ms and %d restarts%s",
            name,
            self.job_id,
            status.name,
            runtime_ms,
            self.restarts,
            f": {type(error).__name__}: {error}" if error is not None else "",
        )
        if status is JobStatus.FINISHED:
            self.result.set_result(JobExecutionResult(JobID(self.job_id), runtime_ms))
        elif status is JobStatus.CANCELED:
            self.result.set_exception(JobCancelledException(f"Job '{name}' ({self.job_id}) was cancelled", self.job_id))
        else:
            self.result.set_exception(self._failure_exception(name, error))

    def _failure_exception(self, name: str, error: BaseException | None) -> JobExecutionException:
        failure = self.scheduler.failure
        if self.scheduler.fatal is None and failure is not None:
            wrapped = JobExecutionException(
                f"Job '{name}' ({self.job_id}) failed: operator '{failure.operator_name}' in task "
                f"{failure.task_name} raised {type(failure.error).__name__}: {failure.error}",
                self.job_id,
            )
            wrapped.__cause__ = failure.error
            return wrapped
        wrapped = JobExecutionException(f"Job '{name}' ({self.job_id}) failed: {error}", self.job_id)
        wrapped.__cause__ = error
        return wrapped

    def _fail_internally(self, error: BaseException) -> None:
        """A mail raised: the JobMaster itself is broken. Fail the job with that error (the last resort that keeps
        `execute()` from waiting forever)."""
        logger.error("job %s: the JobMaster failed", self.job_id, exc_info=error)
        try:
            self.scheduler.fail(error)
        finally:
            self._ended = True
            if not self.result.done():
                wrapped = JobExecutionException(
                    f"Job '{self.job_graph.job_name}' failed inside the JobMaster: {type(error).__name__}: {error}",
                    self.job_id,
                )
                wrapped.__cause__ = error
                self.result.set_exception(wrapped)
                for task_manager in self._task_managers:
                    task_manager.release_job(ReleaseJob(self.job_id))


@dataclass(frozen=True, slots=True)
class RestoredSnapshot:
    """The checkpoint or savepoint a job started from, and whether the job claimed it."""

    metadata: Any
    location: str
    claim_mode: Any  # RecoveryClaimMode


def _job_parameters(job_graph: JobGraph) -> dict[str, str]:
    config = job_graph.execution_config
    return config.get_global_job_parameters() if config is not None else {}


def _backoff_strategy(job_graph: JobGraph, checkpointing_on: bool) -> Any:
    """The job's RestartBackoffTimeStrategy, or None when it never restarts."""
    tolerance = job_graph.fault_tolerance
    if tolerance is None or not tolerance.may_restart:
        return None
    from fluvial.common.restart_backoff import create_backoff_strategy
    from fluvial.common.restart_strategy import NoRestartStrategyConfiguration, resolve_restart_strategy

    strategy = resolve_restart_strategy(tolerance.restart_strategy, job_graph.configuration, checkpointing_on)
    return None if isinstance(strategy, NoRestartStrategyConfiguration) else create_backoff_strategy(strategy)


def _templates(job_graph: JobGraph, tolerance: Any) -> dict[int, Any] | None:
    """Pristine copies of the user functions, when any subtask other than the first attempt of subtask 0 will
    need one (parallel subtasks, or restarts)."""
    if (tolerance is not None and tolerance.may_restart) or any(v.parallelism > 1 for v in job_graph.vertices):
        from fluvial.cluster.function_templates import pristine_functions

        return pristine_functions(job_graph)
    return None


def _receiver_settings(job_graph: JobGraph, checkpoints: Any) -> Any:
    """The receiver settings (validated now, so a bad one fails the submission), when the job has receivers."""
    if not any(
        node.is_source and getattr(node.operator.function, "uses_receivers", False)  # duck-typed sources
        for vertex in job_graph.vertices
        for node in vertex.nodes
    ):
        return None
    from fluvial.receiver.services import receiver_settings

    return receiver_settings(job_graph.configuration, checkpoints)
