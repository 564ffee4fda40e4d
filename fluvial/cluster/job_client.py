"""The JobClient of a job on the embedded MiniCluster: PyFlink's JobClient over the JobMaster in this process."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from fluvial.common.future import CompletableFuture as Future
from fluvial.common.job_client import JobClient
from fluvial.common.job_id import JobID
from fluvial.datastream.closeable_iterator import CloseableIterator

if TYPE_CHECKING:
    from fluvial.checkpoint.store import CompletedCheckpoint
    from fluvial.cluster.job_details import JobDetails
    from fluvial.cluster.job_master import JobMaster
    from fluvial.common.job_execution_result import JobExecutionResult
    from fluvial.common.job_status import JobStatus

T = TypeVar("T")
R = TypeVar("R")


class MiniClusterJobClient(JobClient):
    def __init__(self, job_master: JobMaster, cluster: Any) -> None:
        self._job_master = job_master
        self.cluster = cluster  # the MiniCluster that runs the job, for inspection in tests and tools
        self.web: Any = None  # a WebEndpoint (address, token) when the job serves its REST API or metrics

    def get_job_id(self) -> JobID:
        return JobID(self._job_master.job_id)

    def get_job_status(self) -> Future[JobStatus]:
        """A future of the job's current JobStatus (already complete: the JobMaster is in this process)."""
        return _completed(self._job_master.status)

    def get_job_details(self) -> Future[JobDetails]:
        return self._job_master.request_job()

    def cancel(self) -> Future[None]:
        self._job_master.cancel()
        return _completed(None)

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> Future[str]:
        return _map(self._job_master.trigger_savepoint(savepoint_directory), lambda done: done.metadata_location)

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: str | None = None
    ) -> Future[str]:
        """A synchronous savepoint, then the job stops: the future completes with the savepoint's path once the
        job has FINISHED (nothing was processed after the savepoint's barrier). `advance_to_end_of_event_time`
        (Flink's --drain) first sends MAX_WATERMARK through the job, so every window and event-time timer fires,
        and ends its input. If the savepoint fails, the job keeps running and the future fails with the reason."""
        job_master = self._job_master
        stopped: Future[str] = Future()

        def stop(done: Future[CompletedCheckpoint]) -> None:
            error = done.exception()
            if error is not None:
                stopped.set_exception(
                    RuntimeError(f"stop-with-savepoint of job {job_master.job_id} failed, the job goes on: {error}")
                )
                return
            location = done.result().metadata_location
            job_master.stop_after_savepoint()
            job_master.result.add_done_callback(lambda ended: _stopped(ended, location, stopped))

        savepoint = job_master.trigger_savepoint(savepoint_directory, terminal=True, drain=advance_to_end_of_event_time)
        savepoint.add_done_callback(stop)
        return stopped

    def get_job_execution_result(self, user_class_loader: Any = None) -> Future[JobExecutionResult]:
        return self._job_master.result

    def collect_results(self, collect_id: str) -> CloseableIterator:
        """The records the job's collect sink `collect_id` sends (execute_and_collect)."""
        return CloseableIterator(self, self.cluster.collect_buffer(collect_id))


def _completed(value: T) -> Future[T]:
    future: Future[T] = Future()
    future.set_result(value)
    return future


def _stopped(ended: Future[Any], location: str, stopped: Future[str]) -> None:
    """The stopped job ended: its savepoint's path, or why the job did not finish."""
    error = ended.exception()
    if error is None:
        stopped.set_result(location)
    else:
        stopped.set_exception(
            RuntimeError(f"the job did not finish after its stop-with-savepoint (savepoint {location}): {error}")
        )


def _map(source: Future[T], transform: Callable[[T], R]) -> Future[R]:
    """A future completed with `transform(result)` of `source`, or with its exception."""
    target: Future[R] = Future()

    def forward(done: Future[T]) -> None:
        error = done.exception()
        if error is not None:
            target.set_exception(error)
            return
        try:
            target.set_result(transform(done.result()))
        except BaseException as exc:  # noqa: BLE001
            target.set_exception(exc)

    source.add_done_callback(forward)
    return target
