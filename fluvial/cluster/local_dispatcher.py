"""The Dispatcher's view of the jobs of this process (Flink's Dispatcher, as its REST endpoint sees it): list
them, describe them, read their metrics, cancel them, take savepoints, and accept new ones.

`LocalDispatcher` serves the embedded MiniClusters of this process: the one a job with `rest.port` runs on, and
those of jobs submitted through the REST API (each job gets a MiniCluster of its own, as `execute()` gives it).
The REST API (`fluvial.web`) needs nothing beyond the methods below (its `DispatcherView` Protocol); a session
cluster's JobManager offers the same methods over its own JobMasters and TaskManager processes.

Every method may be called from any thread (REST handlers run on a thread pool): JobMasters answer through
futures built on their own threads, the rest is read from plain data.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fluvial.cluster.job_client import MiniClusterJobClient
from fluvial.cluster.job_details import JobDetails
from fluvial.common import logs
from fluvial.common.errors import FluvialError
from fluvial.common.future import CompletableFuture as Future
from fluvial.common.job_status import JobStatus
from fluvial.common.time import current_millis
from fluvial.metrics.snapshot import JobMetricsSnapshot, TaskMetricsSnapshot

if TYPE_CHECKING:
    from fluvial.graph.job_graph import JobGraph

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT_SECONDS = 10.0


class UnknownJobError(FluvialError, LookupError):
    """No job with this id runs or ran here."""


class JobSubmissionError(FluvialError, ValueError):
    """The cluster does not take the job (an id it knows, more slots than it has, a job that cannot start); the
    message says why and what to do. The REST API answers 400 with it."""


class RequestRefused(FluvialError):
    """This cluster cannot do what was asked (a route an embedded cluster does not serve, a savepoint of a job
    that waits for slots); the message says why. The REST API answers 409 with it."""


@dataclass(slots=True)
class TaskManagerDetails:
    id: str
    slots: int
    free_slots: int
    path: str = "in-process"  # where it runs: this process (threads), or a process's address
    data_port: int = -1  # -1: its channels are in-process
    cpu_cores: int = 0
    physical_memory: int = 0
    last_heartbeat: int = 0  # wall-clock ms; in-process TaskManagers are always current
    pid: int = 0  # the process it runs in (0: unknown)
    log_file: str = ""  # where its log records go (the dashboard's TaskManager log page)
    stdout_file: str = ""  # where what its jobs print goes; "" when that is a terminal
    log_marker: str = ""  # what begins its records in a log file shared with others ("": the file is its own)
    gc_collections: tuple[int, ...] = ()  # a TaskManager process's garbage collections per generation, as it reported


@dataclass(slots=True)
class ClusterOverview:
    task_managers: int
    slots_total: int
    slots_available: int
    jobs_running: int
    jobs_finished: int
    jobs_cancelled: int
    jobs_failed: int


@dataclass(slots=True)
class JobView:
    """A job as the REST API shows it: its details, its subtasks' latest metrics, and the ids of the
    TaskManagers its subtasks' `task_manager` indices refer to."""

    details: JobDetails
    tasks: list[TaskMetricsSnapshot]
    task_managers: list[str]


