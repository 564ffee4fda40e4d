"""The scheduler of one job (Flink's DefaultScheduler with the restart-all failover strategy): deploys every
subtask into its slot, follows the states the tasks report, and decides the job's fate.

Runs only on the JobMaster's main thread, so it locks nothing. Rules, numbered:
1. `start(restore)`: every ExecutionVertex goes DEPLOYING, consumers first, each through its slot's
   TaskManagerGateway.
2. A report for an attempt that is not the vertex's current one is stale (a cancelled attempt saying goodbye)
   and ignored. A report the vertex's state does not lead to is ignored with a debug line when it is a known
   race (RUNNING after the JobMaster asked for a cancel), else the guarded transition raises.
3. Every subtask FINISHED → the job is FINISHED. With checkpoints, a subtask finishes only after a checkpoint
   covers its end (FLIP-147): it reports the end of its data first, and once every subtask has, the final
   checkpoint is triggered at once (`on_end_of_data`); checkpoints go on while some subtasks have finished
   (`checkpoint_plan`).
4. A subtask FAILED while the job runs → the restart strategy decides (a FailureHandlingResult): RESTARTING (pending checkpoints are
   aborted, every subtask is cancelled; once all are down, after the strategy's delay, every subtask is
   redeployed as a new attempt restoring from the latest completed checkpoint) or FAILING (every subtask is
   cancelled, then FAILED with the user's exception as the cause). A NonRecoverableError anywhere in the
   failure's causes (checkpoint data that cannot be read back) fails the job whatever the strategy allows.
   A failure from a closed data connection (DataConnectionLost) first waits up to PEER_LOSS_GRACE_MS for its
   likely cause, a TaskManager lost, which then is the failure the job reports (naming it, its pid and how it
   died, as Flink names the remote TaskManager); the connection failure becomes a concurrent one.
5. `cancel()` → CANCELLING, every running subtask is cancelled, CANCELED once all are down.
Every status change and every restart is logged, every failure and restart at WARNING with its cause and attempt
number; each failure also goes into the job's exception history (`exception_history.py`, for the REST API), and
the latest failure and the failure count are kept for JobDetails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.plan import CheckpointPlan
from fluvial.checkpoint.restore import JobRestore
from fluvial.checkpoint.stop_mode import StopMode
from fluvial.cluster.exception_history import ExceptionHistory, entry_of
from fluvial.cluster.execution_graph import ExecutionGraph, ExecutionVertex
from fluvial.cluster.failure_handling import FailureHandlingResult
from fluvial.cluster.gateways import TaskManagerGateway
from fluvial.cluster.job_checkpointing import CheckpointingSetup, JobCheckpointing
from fluvial.cluster.messages import (
    AcknowledgeCheckpoint,
    CancelTask,
    DeclineCheckpoint,
    DeployTask,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    TaskEndOfData,
    TaskExecutionState,
    TriggerCheckpoint,
)
from fluvial.cluster.slots import SlotId
from fluvial.common.errors import is_non_recoverable
from fluvial.common.executors import Cancellable, ScheduledExecutor
from fluvial.common.failure_info import FailureInfo
from fluvial.common.job_status import JobStatus, checked_move
from fluvial.common.logs import RAISED_TO_CALLER
from fluvial.common.repeated_logs import limit_repeats
from fluvial.runtime.deployment import TaskFailure
from fluvial.runtime.execution_state import ExecutionState
from fluvial.runtime.network.remote_channels import DataConnectionLost

logger = logging.getLogger(__name__)
limit_repeats(logger)  # a failure loop says what fails, not 40 lines a second

RESOURCE_POLL_MS = 20
RESOURCE_WAIT_MS = 60_000
# how long a subtask failure from a closed data connection waits for its cause, the producing TaskManager found
# lost (its process's exit status comes a moment after its connections close), before it counts on its own
PEER_LOSS_GRACE_MS = 1_000


class JobStatusListener(Protocol):
    def job_status_changed(self, status: JobStatus, error: BaseException | None) -> None:
        """The job moved to `status`; `error` is the cause when it failed."""
        ...


class ResourceAvailability(Protocol):
    """Whether the cluster's TaskManagers are all up (a lost one may be restarting)."""

    def ready(self) -> bool: ...


