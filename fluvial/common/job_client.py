"""JobClient (PyFlink `pyflink.common.JobClient`): a handle on one submitted job, whatever runs it.

Each deployment implements it (`fluvial.cluster`: the MiniCluster's, for jobs whose JobMaster runs in this process
— embedded, or on Ray attached; `fluvial.cluster.ray.detached` for Ray jobs submitted detached). Every method
returns at once with a CompletableFuture, as PyFlink's does.
"""

from __future__ import annotations

import abc
from typing import Any

from fluvial.common.future import CompletableFuture
from fluvial.common.job_id import JobID


class JobClient(abc.ABC):
    detached = False  # True: the job runs on when its client goes away (`execution.attached: false`)

    @abc.abstractmethod
    def get_job_id(self) -> JobID: ...

    @abc.abstractmethod
    def get_job_status(self) -> CompletableFuture:
        """A future of the job's JobStatus."""

    @abc.abstractmethod
    def cancel(self) -> CompletableFuture:
        """Cancel the job; the future completes once the cancel was accepted."""

    @abc.abstractmethod
    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture:
        """A future of the savepoint's path (pass it as execution.savepoint.path to restore from it)."""

    @abc.abstractmethod
    def stop_with_savepoint(self, advance_to_end_of_event_time: bool = False,
                            savepoint_directory: str | None = None) -> CompletableFuture:
        """Take a savepoint, then stop the job; a future of the savepoint's path."""

    @abc.abstractmethod
    def get_job_execution_result(self, user_class_loader: Any = None) -> CompletableFuture:
        """A future of the JobExecutionResult, or of the JobExecutionException when the job failed.
        (`user_class_loader` is PyFlink's Java leftover and is ignored: Python needs none.)"""

    def get_accumulators(self, class_loader: Any = None) -> CompletableFuture:
        """A future of the job's accumulators: always empty, since PyFlink's Python functions have no API to
        register one (accumulators are a Java API)."""
        future = CompletableFuture()
        future.set_result({})
        return future
