"""DispatcherView: all the REST API needs of a cluster. The embedded MiniClusters of a process offer it
(`fluvial.cluster.local_dispatcher.LocalDispatcher`); a session cluster's JobManager offers the same methods.

Contract: every method may be called from any thread and returns plain data (`fluvial.cluster.local_dispatcher`,
`fluvial.cluster.job_details`, `fluvial.metrics.snapshot`); a job id nobody knows raises UnknownJobError; a
job the cluster does not take raises JobSubmissionError; a request this cluster or the job cannot serve (a
savepoint without checkpointing, a shutdown of an embedded cluster, ...) raises an error whose message says why
(RequestRefused, or the job's own RuntimeError).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from fluvial.cluster.job_details import JobDetails
from fluvial.cluster.local_dispatcher import ClusterOverview, JobView, TaskManagerDetails
from fluvial.common.future import CompletableFuture
from fluvial.metrics.snapshot import JobMetricsSnapshot


class DispatcherView(Protocol):
    def overview(self) -> ClusterOverview: ...

    def jobs(self) -> list[JobDetails]:
        """Every job the cluster runs or ran, in submission order."""
        ...

    def job(self, job_id: str) -> JobView: ...

    def metrics(self) -> list[JobMetricsSnapshot]:
        """Every job's own metrics and its subtasks' latest snapshots (for Prometheus)."""
        ...

    def task_managers(self) -> list[TaskManagerDetails]: ...

    def cancel_job(self, job_id: str) -> None: ...

    def trigger_savepoint(self, job_id: str, target_directory: str | None, cancel_job: bool) -> CompletableFuture[str]:
        """A future of the savepoint's path."""
        ...

    def stop_with_savepoint(self, job_id: str, target_directory: str | None, drain: bool) -> CompletableFuture[str]:
        """A future of the savepoint's path; the job stops once it is complete."""
        ...

    def submit_job(self, job_graph: Any) -> str:
        """Run a JobGraph; its job id."""
        ...

    def take_results(self, job_id: str, collect_id: str, timeout: float, close: bool) -> tuple[list[bytes], bool]:
        """The next buffers of records job `job_id`'s collect sink `collect_id` sent (each pickled, as the
        TaskManager sent it), waiting up to `timeout` seconds for the first; and whether that was the end. With
        `close`, the client reads no more: the buffer is dropped."""
        ...

    def when_job_ended(self, listener: Callable[[str], None]) -> None:
        """Call `listener(job_id)` when a job has ended (its archive is written then: archive.py)."""
        ...

    def shutdown_cluster(self) -> None:
        """Shut the cluster down (after the answer to the request is sent): cancel its jobs, stop its processes."""
        ...
