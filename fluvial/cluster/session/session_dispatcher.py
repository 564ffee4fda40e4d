"""SessionDispatcher: the Dispatcher of a session cluster (Flink's, in a standalone session) — it takes jobs,
gives each the slots it needs on the cluster's long-lived TaskManager processes, runs each on a JobMaster of its
own, and answers the REST API about all of them (the DispatcherView of `fluvial.web.dispatcher_view`).

It is also the TaskManager pool's listener (`fluvial.cluster.process.pool.TaskManagerPoolListener`): the
TaskManagers' reports go to the JobMaster of the job they name; a lost TaskManager is told to every JobMaster
(each fails over the subtasks it had there, under its restart strategy; jobs with none there go on); collected
records go to the collect buffer of their collect id.

Submission, numbered:
1. The job asks the SlotPool for `required_slots()` slots. More than the cluster has: refused at once
   (JobSubmissionError, naming both numbers). Free now: it starts (3). Otherwise it waits, listed as CREATED,
   up to `slot.request.timeout` (the job's configuration, else the cluster's; Flink's key, default 300000 ms),
   then fails naming the slots it needed, the free ones and the jobs holding the others.
2. A job that ends gives its slots back; waiting jobs that fit now start, first come first served.
3. Start: a JobMaster over every TaskManager's gateway with the job's slots. A job whose JobMaster cannot be
   built (a savepoint that cannot be read, ...) is refused at submission when it could start at once, and ends
   FAILED with that error when it had waited.
Threads: REST handlers and the pool's reader threads call in; state changes under one lock; JobMasters are
built and slot timeouts fire on the dispatcher's own thread (`timer`), never on a JobMaster's.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from fluvial.cluster.collect import CollectBuffer
from fluvial.cluster.job_client import MiniClusterJobClient
from fluvial.cluster.job_details import JobDetails, SlotWait
from fluvial.cluster.job_master import JobMaster
from fluvial.cluster.local_dispatcher import (
    ClusterOverview,
    JobSubmissionError,
    JobView,
    RequestRefused,
    TaskManagerDetails,
    UnknownJobError,
    cluster_overview,
    host_details,
    job_metrics,
    savepoint,
    stop_with_savepoint,
)
from fluvial.cluster.session.session_job import JobPhase, SessionJob
from fluvial.cluster.session.slot_pool import SlotGrant, SlotPool, SlotRequestResult
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ResourceError
from fluvial.common.executors import ScheduledExecutor, SingleThreadExecutor
from fluvial.common.future import CompletableFuture
from fluvial.common.job_status import JobStatus
from fluvial.common.logs import task_manager_log_marker
from fluvial.common.time import current_millis
from fluvial.metrics.snapshot import JobMetricsSnapshot

if TYPE_CHECKING:
    from fluvial.common.job_execution_result import JobExecutionResult

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT_SECONDS = 10.0
SLOT_REQUEST_TIMEOUT_KEY = "slot.request.timeout"


class TaskManagerSet(Protocol):
    """The cluster's TaskManagers as the dispatcher needs them (`TaskManagerProcesses`)."""

    gateways: list[Any]  # TaskManagerGateway by index, each with `resource_id` and `number_of_slots`

    @property
    def pids(self) -> list[int]: ...

    def gc_collections(self, pid: int) -> tuple[int, ...]:
        """What TaskManager process `pid` last reported of its garbage collections, per generation."""
        ...

    def ready(self) -> bool:
        """Every TaskManager has a live, registered process (restarts wait for this)."""
        ...