class LocalDispatcher:
    def __init__(self, request_timeout: float = REQUEST_TIMEOUT_SECONDS) -> None:
        self._timeout = request_timeout
        self._lock = threading.Lock()
        self._clusters: dict[str, Any] = {}  # job id -> the MiniCluster that runs it, in submission order
        self._all_ended: list[Callable[[], None]] = []
        self._job_end_listeners: list[Callable[[str], None]] = []

    # -- the jobs it knows ----------------------------------------------------------------------------------------

    def add(self, cluster: Any) -> None:
        """Serve the job of `cluster` (a MiniCluster that has been given its job)."""
        job_master = cluster.job_master
        with self._lock:
            self._clusters[job_master.job_id] = cluster
        job_master.result.add_done_callback(lambda _: self._job_ended(job_master.job_id))

    def when_all_jobs_ended(self, callback: Callable[[], None]) -> None:
        """Call `callback` (on the thread that ended it) whenever the last running job ends."""
        self._all_ended.append(callback)

    def when_job_ended(self, listener: Callable[[str], None]) -> None:
        """Call `listener(job_id)` (on the thread that ended the job) when a job has ended."""
        self._job_end_listeners.append(listener)

    def _job_ended(self, job_id: str) -> None:
        for listener in self._job_end_listeners:
            try:
                listener(job_id)
            except Exception:  # noqa: BLE001 - a listener's failure (a full disk) must not stop the others
                logger.exception("job %s: a job-end listener failed", job_id)
        if all(cluster.job_master.result.done() for cluster in self._cluster_list()):
            for callback in self._all_ended:
                callback()

    def _cluster_list(self) -> list[Any]:
        with self._lock:
            return list(self._clusters.values())

    def _cluster(self, job_id: str) -> Any:
        with self._lock:
            cluster = self._clusters.get(job_id)
        if cluster is None:
            raise UnknownJobError(f"job {job_id} is not known here; GET /jobs lists the jobs")
        return cluster

    def submit_job(self, job_graph: JobGraph) -> str:
        """Run `job_graph` on a MiniCluster of its own; its id once it is submitted."""
        from fluvial.cluster.mini_cluster import MiniCluster
        from fluvial.common.configuration import Configuration

        with self._lock:
            if job_graph.job_id in self._clusters:
                raise JobSubmissionError(
                    f"a job with id {job_graph.job_id} was already submitted: give the job a new id"
                )
        cluster = MiniCluster(job_graph.configuration or Configuration())
        cluster.submit(job_graph)
        self.add(cluster)
        logger.info("job %s (%s) submitted through the REST API", job_graph.job_name, job_graph.job_id)
        return job_graph.job_id

    # -- what the REST API reads ----------------------------------------------------------------------------------

    def jobs(self) -> list[JobDetails]:
        return [self._details(cluster) for cluster in self._cluster_list()]

    def job(self, job_id: str) -> JobView:
        cluster = self._cluster(job_id)
        return JobView(
            self._details(cluster),
            cluster.job_master.metrics.tasks(),
            [task_manager.resource_id for task_manager in cluster.task_managers],
        )

    def metrics(self) -> list[JobMetricsSnapshot]:
        """Every job's metrics, for Prometheus."""
        now = current_millis()
        return [
            job_metrics(self._details(cluster), cluster.job_master.metrics.tasks(), now)
            for cluster in self._cluster_list()
        ]

    def task_managers(self) -> list[TaskManagerDetails]:
        cores, memory = host_details()
        now = current_millis()
        managers = []
        for cluster in self._cluster_list():
            used = self._used_slots(cluster)
            pids = cluster.processes.pids if cluster.processes is not None else []
            log_file = str(logs.job_log_file(cluster.job_master.job_id, cluster.configuration))
            # TaskManager processes' output is copied to a file; TaskManager threads print to this terminal
            stdout_file = (
                str(logs.job_stdout_file(cluster.job_master.job_id, cluster.configuration))
                if cluster.processes is not None
                else ""
            )
            for task_manager in cluster.task_managers:
                slots = task_manager.number_of_slots
                pid = pids[task_manager.index] if task_manager.index < len(pids) else os.getpid()
                managers.append(
                    TaskManagerDetails(
                        task_manager.resource_id,
                        slots,
                        slots - len(used.get(task_manager.index, ())),
                        cpu_cores=cores,
                        physical_memory=memory,
                        last_heartbeat=now,
                        pid=pid,
                        log_file=log_file,
                        stdout_file=stdout_file,
                        log_marker=logs.task_manager_log_marker(task_manager.index) if cluster.processes else "",
                        gc_collections=cluster.processes.gc_collections(pid) if cluster.processes else (),
                    )
                )
        return managers

    def overview(self) -> ClusterOverview:
        return cluster_overview(self.jobs(), self.task_managers())

    def _details(self, cluster: Any) -> JobDetails:
        details: JobDetails = cluster.job_master.request_job().result(self._timeout)
        return details

    def _used_slots(self, cluster: Any) -> dict[int, set[int]]:
        """TaskManager index → the slots its running job holds."""
        details = self._details(cluster)
        if details.status.is_globally_terminal:
            return {}
        used: dict[int, set[int]] = {}
        for vertex in details.vertices:
            for subtask in vertex.subtasks:
                used.setdefault(subtask.task_manager, set()).add(subtask.slot)
        return used

    # -- what the REST API asks for -------------------------------------------------------------------------------

    def cancel_job(self, job_id: str) -> None:
        self._client(job_id).cancel()

    def trigger_savepoint(self, job_id: str, target_directory: str | None, cancel_job: bool) -> Future[str]:
        """A future of the savepoint's path; with `cancel_job`, the job is cancelled once it is complete."""
        return savepoint(self._client(job_id), target_directory, cancel_job)

    def stop_with_savepoint(self, job_id: str, target_directory: str | None, drain: bool) -> Future[str]:
        return stop_with_savepoint(self._client(job_id), target_directory, drain)

    def take_results(self, job_id: str, collect_id: str, timeout: float, close: bool) -> tuple[list[bytes], bool]:
        self._cluster(job_id)
        raise RequestRefused(f"the records job {job_id} collects go to the program that runs it, not to the REST API")

    def shutdown_cluster(self) -> None:
        raise RequestRefused(
            "this REST API serves embedded jobs, which end with the program that runs them: cancel "
            "the jobs instead (PATCH /jobs/:jobid)"
        )

    def _client(self, job_id: str) -> MiniClusterJobClient:
        cluster = self._cluster(job_id)
        return MiniClusterJobClient(cluster.job_master, cluster)


# -- shared by every dispatcher -----------------------------------------------------------------------------------


def cluster_overview(jobs: list[JobDetails], managers: list[TaskManagerDetails]) -> ClusterOverview:
    statuses = [details.status for details in jobs]
    return ClusterOverview(
        task_managers=len(managers),
        slots_total=sum(m.slots for m in managers),
        slots_available=sum(m.free_slots for m in managers),
        jobs_running=sum(not status.is_globally_terminal for status in statuses),
        jobs_finished=statuses.count(JobStatus.FINISHED),
        jobs_cancelled=statuses.count(JobStatus.CANCELED),
        jobs_failed=statuses.count(JobStatus.FAILED),
    )


def job_metrics(details: JobDetails, tasks: list[TaskMetricsSnapshot], now: int) -> JobMetricsSnapshot:
    return JobMetricsSnapshot(details.job_id, details.name, details.metric_values(now), tasks)


def savepoint(client: MiniClusterJobClient, target_directory: str | None, cancel_job: bool) -> Future[str]:
    """A future of the path of a savepoint of the client's job; with `cancel_job`, the job is cancelled once it is
    complete (Flink's cancel-job flag)."""
    if cancel_job:
        return client.stop_with_savepoint(False, target_directory)
    return client.trigger_savepoint(target_directory)


def stop_with_savepoint(client: MiniClusterJobClient, target_directory: str | None, drain: bool) -> Future[str]:
    return client.stop_with_savepoint(drain, target_directory)


def host_details() -> tuple[int, int]:
    """(CPU cores, physical memory in bytes) of this machine, as /taskmanagers reports them."""
    return os.cpu_count() or 1, _physical_memory()


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0
