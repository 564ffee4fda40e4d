"""TaskManager: offers slots and runs the subtasks deployed into them on one TaskExecutor thread.

It is the TaskManagerGateway of this process (deploy, cancel, trigger, notify, release) and speaks to each
job's JobMaster only through that job's JobMasterGateway, with the dataclass messages of `messages.py` — so a
TaskManager in another process is the same object behind a transport. What it shares among the tasks of a job
(checkpoint storage, the I/O thread of asynchronous snapshot parts, receivers) it keeps per job and drops when
the JobMaster releases the job.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.cluster.gateways import JobMasterGateway
from fluvial.cluster.messages import (
    AcknowledgeCheckpoint,
    CancelTask,
    DeclineCheckpoint,
    DeployTask,
    MetricsSnapshot,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    ReleaseJob,
    TaskEndOfData,
    TaskExecutionState,
    TriggerCheckpoint,
)
from fluvial.cluster.task_canceler import TaskCanceler
from fluvial.common.executors import SingleThreadExecutor
from fluvial.common.thread_stacks import stack_of
from fluvial.runtime.channels import ALL_ATTEMPTS, Channels
from fluvial.runtime.deployment import ExecutionAttemptId, TaskFailure, TaskSpec
from fluvial.runtime.execution_state import ExecutionState
from fluvial.runtime.executor import TaskExecutor
from fluvial.runtime.operators.runtime_context import CollectTarget
from fluvial.runtime.task import Task, TaskServices
from fluvial.state.factory import release_job_directories

if TYPE_CHECKING:
    from fluvial.checkpoint.metadata import SubtaskState

logger = logging.getLogger(__name__)


class TaskCheckpointResponder:
    """A task's CheckpointResponder: acknowledgements and declines as messages to its job's JobMaster."""

    __slots__ = ("_gateway", "_spec")

    def __init__(self, gateway: JobMasterGateway, spec: TaskSpec) -> None:
        self._gateway = gateway
        self._spec = spec

    def acknowledge(self, checkpoint_id: int, states: dict[str, SubtaskState], metrics: Any = None) -> None:
        spec = self._spec
        self._gateway.acknowledge_checkpoint(AcknowledgeCheckpoint(spec.attempt_id, checkpoint_id, states, metrics))

    def decline(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None:
        spec = self._spec
        self._gateway.decline_checkpoint(DeclineCheckpoint(spec.attempt_id, checkpoint_id, reason, detail))


class TaskMetricsReporter:
    """A task's MetricsReporter: its snapshots as MetricsSnapshot messages to its job's JobMaster."""

    __slots__ = ("_gateway", "_spec")

    def __init__(self, gateway: JobMasterGateway, spec: TaskSpec) -> None:
        self._gateway = gateway
        self._spec = spec

    def report(self, snapshot: Any) -> None:
        spec = self._spec
        self._gateway.report_metrics(MetricsSnapshot(spec.attempt_id, snapshot))


class JobCheckpointStorage:
    """A job's checkpoint storage as its tasks on this TaskManager see it (a CheckpointStorageProvider), built
    from the job's storage description once, as an out-of-process TaskManager would."""

    def __init__(self, job_id: str, description: Any) -> None:
        self._job_id = job_id
        self._description = description
        self._access: Any = None
        self._lock = threading.Lock()

    def checkpoint_storage(self) -> Any:
        with self._lock:
            if self._access is None:
                from fluvial.checkpoint.storage import create_checkpoint_storage

                self._access = create_checkpoint_storage(self._description, self._job_id)
            return self._access

    def savepoint_storage(self, directory: str) -> Any:
        from fluvial.checkpoint.savepoint import savepoint_storage

        return savepoint_storage(directory, self._job_id, self._description)


