"""JobClient (PyFlink `pyflink.common.JobClient`): a handle on one submitted job, whatever runs it.

Each deployment implements it (`fluvial.cluster`: the MiniCluster's, for jobs whose JobMaster runs in this process
— embedded, or on Ray attached; `fluvial.cluster.ray.detached` for Ray jobs submitted detached). Every method
returns at once with a CompletableFuture, as PyFlink's does.
"""

from __future__ import annotations

import abc
import logging
from typing import TYPE_CHECKING, Any

from fluvial.common.future import CompletableFuture
from fluvial.common.job_id import JobID

if TYPE_CHECKING:
    from fluvial.common.job_execution_result import JobExecutionResult
    from fluvial.common.job_status import JobStatus

logger = logging.getLogger(__name__)

CANCEL_ON_INTERRUPT_WAIT_S = 30.0


class JobClient(abc.ABC):
    """A handle on a submitted job (PyFlink's `JobClient`): `env.execute_async()` returns one. Its status,
    cancellation, savepoints and result are futures.

    Example:
        ```python
        client = env.execute_async("my job")
        savepoint = client.stop_with_savepoint(False, "/var/savepoints").result()
        ```
    """

    detached = False  # True: the job runs on when its client goes away (`execution.attached: false`)

    @abc.abstractmethod
    def get_job_id(self) -> JobID:
        """The job's JobID."""

    @abc.abstractmethod
    def get_job_status(self) -> CompletableFuture[JobStatus]:
        """A future of the job's JobStatus."""

    @abc.abstractmethod
    def get_job_details(self) -> CompletableFuture[Any]:  # a cluster.job_details.JobDetails (a higher layer)
        """A future of the job's JobDetails (`fluvial.cluster.job_details`): its status, how often it restarted
        and failed, its latest failure, its vertices and subtasks, checkpoints and exception history. Beyond PyFlink, whose JobClient reports only the status: a job that restarts
        forever looks RUNNING there."""

    @abc.abstractmethod
    def cancel(self) -> CompletableFuture[None]:
        """Cancel the job; the future completes once the cancel was accepted."""

    @abc.abstractmethod
    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture[str]:
        """A future of the savepoint's path (pass it as execution.savepoint.path to restore from it)."""

    @abc.abstractmethod
    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: str | None = None
    ) -> CompletableFuture[str]:
        """Take a savepoint, then stop the job; a future of the savepoint's path."""

    @abc.abstractmethod
    def get_job_execution_result(self, user_class_loader: Any = None) -> CompletableFuture[JobExecutionResult]:
        """A future of the JobExecutionResult, or of the JobExecutionException when the job failed.
        (`user_class_loader` is PyFlink's Java leftover and is ignored: Python needs none.)"""

    def get_accumulators(self, class_loader: Any = None) -> CompletableFuture[dict[str, Any]]:
        """A future of the job's accumulators: always empty, since PyFlink's Python functions have no API to
        register one (accumulators are a Java API)."""
        future: CompletableFuture[dict[str, Any]] = CompletableFuture()
        future.set_result({})
        return future


def cancel_on_interrupt(client: JobClient, wait_s: float = CANCEL_ON_INTERRUPT_WAIT_S) -> None:
    """A KeyboardInterrupt reached the code waiting on `client`'s job: cancel the job, and wait (at most `wait_s`)
    until it has ended, so the job is no longer running when the interrupt propagates — even when the program
    catches it and goes on. A second interrupt stops the wait, not the cancel."""
    job_id = client.get_job_id()
    result = client.get_job_execution_result()
    if result.done():
        return
    logger.info("interrupted (KeyboardInterrupt): cancelling job %s", job_id)
    try:
        client.cancel()
        result.exception(timeout=wait_s)
    except KeyboardInterrupt:
        logger.warning("interrupted again: not waiting for job %s to finish cancelling", job_id)
    except TimeoutError:
        logger.warning("job %s was cancelled but had not ended %.0f s later", job_id, wait_s)