class SessionDispatcher:
    def __init__(
        self,
        slot_pool: SlotPool,
        configuration: Configuration | None = None,
        *,
        timer: ScheduledExecutor | None = None,
        on_shutdown: Callable[[], None] | None = None,
        request_timeout: float = REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        """`configuration`: the cluster's (its slot.request.timeout is the default of every job);
        `on_shutdown`: what DELETE /cluster calls (the JobManager's stop)."""
        self._slots = slot_pool
        self._configuration = configuration or Configuration()
        self._own_timer = timer is None
        self._timer = timer or SingleThreadExecutor("fluvial-dispatcher", self._mail_failed)
        self._on_shutdown = on_shutdown
        self._request_timeout = request_timeout
        self._task_managers: TaskManagerSet | None = None
        self._lock = threading.Lock()
        self._jobs: dict[str, SessionJob] = {}  # in submission order
        self._collect: dict[str, CollectBuffer] = {}  # collect id -> buffer, while a client may still take from it
        self._closed = False  # shutting down: no job is taken or started any more
        self._job_end_listeners: list[Callable[[str], None]] = []  # when_job_ended

    def serve(self, task_managers: TaskManagerSet) -> None:
        """Run jobs on `task_managers` (started, with this dispatcher as their listener)."""
        self._task_managers = task_managers

    # -- TaskManagerPoolListener --------------------------------------------------------------------------------

    def job_master_gateway(self, job_id: str) -> JobMaster | None:
        with self._lock:
            job = self._jobs.get(job_id)
        return job.job_master if job is not None else None

    def collect_buffer(self, collect_id: str) -> CollectBuffer:
        with self._lock:
            buffer = self._collect.get(collect_id)
        if buffer is None:  # its job ended and its client took the end, or closed: what still comes is dropped
            buffer = CollectBuffer(collect_id)
            buffer.close()
        return buffer

    def task_manager_lost(self, index: int, error: BaseException) -> None:
        for job in self._job_list():
            if job.job_master is not None and not job.result.done():
                job.job_master.task_manager_lost(index, error)

    # -- submission (numbered in the module docstring) -----------------------------------------------------------

    def submit_job(self, job_graph: Any) -> str:
        if self._task_managers is None:
            raise RequestRefused("the cluster is still starting its TaskManagers: submit again in a moment")
        required = job_graph.required_slots()
        job = SessionJob(job_graph, required)
        with self._lock:
            if self._closed:
                raise RequestRefused("the cluster is shutting down: it takes no more jobs")
            if job.job_id in self._jobs:
                raise JobSubmissionError(f"a job with id {job.job_id} was already submitted: give the job a new id")
            outcome, grant = self._slots.request(job.job_id, required)
            if outcome is SlotRequestResult.NEVER_FITS:
                raise JobSubmissionError(
                    f"job '{job.name}' needs {required} task slots (per slot sharing group, its highest "
                    f"parallelism) but the cluster has {self._slots.total} ({self._slots.task_managers} TaskManagers "
                    f"with {self._slots.slots_per_task_manager} slots each): lower the job's parallelism, or start "
                    "the cluster with more (fluvial cluster start --taskmanagers N --slots S)"
                )
            self._jobs[job.job_id] = job
            for collect_id in job.collect_ids:
                self._collect[collect_id] = CollectBuffer(collect_id)

        def ended(_: CompletableFuture[JobExecutionResult]) -> None:
            self._timer.execute(lambda: self._job_ended(job))

        job.result.add_done_callback(ended)
        if grant is not None:
            error = self._start(job, grant)
            if error is not None:
                with self._lock:
                    del self._jobs[job.job_id]
                    for collect_id in job.collect_ids:
                        self._collect.pop(collect_id, None)
                raise JobSubmissionError(f"job '{job.name}' cannot start: {error}") from error
        else:
            timeout_ms = self._slot_request_timeout(job_graph)
            with self._lock:
                if job.phase is JobPhase.WAITING:
                    job.slot_timeout = self._timer.schedule(timeout_ms, lambda: self._slot_request_timed_out(job))
            logger.info(
                "job %s (%s) waits for %d task slots (%d of %d free; jobs waiting before it: %d), at most %d ms",
                job.name,
                job.job_id,
                required,
                self._slots.free,
                self._slots.total,
                len(self._slots.waiting()) - 1,
                timeout_ms,
            )
        return job.job_id

    def _start(self, job: SessionJob, grant: SlotGrant) -> BaseException | None:
        """Step 3: its JobMaster, started; the error that kept it from starting (the job has ended FAILED)."""
        # set: SessionCluster calls serve() before its REST API takes any job
        task_managers = cast(TaskManagerSet, self._task_managers)
        with self._lock:
            job.starting()
        try:
            self._build_python_environment(job.job_graph)
            job_master = JobMaster(job.job_graph, task_managers.gateways, list(grant.slots), resources=task_managers)
        except Exception as error:  # noqa: BLE001 - any construction error ends the job, reported whole
            logger.error("job %s (%s) cannot start: %s", job.name, job.job_id, error)
            with self._lock:
                job.end_unstarted(JobStatus.FAILED, error)
            return error
        with self._lock:
            job.started(job_master)
            cancel = job.cancel_requested
        logger.info("job %s (%s) starts in slots %s", job.name, job.job_id, ", ".join(map(str, grant.slots)))
        job_master.start()
        if cancel:  # cancelled while its JobMaster was built
            job_master.cancel()
        return None

    def _build_python_environment(self, job_graph: Any) -> None:
        """The job's python.requirements and python.archives, built on this machine, where the cluster's
        TaskManager processes run (each enters it when the job deploys there); the install directory is the
        job's python.requirements.install-dir, else the cluster's, else the user's cache."""
        from fluvial.cluster import python_environment

        install_dir = python_environment.install_dir_of(job_graph.configuration, self._configuration)
        job_graph.python_environment = python_environment.build(job_graph.configuration, job_graph.job_id, install_dir)

    def _slot_request_timeout(self, job_graph: Any) -> int:
        job_configuration = job_graph.configuration
        if job_configuration is not None and job_configuration.contains_key(SLOT_REQUEST_TIMEOUT_KEY):
            job_timeout: int = job_configuration.get(SLOT_REQUEST_TIMEOUT_KEY)
            return job_timeout
        timeout: int = self._configuration.get(SLOT_REQUEST_TIMEOUT_KEY)
        return timeout

    def _slot_request_timed_out(self, job: SessionJob) -> None:
        """On the dispatcher's thread: the job waited `slot.request.timeout` (step 1)."""
        with self._lock:
            if job.phase is not JobPhase.WAITING:
                return
            holders = [
                f"{other.job_id} ({len(self._slots.slots_of(other.job_id))})"
                for other in self._jobs.values()
                if self._slots.slots_of(other.job_id)
            ]
            error = ResourceError(
                f"job '{job.name}' could not get the {job.required_slots} task slots it needs within "
                f"{SLOT_REQUEST_TIMEOUT_KEY} ({self._slot_request_timeout(job.job_graph)} ms): {self._slots.free} "
                f"of the cluster's {self._slots.total} slots were free; jobs holding slots: "
                f"{', '.join(holders) or 'none'}. Cancel one (fluvial cancel JOBID), wait until some end and submit "
                f"again, or raise {SLOT_REQUEST_TIMEOUT_KEY}"
            )
            grants = self._slots.withdraw(job.job_id)
            job.slot_timeout = None
            job.end_unstarted(JobStatus.FAILED, error)
        logger.warning("%s", error)
        self._start_granted(grants)

    def when_job_ended(self, listener: Callable[[str], None]) -> None:
        """Call `listener(job_id)` on the dispatcher's thread when a job has ended (its archive is written there)."""
        self._job_end_listeners.append(listener)

    def _job_ended(self, job: SessionJob) -> None:
        """On the dispatcher's thread (step 2): its slots go back, its collect buffers end, listeners hear of it."""
        for listener in self._job_end_listeners:
            try:
                listener(job.job_id)
            except Exception:  # noqa: BLE001 - a listener's failure (a full disk) must not keep the slots
                logger.exception("job %s: a job-end listener failed", job.job_id)
        with self._lock:
            grants = self._slots.release(job.job_id)
            buffers = [self._collect[cid] for cid in job.collect_ids if cid in self._collect]
        for buffer in buffers:
            buffer.finish()
        from fluvial.cluster import python_environment

        python_environment.discard(job.job_graph.python_environment)
        self._start_granted(grants)

    def _start_granted(self, grants: list[SlotGrant]) -> None:
        for grant in grants:
            with self._lock:
                if self._closed:
                    return  # shutdown() cancels the jobs that still wait
                job = self._jobs[grant.job_id]
            self._start(job, grant)

    # -- what the REST API reads ---------------------------------------------------------------------------------

    def jobs(self) -> list[JobDetails]:
        return [self._details(job) for job in self._job_list()]

    def job(self, job_id: str) -> JobView:
        job = self._job(job_id)
        tasks = job.job_master.metrics.tasks() if job.job_master is not None else []
        return JobView(self._details(job), tasks, self._task_manager_ids())

    def _details(self, job: SessionJob) -> JobDetails:
        """The job's details; while it waits for slots, with what it waits on (`waiting_for_slots`)."""
        details = job.details(self._request_timeout)
        with self._lock:
            if job.phase is not JobPhase.WAITING or job.job_id not in self._slots.waiting():
                return details
            wait = SlotWait(
                job.required_slots,
                self._slots.free,
                self._slots.total,
                self._slots.waiting().index(job.job_id),
                job.submitted_at,
                self._slot_request_timeout(job.job_graph),
            )
        return dataclasses.replace(details, waiting_for_slots=wait)

    def metrics(self) -> list[JobMetricsSnapshot]:
        now = current_millis()
        return [
            job_metrics(self._details(job), job.job_master.metrics.tasks() if job.job_master is not None else [], now)
            for job in self._job_list()
        ]

    def task_managers(self) -> list[TaskManagerDetails]:
        if self._task_managers is None:
            return []
        cores, memory = host_details()
        now = current_millis()
        with self._lock:
            free = self._slots.free_by_task_manager()
        pids = self._task_managers.pids
        from fluvial.cluster.session.cluster_file import log_directory

        log_file, stdout_file = str(log_directory() / "jobmanager.log"), str(log_directory() / "jobmanager.out")
        return [
            TaskManagerDetails(
                gateway.resource_id,
                gateway.number_of_slots,
                free[index],
                path=f"pid {pids[index]}" if index < len(pids) else "starting",
                cpu_cores=cores,
                physical_memory=memory,
                last_heartbeat=now,
                pid=pids[index] if index < len(pids) else 0,
                log_file=log_file,
                stdout_file=stdout_file,
                log_marker=task_manager_log_marker(index),
                gc_collections=self._task_managers.gc_collections(pids[index]) if index < len(pids) else (),
            )
            for index, gateway in enumerate(self._task_managers.gateways)
        ]

    def overview(self) -> ClusterOverview:
        return cluster_overview(self.jobs(), self.task_managers())

    def _task_manager_ids(self) -> list[str]:
        return [gateway.resource_id for gateway in self._task_managers.gateways] if self._task_managers else []

    def _job_list(self) -> list[SessionJob]:
        with self._lock:
            return list(self._jobs.values())

    def _job(self, job_id: str) -> SessionJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise UnknownJobError(
                f"job {job_id} is not known to this cluster; `fluvial list -a` (GET /jobs) lists "
                "the jobs it runs and ran"
            )
        return job

    # -- what the REST API asks for ------------------------------------------------------------------------------

    def cancel_job(self, job_id: str) -> None:
        job = self._job(job_id)
        with self._lock:
            phase = job.phase
            if phase is JobPhase.WAITING:
                grants = self._slots.withdraw(job_id)
                job.end_unstarted(JobStatus.CANCELED)
            elif phase is JobPhase.STARTING:
                job.cancel_requested = True  # `_start` cancels its JobMaster once it runs
        if phase is JobPhase.WAITING:
            logger.info("job %s (%s) cancelled while it waited for slots", job.name, job_id)
            self._start_granted(grants)
        elif phase is JobPhase.RUNNING:
            cast(JobMaster, job.job_master).cancel()  # a RUNNING job has its JobMaster

    def trigger_savepoint(self, job_id: str, target_directory: str | None, cancel_job: bool) -> CompletableFuture[str]:
        return savepoint(self._client(job_id), target_directory, cancel_job)

    def stop_with_savepoint(self, job_id: str, target_directory: str | None, drain: bool) -> CompletableFuture[str]:
        return stop_with_savepoint(self._client(job_id), target_directory, drain)

    def _client(self, job_id: str) -> MiniClusterJobClient:
        job = self._job(job_id)
        if job.job_master is None:
            state = {JobPhase.WAITING: "it waits for task slots", JobPhase.STARTING: "it is starting"}.get(
                job.phase
            ) or f"it ended {job.details(self._request_timeout).status.name} before it ran"
            raise RequestRefused(f"job {job_id} has no state to take a savepoint of: {state}")
        return MiniClusterJobClient(job.job_master, None)

    def take_results(self, job_id: str, collect_id: str, timeout: float, close: bool) -> tuple[list[bytes], bool]:
        job = self._job(job_id)
        if collect_id not in job.collect_ids:
            raise RequestRefused(
                f"job {job_id} has no collect sink {collect_id}: use the id execute_and_collect gave the job"
            )
        with self._lock:
            buffer = self._collect.get(collect_id)
        if buffer is None:
            return [], True  # its end was taken already, or its client closed it
        if close:
            self._drop_collect(collect_id)
            return [], True
        buffers, ended = buffer.take_serialized(timeout)
        if ended:
            self._drop_collect(collect_id)
        return buffers, ended

    def _drop_collect(self, collect_id: str) -> None:
        with self._lock:
            buffer = self._collect.pop(collect_id, None)
        if buffer is not None:
            buffer.close()

    def shutdown_cluster(self) -> None:
        if self._on_shutdown is None:
            raise RequestRefused("this cluster cannot be shut down through its REST API")
        logger.info("shutdown requested through the REST API (DELETE /cluster)")
        self._on_shutdown()

    # -- the end ------------------------------------------------------------------------------------------------

    def shutdown(self, timeout: float = 10.0) -> None:
        """Cancel every job that has not ended and wait up to `timeout` seconds for them to end."""
        with self._lock:
            self._closed = True
        running = [job for job in self._job_list() if not job.result.done()]
        for job in running:
            self.cancel_job(job.job_id)
        for job in running:
            try:
                job.result.exception(timeout=timeout)
            except TimeoutError:
                logger.warning("job %s (%s) has not ended %.0f s after it was cancelled", job.name, job.job_id, timeout)
        if self._own_timer:
            cast(SingleThreadExecutor, self._timer).shutdown()  # the one __init__ made

    def _mail_failed(self, error: BaseException) -> None:
        logger.error("the session dispatcher failed", exc_info=error)