class RestoreSource(Protocol):
    """Where redeployed subtasks restore from (the job's checkpointing, or the initial savepoint)."""

    def restore_for_restart(self) -> JobRestore | None: ...


class Scheduler:
    def __init__(
        self,
        graph: ExecutionGraph,
        slots: dict[tuple[int, int], SlotId],
        task_managers: Sequence[TaskManagerGateway],
        timer: ScheduledExecutor,
        backoff: Any,
        listener: JobStatusListener,
        task_settings: Any = None,
        templates: dict[int, Any] | None = None,
        receiver_settings: Any = None,
        clock: Callable[[], int] | None = None,
        resources: ResourceAvailability | None = None,
        restore_source: RestoreSource | None = None,
        checkpointing: CheckpointingSetup | None = None,
    ) -> None:
        self.graph = graph
        self._stopping = False  # cancel(stopping=True): stop-with-savepoint, which ends the job FINISHED
        self._slots = slots
        self._task_managers = task_managers
        self._timer = timer
        self._backoff = backoff  # a RestartBackoffTimeStrategy, or None: never restart
        self._listener = listener
        self._task_settings = task_settings
        self._templates = templates
        self._receiver_settings = receiver_settings
        self._clock = clock
        self._resources = resources
        self._waited_for_resources_ms = 0
        self.restore_source = restore_source
        self.checkpointing: JobCheckpointing | None = None  # built last: it asks this scheduler for its tasks
        self.status = JobStatus.CREATED
        self.restarts = 0
        self.failure: TaskFailure | None = None  # the task failure that failed the job
        self.fatal: BaseException | None = None  # a job-level error that failed the job
        self.last_failure: BaseException | None = None  # the latest failure, restarted from or not
        self.exceptions = ExceptionHistory()
        self.last_failure_info: FailureInfo | None = None  # the latest failure, as JobDetails report it
        self.failures = 0
        self._pending_restart: Cancellable | None = None
        self._held: tuple[Cancellable, ExecutionVertex, TaskFailure, int] | None = None  # `_hold`
        self._end_of_data: set[tuple[tuple[int, int], int]] = set()  # (subtask, attempt) awaiting a final checkpoint
        if checkpointing is not None:
            self.checkpointing = JobCheckpointing(
                graph.job_graph, self, timer, checkpointing.io, checkpointing.clock, checkpointing.restored_from
            )

    @property
    def job_id(self) -> str:
        return self.graph.job_id

    # -- deployment ---------------------------------------------------------------------------------------------

    def start(self, restore: JobRestore | None) -> None:
        self._move(JobStatus.RUNNING)
        self._deploy_all(restore)

    def _deploy_all(self, restore: JobRestore | None) -> None:
        logger.info(
            "job %s: deploying %d subtasks (restart %d)%s",
            self.job_id,
            len(self.graph.vertices),
            self.restarts,
            ", restoring their state" if restore else "",
        )
        for execution in self.graph.deployment_order():
            execution.transition(ExecutionState.DEPLOYING)
        for execution in self.graph.deployment_order():
            spec = self.graph.task_spec(
                execution,
                self._task_settings,
                (restore or {}).get(execution.id),
                self._templates,
                self._receiver_settings,
            )
            spec.channel_peers = {
                channel_id: self._slots[peer].task_manager
                for channel_id, peer in self.graph.channel_peers(spec).items()
            }
            slot = self._slots[execution.id]
            self._task_managers[slot.task_manager].submit_task(DeployTask(spec, slot.index))

    # -- task states --------------------------------------------------------------------------------------------

    def on_task_state(self, update: TaskExecutionState) -> None:
        execution = self.graph.current(update.attempt_id)
        if execution is None:
            return  # rule 2: a late report from an earlier attempt
        state = update.state
        if not execution.state.can_move_to(state):
            if execution.state is ExecutionState.CANCELING or execution.state.is_terminal:
                logger.debug("ignoring %s of %s: it is %s", state.value, execution.name, execution.state.value)
                return
        execution.transition(state)
        if state is ExecutionState.FINISHED and self.checkpointing is not None:
            self.checkpointing.abort_pending_awaiting(execution.id)
        if state is ExecutionState.FAILED:
            self._on_task_failed(execution, update.failure)
        if self.graph.all_terminal():
            self._on_all_terminal()

    def on_task_manager_lost(self, task_manager: int, error: BaseException) -> None:
        """Every subtask running on TaskManager `task_manager` failed with it (no cancel goes to a dead process)."""
        lost = [e for e in self.graph if self._slots[e.id].task_manager == task_manager and not e.state.is_terminal]
        for execution in lost:  # all of them first: nothing is sent to the dead process
            execution.transition(ExecutionState.FAILED)
        if lost:
            first = lost[0]
            self._on_task_failed(first, TaskFailure(error, first.job_vertex.name, first.name, ""))
        if lost and self.graph.all_terminal():
            self._on_all_terminal()

    def _hold(self, execution: ExecutionVertex, failure: TaskFailure) -> bool:
        """Whether `failure` waits for its cause: a subtask whose data connection closed failed because its
        producer's TaskManager died, most likely, and the loss of that TaskManager (which names it, its pid and
        how it died, as Flink's "remote task manager was lost" does) is the failure the job should report. It
        waits up to PEER_LOSS_GRACE_MS; a TaskManager lost meanwhile becomes the root and this one concurrent."""
        if not isinstance(failure.error, DataConnectionLost) or self.status is not JobStatus.RUNNING:
            return False
        if self._held is not None:  # one waits already: this one is its consequence
            self.exceptions.add_concurrent(
                entry_of(failure.error, execution.name, failure.operator_name, failure.traceback_text)
            )
            return True
        timer = self._timer.schedule(PEER_LOSS_GRACE_MS, self._release_held)
        self._held = (timer, execution, failure, self.restarts)
        return True

    def _release_held(self) -> None:
        """The held failure's wait is over (or every subtask is down): it counts now, unless its attempt was
        restarted or ended meanwhile (then it is a consequence of what did)."""
        if self._held is None:
            return
        timer, execution, failure, restarts = self._held
        self._held = None
        timer.cancel()
        if restarts != self.restarts:
            self.exceptions.add_concurrent(
                entry_of(failure.error, execution.name, failure.operator_name, failure.traceback_text)
            )
            return
        self._on_task_failed(execution, failure, held=True)

    def _on_task_failed(self, execution: ExecutionVertex, failure: TaskFailure | None, held: bool = False) -> None:
        if failure is not None and not held and self._hold(execution, failure):
            return
        error = failure.error if failure is not None else RuntimeError(f"subtask {execution.name} failed")
        self.last_failure = error
        where = (
            f"operator '{failure.operator_name}' in {failure.task_name} (attempt {execution.attempt})"
            if failure is not None
            else f"{execution.name} (attempt {execution.attempt})"
        )
        entry = entry_of(
            error,
            execution.name,
            failure.operator_name if failure is not None else None,
            failure.traceback_text if failure is not None else None,
        )
        if self.status is not JobStatus.RUNNING:
            self.exceptions.add_concurrent(entry)
            return  # already restarting, failing or cancelling: a consequence (its TaskManager logged it)
        self.exceptions.add_root(error, entry)
        result = self._handle_failure(error)
        self._record_failure(error, where, failure.traceback_text if failure is not None else None)
        if result.can_restart:
            logger.warning(
                "job %s: %s failed with %s: %s; restarting (restart %d)",
                self.job_id,
                where,
                type(error).__name__,
                error,
                self.restarts + 1,
            )
            self._move(JobStatus.RESTARTING)
        else:
            logger.error(
                "job %s: %s failed with %s: %s; %s",
                self.job_id,
                where,
                type(error).__name__,
                error,
                result.reason,
                extra=RAISED_TO_CALLER,
            )  # the caller gets it as JobExecutionException
            self.failure = failure
            self._move(JobStatus.FAILING)
        self._release_held()  # a held failure is a consequence now (not RUNNING any more): concurrent
        self._abort_checkpoints(CheckpointFailureReason.TASK_FAILURE)
        self._cancel_running()

    def _handle_failure(self, error: BaseException) -> FailureHandlingResult:
        """Whether the job restarts after `error`, by the restart strategy (told of the failure here)."""
        if is_non_recoverable(error):
            return FailureHandlingResult.unrecoverable(
                error, "no restart can fix this, so the job fails without restarting"
            )
        if self._backoff is None:
            return FailureHandlingResult.unrecoverable(error, "the restart strategy allows no restart")
        self._backoff.notify_failure(error, self._clock() if self._clock is not None else None)
        if not self._backoff.can_restart():
            return FailureHandlingResult.unrecoverable(
                error, f"the restart strategy allows no more restarts after {self.restarts}"
            )
        return FailureHandlingResult.restartable(error)

    def _record_failure(self, error: BaseException, where: str, traceback_text: str | None = None) -> None:
        from fluvial.common.time import current_millis

        self.failures += 1
        self.last_failure = error
        self.last_failure_info = FailureInfo.of(
            error, where, current_millis(), not is_non_recoverable(error), traceback_text
        )

    def _on_all_terminal(self) -> None:
        status = self.status
        if status is JobStatus.RESTARTING:
            if self._pending_restart is None:
                delay = self._backoff.get_backoff_time()
                logger.info("job %s: every subtask is down; restarting in %d ms", self.job_id, delay)
                self._pending_restart = self._timer.schedule(delay, self._restart)
        elif status is JobStatus.FAILING:
            self._move(JobStatus.FAILED)
        elif status is JobStatus.CANCELLING:
            self._move(JobStatus.FINISHED if self._stopping else JobStatus.CANCELED)
        elif status is JobStatus.RUNNING:
            if self._held is not None:  # nothing is left to wait with: the held failure counts now
                self._release_held()
                self._on_all_terminal()
                return
            if self.graph.all_in(ExecutionState.FINISHED):
                self._move(JobStatus.FINISHED)
                return
            stopped = [e.name for e in self.graph if e.state is not ExecutionState.FINISHED]
            self.fail(RuntimeError(f"subtasks ended without finishing while the job ran: {', '.join(stopped)}"))

    def _restart(self) -> None:
        """Rule 4's second half: a new attempt of every subtask, restoring from the latest checkpoint — once every
        TaskManager is up again (a lost one is being replaced)."""
        self._pending_restart = None
        if self.status is not JobStatus.RESTARTING:
            return
        if self._resources is not None and not self._resources.ready():
            if self._waited_for_resources_ms >= RESOURCE_WAIT_MS:
                self.fail(
                    RuntimeError(
                        f"the job cannot restart: its TaskManagers did not all come back within "
                        f"{RESOURCE_WAIT_MS // 1000} s"
                    )
                )
                return
            self._waited_for_resources_ms += RESOURCE_POLL_MS
            self._pending_restart = self._timer.schedule(RESOURCE_POLL_MS, self._restart)
            return
        self._waited_for_resources_ms = 0
        try:
            restore = self.restore_source.restore_for_restart() if self.restore_source is not None else None
        except BaseException as error:  # noqa: BLE001 - an unusable checkpoint fails the job, clearly
            self.fail(error, f"cannot restart: restoring the latest checkpoint failed with {type(error).__name__}")
            return
        self.restarts += 1
        cause = self.last_failure_info.summary() if self.last_failure_info is not None else "a failure"
        logger.warning("job %s: restart %d: redeploying every subtask after %s", self.job_id, self.restarts, cause)
        for execution in self.graph:
            execution.reset_for_new_attempt()
        self._move(JobStatus.RUNNING)
        self._deploy_all(restore)

    # -- job-level decisions ------------------------------------------------------------------------------------

    def handle_global_failure(self, error: BaseException) -> None:
        """A failure of the job itself that its restart strategy may recover from (too many failed
        checkpoints, as in Flink): restart every subtask if allowed, else fail the job."""
        if self.status is not JobStatus.RUNNING:
            return
        self.exceptions.add_root(error, entry_of(error))
        result = self._handle_failure(error)
        if not result.can_restart:
            self.fail(error, result.reason)
            return
        self._record_failure(error, "job")
        logger.warning(
            "job %s: %s: %s; restarting (restart %d)", self.job_id, type(error).__name__, error, self.restarts + 1
        )
        self._move(JobStatus.RESTARTING)
        self._abort_checkpoints(CheckpointFailureReason.JOB_FAILOVER)
        self._cancel_running()
        if self.graph.all_terminal():
            self._on_all_terminal()

    def fail(self, error: BaseException, why: str = "the job fails") -> None:
        """A failure no restart recovers from (an unusable checkpoint, a JobMaster error): cancel everything and
        fail the job with `error`."""
        if self.status.is_globally_terminal or self.fatal is not None:
            return
        logger.error("job %s: %s: %s: %s", self.job_id, why, type(error).__name__, error)
        self.fatal = error
        self.exceptions.add_root(error, entry_of(error))
        self._record_failure(error, "job")
        self._cancel_pending_restart()
        if self.status is not JobStatus.FAILING:
            self._move(JobStatus.FAILING)
        self._abort_checkpoints(CheckpointFailureReason.JOB_FAILOVER)
        self._cancel_running()
        if self.graph.all_terminal():
            self._on_all_terminal()

    def cancel(self, stopping: bool = False) -> None:
        """Cancel every subtask; the job ends CANCELED, or with `stopping` (stop-with-savepoint, its savepoint
        complete) FINISHED, as Flink ends a stopped job."""
        if self.status.is_globally_terminal or self.status is JobStatus.CANCELLING:
            return
        self._stopping = stopping
        self._cancel_pending_restart()
        self._move(JobStatus.CANCELLING)
        self._abort_checkpoints(CheckpointFailureReason.JOB_FAILOVER)
        self._cancel_running()
        if self.graph.all_terminal():
            self._on_all_terminal()

    def _cancel_pending_restart(self) -> None:
        if self._pending_restart is not None:
            self._pending_restart.cancel()
            self._pending_restart = None

    def _cancel_running(self) -> None:
        for execution in self.graph:
            if execution.state.is_terminal or execution.state is ExecutionState.CANCELING:
                continue
            if execution.state in (ExecutionState.CREATED, ExecutionState.SCHEDULED):
                execution.transition(ExecutionState.CANCELED)
                continue
            execution.transition(ExecutionState.CANCELING)
            slot = self._slots[execution.id]
            self._task_managers[slot.task_manager].cancel_task(CancelTask(self.graph.attempt_id(execution)))

    def _abort_checkpoints(self, reason: CheckpointFailureReason) -> None:
        if self.checkpointing is not None:
            self.checkpointing.abort_all_pending(reason)

    def _move(self, status: JobStatus) -> None:
        previous = self.status
        self.status = checked_move(previous, status, self.job_id)
        logger.info(
            "job %s (%s) switched from %s to %s",
            self.graph.job_graph.job_name,
            self.job_id,
            previous.value,
            status.value,
        )
        error = None
        if status is JobStatus.FAILED:
            error = self.fatal if self.fatal is not None else (self.failure.error if self.failure else None)
        self._listener.job_status_changed(status, error)

    # -- the coordinator's view of the subtasks (CheckpointTasks) -----------------------------------------------

    def checkpoint_plan(self) -> CheckpointPlan | CheckpointFailureReason:
        """Flink's DefaultCheckpointPlanCalculator. Every subtask running: trigger the sources, wait for all.
        Some FINISHED (FLIP-147, unless checkpoints-after-tasks-finish is off): trigger each running subtask
        whose producers have all finished (no barrier can reach it through its channels any more), wait for the
        running ones, and count the finished ones as acknowledged with the state of finished operators."""
        if self.status is not JobStatus.RUNNING or not self.graph.all_in(
            ExecutionState.RUNNING, ExecutionState.FINISHED
        ):
            return CheckpointFailureReason.NOT_ALL_TASKS_RUNNING
        executions = list(self.graph)
        finished = [e for e in executions if e.state is ExecutionState.FINISHED]
        if not finished:
            return CheckpointPlan([e.id for e in executions if e.job_vertex.is_source], {e.id for e in executions})
        running = [e for e in executions if e.state is ExecutionState.RUNNING]
        if not running or self._task_settings is None or not self._task_settings.final_checkpoint:
            return CheckpointFailureReason.NOT_ALL_TASKS_RUNNING
        graph = self.graph
        trigger = [e.id for e in running if all(p.state is ExecutionState.FINISHED for p in graph.producers_of(e))]
        return CheckpointPlan(
            trigger,
            {e.id for e in running},
            {e.id: tuple(node.operator_id for node in e.job_vertex.nodes) for e in finished},
            {e.job_vertex.id: e.job_vertex.parallelism for e in finished},
        )

    def on_end_of_data(self, message: TaskEndOfData) -> None:
        """A subtask waits for its final checkpoint. Once every subtask of the job does (or has finished), one is
        triggered at once (Flink's notifyEndOfData): a bounded job's end waits for no checkpoint interval."""
        execution = self.graph.current(message.attempt_id)
        if execution is None or self.checkpointing is None:
            return
        self._end_of_data.add((execution.id, execution.attempt))
        if all(e.state is ExecutionState.FINISHED or (e.id, e.attempt) in self._end_of_data for e in self.graph):
            logger.info(
                "job %s: every subtask reached the end of its data; triggering the final checkpoint", self.job_id
            )
            self.checkpointing.request_checkpoint()

    def on_acknowledge(self, message: AcknowledgeCheckpoint) -> None:
        """A subtask's state for a checkpoint, if it comes from the subtask's current attempt."""
        if self.checkpointing is not None and self.graph.current(message.attempt_id) is not None:
            self.checkpointing.receive_acknowledge(
                message.attempt_id.execution_vertex_id, message.checkpoint_id, message.states, message.metrics
            )

    def on_decline(self, message: DeclineCheckpoint) -> None:
        """A subtask's refusal of a checkpoint, if it comes from the subtask's current attempt."""
        if self.checkpointing is not None and self.graph.current(message.attempt_id) is not None:
            self.checkpointing.receive_decline(
                message.attempt_id.execution_vertex_id, message.checkpoint_id, message.reason, message.detail
            )

    def trigger(
        self,
        task: tuple[int, int],
        checkpoint_id: int,
        timestamp: int,
        savepoint_dir: str | None,
        stop: StopMode | None = None,
    ) -> None:
        execution = self.graph.vertices[task]
        slot = self._slots[task]
        self._task_managers[slot.task_manager].trigger_checkpoint(
            TriggerCheckpoint(self.graph.attempt_id(execution), checkpoint_id, timestamp, savepoint_dir, stop)
        )

    def notify_complete(self, checkpoint_id: int) -> None:
        for task_manager in self._task_managers:
            task_manager.notify_checkpoint_complete(NotifyCheckpointComplete(self.job_id, checkpoint_id))

    def notify_aborted(self, checkpoint_id: int) -> None:
        for task_manager in self._task_managers:
            task_manager.notify_checkpoint_aborted(NotifyCheckpointAborted(self.job_id, checkpoint_id))

    def fail_job(self, error: BaseException) -> None:
        self.handle_global_failure(error)

    def starting_subtasks(self) -> list[ExecutionVertex]:
        """Subtasks deployed and not yet running."""
        return [
            e
            for e in self.graph
            if e.state
            in (ExecutionState.CREATED, ExecutionState.SCHEDULED, ExecutionState.DEPLOYING, ExecutionState.INITIALIZING)
        ]

    def slot_of(self, execution_id: tuple[int, int]) -> SlotId:
        """The slot the subtask `execution_id` (vertex id, subtask index) is deployed into."""
        return self._slots[execution_id]

    def ended_subtasks(self) -> list[ExecutionVertex]:
        return [execution for execution in self.graph if execution.state.is_terminal]
