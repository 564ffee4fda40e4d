"""JobMaster: builds the ExecutionGraph, assigns slots, deploys subtasks, runs checkpoints, and decides the
job's fate from its subtasks' states.

Lifecycle, numbered:
1. Every subtask is deployed (restoring from a savepoint when `execution.savepoint.path` names one); with
   checkpointing on, the CheckpointCoordinator starts.
2. Every subtask FINISHED → the job finishes.
3. A subtask FAILED → if the restart strategy allows: RESTARTING — pending checkpoints are aborted, every
   subtask is cancelled, and once all are down, after the strategy's delay, every subtask is redeployed as a
   new attempt restoring from the latest completed checkpoint. Otherwise every other subtask is cancelled and
   the job fails with the user's exception as the cause.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from fluvial.cluster.execution_graph import ExecutionGraph
from fluvial.cluster.messages import (
    AcknowledgeCheckpoint,
    CancelTask,
    DeclineCheckpoint,
    DeployTask,
    JobStatus,
    NotifyCheckpoint,
    TaskExecutionState,
    TriggerCheckpoint,
)
from fluvial.cluster.slots import SlotId, assign_slots
from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.common.future import CompletableFuture as Future
from fluvial.common.job_execution_result import JobExecutionResult
from fluvial.graph.job_graph import JobGraph

TERMINAL = ("FINISHED", "FAILED", "CANCELED")


class JobMaster:
    def __init__(self, job_graph: JobGraph, task_managers: list[Any], free_slots: list[SlotId],
                 release_channels: Any = None) -> None:
        self.job_graph = job_graph
        self.execution_graph = ExecutionGraph(job_graph, _job_parameters(job_graph))
        self._task_managers = task_managers
        self._slots = assign_slots(job_graph, free_slots)
        self._release_channels = release_channels or (lambda dataset_ids: None)
        self._lock = threading.Lock()
        self._states: dict[tuple[int, int], str] = {}
        self._failure: TaskExecutionState | None = None
        self._fatal: BaseException | None = None
        self._cancel_requested = False
        self.status = JobStatus.CREATED
        self.result: Future = Future()
        self._started_at = 0.0
        self.attempt = 0
        self.restarts = 0
        tolerance = job_graph.fault_tolerance
        self._backoff: Any = None  # a RestartBackoffTimeStrategy when the job may restart
        self._templates: dict | None = None
        self.checkpointing: Any = None  # JobCheckpointing when checkpoints are on
        self._has_receivers = False
        checkpoints = tolerance.checkpoints if tolerance is not None else None
        if checkpoints is not None and checkpoints.enabled:
            from fluvial.cluster.job_checkpointing import JobCheckpointing

            self.checkpointing = JobCheckpointing(job_graph, self._send_trigger, self._send_notify,
                                                  self._all_running, self.failover)
        if tolerance is not None and tolerance.may_restart:
            from fluvial.common.restart_backoff import create_backoff_strategy
            from fluvial.common.restart_strategy import NoRestartStrategyConfiguration, resolve_restart_strategy

            strategy = resolve_restart_strategy(tolerance.restart_strategy, job_graph.configuration,
                                                checkpoints is not None and checkpoints.enabled)
            if not isinstance(strategy, NoRestartStrategyConfiguration):
                self._backoff = create_backoff_strategy(strategy)
        if self._backoff is not None or any(vertex.parallelism > 1 for vertex in job_graph.vertices):
            from fluvial.cluster.function_templates import pristine_functions

            self._templates = pristine_functions(job_graph)
        self._initial_restore = self._savepoint_restore(tolerance)

    @property
    def job_id(self) -> str:
        return self.job_graph.job_id

    # -- deployment ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._started_at = time.monotonic()
        self._start_receivers()
        self._deploy_all(self._initial_restore)
        if self.checkpointing is not None:
            self.checkpointing.coordinator.start()

    def _deploy_all(self, restore: dict | None) -> None:
        """Deploy every subtask. TaskManager threads report while this runs, so it holds the lock: a report
        waits until every subtask is known (no job ends on a partial view) and deployed (a failure's
        cancellation reaches all of them). Deploying only hands the task to an executor; it never reports."""
        settings = self.checkpointing.task_settings if self.checkpointing is not None else None
        with self._lock:
            self.status = JobStatus.RUNNING
            order = [(v, i) for v in reversed(self.job_graph.vertices) for i in range(v.parallelism)]
            for vertex, index in order:  # consumers first, so no producer waits on a ghost
                self._states[(vertex.id, index)] = "DEPLOYING"
            for vertex, index in order:
                slot = self._slots[(vertex.id, index)]
                spec = self.execution_graph.task_spec(
                    vertex, index, self.attempt, settings, (restore or {}).get((vertex.id, index)), self._templates)
                self._task_managers[slot.task_manager].deploy(DeployTask(spec, slot.index))

    def _start_receivers(self) -> None:
        """Receivers start with the job and stop when it ends; failovers of its tasks leave them running."""
        import sys

        source_module = sys.modules.get("fluvial.receiver.source")
        if source_module is None:
            return  # add_receiver loads it: without it no job has receivers
        ReceiverSource = source_module.ReceiverSource  # noqa: N806
        receivers = {
            node.operator.function.stream_id: node.operator.function.receiver
            for vertex in self.job_graph.vertices
            for node in vertex.nodes
            if node.is_source and isinstance(node.operator.function, ReceiverSource)
        }
        if not receivers:
            return
        from fluvial.receiver.services import receiver_settings, start_receivers

        tolerance = self.job_graph.fault_tolerance
        settings = receiver_settings(self.job_graph.configuration, tolerance.checkpoints if tolerance else None)
        start_receivers(self.job_id, receivers, settings)
        self._has_receivers = True

    def _savepoint_restore(self, tolerance: Any) -> dict | None:
        if tolerance is None or not tolerance.savepoint_path:
            return None
        from fluvial.checkpoint.savepoint import read_savepoint

        metadata = read_savepoint(tolerance.savepoint_path)
        from fluvial.cluster.job_checkpointing import restore_from

        return restore_from(metadata, self.job_graph, tolerance.allow_non_restored_state, tolerance.savepoint_path)

    # -- task states --------------------------------------------------------------------------------------------

    def on_task_state(self, update: TaskExecutionState) -> None:
        """Called from TaskManager threads; decisions are made under the lock, actions outside it."""
        cancel_others = restart = False
        with self._lock:
            if update.attempt != self.attempt:
                return  # a late report from a cancelled earlier attempt
            self._states[(update.vertex_id, update.subtask_index)] = update.state
            if update.state == "FAILED" and self.status is JobStatus.RUNNING and not self._cancel_requested:
                cancel_others = True
                if self._may_restart(update.error):
                    self.status = JobStatus.RESTARTING
                else:
                    self._failure = update
                    self.status = JobStatus.FAILING
            done = all(state in TERMINAL for state in self._states.values())
            restart = done and self.status is JobStatus.RESTARTING
        if update.state == "FINISHED" and self.checkpointing is not None:
            self.checkpointing.abort_pending_awaiting((update.vertex_id, update.subtask_index))
        if cancel_others:
            if self.checkpointing is not None:
                self.checkpointing.abort_pending_for_failover()
            self._cancel_all()
        if restart:
            delay = self._backoff.get_backoff_time() / 1000
            threading.Timer(delay, self._restart).start()
        elif done:
            self._complete()

    def _may_restart(self, error: BaseException | None) -> bool:
        if self._backoff is None:
            return False
        self._backoff.notify_failure(error, int(time.time() * 1000))
        return self._backoff.can_restart()

    def _restart(self) -> None:
        """Every subtask of the failed attempt is down: redeploy all, restoring from the latest checkpoint."""
        with self._lock:
            if self.status is not JobStatus.RESTARTING or self._cancel_requested:
                return
            self.attempt += 1
            self.restarts += 1
        self._release_channels({edge.edge_id for edge in self.job_graph.edges})
        try:
            restore = self._initial_restore
            if self.checkpointing is not None:
                latest = self.checkpointing.store.latest()
                if latest is not None:
                    from fluvial.cluster.job_checkpointing import restore_from

                    restore = restore_from(latest.metadata, self.job_graph, False, latest.metadata_location)
            self._deploy_all(restore)
        except BaseException as error:  # noqa: BLE001 - an unusable checkpoint fails the job, clearly
            self.fail(error)

    def _all_running(self) -> bool:
        with self._lock:
            return self.status is JobStatus.RUNNING and all(s == "RUNNING" for s in self._states.values())

    # -- checkpoint messages ------------------------------------------------------------------------------------

    def _send_trigger(self, message: TriggerCheckpoint) -> None:
        slot = self._slots[(message.vertex_id, message.subtask_index)]
        self._task_managers[slot.task_manager].trigger_checkpoint(message)

    def _send_notify(self, message: NotifyCheckpoint) -> None:
        for task_manager in self._task_managers:
            task_manager.notify_checkpoint(message)

    def acknowledge_checkpoint(self, message: AcknowledgeCheckpoint) -> None:
        if self.checkpointing is not None:
            self.checkpointing.coordinator.receive_acknowledge(
                (message.vertex_id, message.subtask_index), message.checkpoint_id, message.states)

    def decline_checkpoint(self, message: DeclineCheckpoint) -> None:
        if self.checkpointing is not None:
            self.checkpointing.coordinator.receive_decline(
                (message.vertex_id, message.subtask_index), message.checkpoint_id, message.reason)

    def trigger_savepoint(self, target_directory: str | None) -> Future:
        if self.checkpointing is None:
            raise RuntimeError("savepoints need checkpointing: call env.enable_checkpointing(...)")
        from fluvial.checkpoint.savepoint import savepoint_storage, savepoint_target

        directory = savepoint_target(target_directory, self.job_graph.configuration)
        with self._lock:
            status = self.status
            ended = sorted(key for key, state in self._states.items() if state in TERMINAL)
        if status is not JobStatus.RUNNING or ended:
            # A subtask that ended can take no part: the savepoint could never complete. Say so now.
            why = f"it is {status.name}" if status is not JobStatus.RUNNING else (
                f"{len(ended)} of its subtasks have already ended (first: vertex {ended[0][0]} subtask {ended[0][1]})")
            refused: Future = Future()
            refused.set_exception(RuntimeError(f"cannot take a savepoint of job {self.job_id}: {why}"))
            return refused
        return self.checkpointing.coordinator.trigger_checkpoint(
            is_savepoint=True, savepoint_storage=savepoint_storage(directory, self.job_id), savepoint_dir=directory)

    # -- ending -------------------------------------------------------------------------------------------------

    def stop_after_savepoint(self) -> None:
        """stop-with-savepoint: the savepoint is complete, so the job ends as stopped (cancelled, in Flink's
        terms for a job that is told to stop); its state lives on in the savepoint."""
        self.cancel()

    def cancel(self) -> None:
        with self._lock:
            if self.status.is_globally_terminal:
                return
            self._cancel_requested = True
            self.status = JobStatus.CANCELLING
            done = all(state in TERMINAL for state in self._states.values())
        self._cancel_all()
        if done:
            self._complete()

    def failover(self, error: BaseException) -> None:
        """A job-level failure the restart strategy may recover from (too many failed checkpoints, as in
        Flink): restart every task from the latest checkpoint if allowed, else fail the job."""
        with self._lock:
            restart = self.status is JobStatus.RUNNING and not self._cancel_requested and self._may_restart(error)
            if restart:
                self.status = JobStatus.RESTARTING
        if not restart:
            self.fail(error)
            return
        if self.checkpointing is not None:
            self.checkpointing.abort_pending_for_failover()
        self._cancel_all()

    def fail_internally(self, error: BaseException) -> None:
        """The JobMaster itself raised while handling a report: fail the job with that error (the last resort
        that keeps `execute()` from waiting forever)."""
        try:
            self.fail(error)
        finally:
            if not self.result.done():
                wrapped = JobExecutionException(f"Job '{self.job_graph.job_name}' failed inside the JobMaster: "
                                                f"{type(error).__name__}: {error}", self.job_id)
                wrapped.__cause__ = error
                self.result.set_exception(wrapped)

    def fail(self, error: BaseException) -> None:
        """A failure of the job itself (not of a task): e.g. too many failed checkpoints, an unusable
        checkpoint. Every task is cancelled and the job fails with this error."""
        with self._lock:
            if self.status.is_globally_terminal or self._fatal is not None:
                return
            self._fatal = error
            self.status = JobStatus.FAILING
            done = all(state in TERMINAL for state in self._states.values())
        self._cancel_all()
        if done:
            self._complete()

    def _cancel_all(self) -> None:
        for (vertex_id, index), slot in self._slots.items():
            self._task_managers[slot.task_manager].cancel(CancelTask(self.job_id, vertex_id, index))

    def _complete(self) -> None:
        if self.result.done():
            return
        if self.checkpointing is not None:
            self.checkpointing.coordinator.stop()
            self.checkpointing.abort_pending_for_failover()
        if self._has_receivers:
            from fluvial.receiver.services import stop_receivers

            stop_receivers(self.job_id)
        runtime_ms = int((time.monotonic() - self._started_at) * 1000)
        name = self.job_graph.job_name
        if self._fatal is not None:
            self.status = JobStatus.FAILED
            error = JobExecutionException(f"Job '{name}' ({self.job_id}) failed: {self._fatal}", self.job_id)
            error.__cause__ = self._fatal
            self.result.set_exception(error)
        elif self._failure is not None:
            failure = self._failure
            self.status = JobStatus.FAILED
            error = JobExecutionException(
                f"Job '{name}' ({self.job_id}) failed: operator '{failure.operator_name}' in task "
                f"{failure.task_name} raised {type(failure.error).__name__}: {failure.error}",
                self.job_id,
            )
            error.__cause__ = failure.error
            self.result.set_exception(error)
        elif self._cancel_requested:
            self.status = JobStatus.CANCELED
            self.result.set_exception(JobCancelledException(f"Job '{name}' ({self.job_id}) was cancelled", self.job_id))
        else:
            self.status = JobStatus.FINISHED
            self.result.set_result(JobExecutionResult(self.job_id, runtime_ms))


def _job_parameters(job_graph: JobGraph) -> dict[str, str]:
    config = job_graph.execution_config
    return config.get_global_job_parameters() if config is not None else {}