class TaskManager:
    def __init__(
        self,
        index: int,
        number_of_slots: int,
        channels: Channels,
        collect_target: Callable[[str], CollectTarget] | None = None,
        on_stuck_task: Callable[[Task, int], None] | None = None,
    ) -> None:
        """`on_stuck_task(task, timeout_ms)`: what a TaskManager process does with a task that did not cancel
        within task.cancellation.timeout (it ends the process); None: abandon its thread (thread mode)."""
        self.index = index
        self._on_stuck_task = on_stuck_task
        self.number_of_slots = number_of_slots
        self.resource_id = f"tm-{index}-{os.urandom(4).hex()}"  # unique among the TaskManagers of a process
        self._channels = channels
        self._collect_target = collect_target
        self._executor = TaskExecutor(f"fluvial-taskmanager-{index}")
        self._abandoned: list[TaskExecutor] = []  # threads stuck in a task that did not cancel (thread mode)
        self._canceler = TaskCanceler(f"fluvial-taskmanager-{index}-canceler", self)
        self._tasks: dict[ExecutionAttemptId, Task] = {}  # one attempt per subtask: deploying drops older ones
        self._job_masters: dict[str, JobMasterGateway] = {}
        self._storages: dict[str, JobCheckpointStorage] = {}
        self._checkpoint_io: SingleThreadExecutor | None = None
        self._receivers: Any = None  # TaskManagerReceivers, once a job with receivers runs here
        self._lock = threading.Lock()

    def register_job_master(self, job_id: str, gateway: JobMasterGateway) -> None:
        """Where this TaskManager reports the tasks of `job_id` (before any of them is deployed)."""
        with self._lock:
            self._job_masters[job_id] = gateway

    @property
    def receivers(self) -> Any:
        """The TaskManagerReceivers of this TaskManager (created on first use)."""
        with self._lock:
            if self._receivers is None:
                from fluvial.receiver.services import TaskManagerReceivers

                self._receivers = TaskManagerReceivers()
            return self._receivers

    # -- TaskManagerGateway -------------------------------------------------------------------------------------

    def submit_task(self, message: DeployTask) -> None:
        spec = message.spec
        if spec.main_classes is not None:  # a TaskManager process: the script's classes, before any record
            from fluvial.cluster.code_shipping import install_classes

            install_classes(spec.main_classes)
        if spec.attempt > 0:
            self._channels.release_attempts_before(
                spec.job_id, spec.attempt
            )  # the failed attempt's channels are garbage
        task = Task(spec, self._services(spec))
        attempt_id = spec.attempt_id
        with self._lock:
            for older in [
                key
                for key in self._tasks
                if key.execution_vertex_id == attempt_id.execution_vertex_id and key.job_id == attempt_id.job_id
            ]:
                del self._tasks[older]  # a later attempt of the same subtask replaces it (its reports are stale)
            self._tasks[attempt_id] = task
        task.executor.submit(task)

    def _services(self, spec: TaskSpec) -> TaskServices:
        gateway = self._job_masters[spec.job_id]
        with self._lock:
            executor = self._executor
        services = TaskServices(
            self._channels,
            executor,
            self,
            self._collect_target,
            metrics_reporter=TaskMetricsReporter(gateway, spec),
            task_manager_id=self.resource_id,
        )
        if spec.checkpointing is not None:
            with self._lock:
                storage = self._storages.get(spec.job_id)
                if storage is None:
                    storage = self._storages[spec.job_id] = JobCheckpointStorage(
                        spec.job_id, spec.checkpointing.storage
                    )
                if self._checkpoint_io is None:
                    self._checkpoint_io = SingleThreadExecutor(f"fluvial-checkpoint-io-tm{self.index}")
            services.checkpoint_storage = storage
            services.checkpoint_io = self._checkpoint_io
            services.checkpoint_responder = TaskCheckpointResponder(gateway, spec)
        if spec.receiver_settings is not None:
            services.receivers = self.receivers.for_job(spec.job_id, spec.receiver_settings)
        return services

    def _task(self, attempt_id: ExecutionAttemptId) -> Task | None:
        with self._lock:
            return self._tasks.get(attempt_id)

    def cancel_task(self, message: CancelTask) -> None:
        task = self._task(message.attempt_id)
        if task is not None:
            self._canceler.cancel(task)

    def cancellation_timed_out(self, task: Task, timeout_ms: int) -> None:
        """CancellationTimeout, in thread mode: the task is CANCELED and its thread abandoned; later tasks run
        on a new thread. A TaskManager process ends itself instead (`on_stuck_task`), as Flink's does."""
        if self._on_stuck_task is not None and not task.state.is_terminal:
            self._on_stuck_task(task, timeout_ms)
            return
        if not task.abandon():
            return
        stuck = task.executor
        where = stack_of(stuck.thread)
        with self._lock:
            if stuck is self._executor:
                self._abandoned.append(stuck)
                self._executor = TaskExecutor(f"fluvial-taskmanager-{self.index}-{len(self._abandoned)}")
        stuck.shutdown(timeout=0)
        logger.error(
            "%s (attempt %d) did not cancel within %d ms (task.cancellation.timeout): its thread %s is "
            "stuck in user code and is abandoned; the task is CANCELED and this TaskManager runs its "
            "other tasks on a new thread. The thread is stuck in:\n%s",
            task.name,
            task.spec.attempt,
            timeout_ms,
            stuck.name,
            where,
        )

    def trigger_checkpoint(self, message: TriggerCheckpoint) -> None:
        task = self._task(message.attempt_id)
        if task is not None:
            task.trigger_checkpoint(message.checkpoint_id, message.timestamp, message.savepoint_dir, message.stop)
            return
        gateway = self._job_masters.get(message.job_id)
        if gateway is not None:  # it ended (a trigger raced its end): not ready, which is no checkpoint failure
            gateway.decline_checkpoint(
                DeclineCheckpoint(
                    message.attempt_id,
                    message.checkpoint_id,
                    CheckpointFailureReason.DECLINED_TASK_CLOSING,
                    "the subtask is no longer running here",
                )
            )

    def notify_checkpoint_complete(self, message: NotifyCheckpointComplete) -> None:
        for task in self._tasks_of(message.job_id):
            task.notify_checkpoint_complete(message.checkpoint_id)

    def notify_checkpoint_aborted(self, message: NotifyCheckpointAborted) -> None:
        for task in self._tasks_of(message.job_id):
            task.notify_checkpoint_aborted(message.checkpoint_id)

    def release_job(self, message: ReleaseJob) -> None:
        job_id = message.job_id
        with self._lock:
            self._storages.pop(job_id, None)
            receivers = self._receivers
        if receivers is not None:
            receivers.release_job(job_id)
        self._channels.release_attempts_before(job_id, ALL_ATTEMPTS)
        release_job_directories(job_id)

    def _tasks_of(self, job_id: str) -> list[Task]:
        with self._lock:
            return [task for attempt_id, task in self._tasks.items() if attempt_id.job_id == job_id]

    # -- TaskStateListener: what the tasks report ---------------------------------------------------------------

    def task_state_changed(self, task: Task, state: ExecutionState, failure: TaskFailure | None) -> None:
        spec = task.spec
        key = spec.attempt_id
        with self._lock:
            if state.is_terminal and self._tasks.get(key) is task:
                del self._tasks[key]
            gateway = self._job_masters.get(spec.job_id)
        if state is ExecutionState.FAILED:  # the JobMaster logs the failure with what it decided
            logger.info(
                "%s (attempt %d) failed in operator '%s': %s",
                task.name,
                spec.attempt,
                failure.operator_name if failure else "?",
                failure.error if failure else "",
            )
        if gateway is not None:
            gateway.update_task_execution_state(TaskExecutionState(spec.attempt_id, state, failure))

    def task_end_of_data(self, task: Task) -> None:
        spec = task.spec
        with self._lock:
            gateway = self._job_masters.get(spec.job_id)
        if gateway is not None:
            gateway.notify_end_of_data(TaskEndOfData(spec.attempt_id))

    def shutdown(self) -> None:
        self._canceler.shutdown()
        for stuck in self._abandoned:
            stuck.shutdown(timeout=0)
        self._executor.shutdown()
        if self._checkpoint_io is not None:
            self._checkpoint_io.shutdown()
        if self._receivers is not None:
            self._receivers.shutdown()
