"""JobClient (PyFlink's): a handle on a submitted job."""

from __future__ import annotations

from fluvial.common.future import CompletableFuture as Future
from typing import Any


class JobClient:
    def __init__(self, job_master: Any) -> None:
        self._job_master = job_master

    def get_job_id(self) -> str:
        return self._job_master.job_id

    def get_job_status(self) -> Future:
        """A future of the job's current JobStatus (already completed: the JobMaster is in this process)."""
        future: Future = Future()
        future.set_result(self._job_master.status)
        return future

    def cancel(self) -> Future:
        self._job_master.cancel()
        future: Future = Future()
        future.set_result(None)
        return future

    def get_job_execution_result(self) -> Future:
        """A future completed with the JobExecutionResult, or with JobExecutionException when the job failed."""
        return self._job_master.result
