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

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> Future:
        """A future of the savepoint's path (pass it as execution.savepoint.path to restore from it)."""
        return _map(self._job_master.trigger_savepoint(savepoint_directory), lambda done: done.metadata_location)

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool = False,
                            savepoint_directory: str | None = None) -> Future:
        """Take a savepoint, then stop the job; a future of the savepoint's path."""
        def stop(completed: Any) -> str:
            self._job_master.stop_after_savepoint()
            return completed.metadata_location

        return _map(self._job_master.trigger_savepoint(savepoint_directory), stop)

    def get_job_execution_result(self) -> Future:
        """A future completed with the JobExecutionResult, or with JobExecutionException when the job failed."""
        return self._job_master.result


def _map(source: Future, transform: Any) -> Future:
    """A future completed with `transform(result)` of `source`, or with its exception."""
    target: Future = Future()

    def forward(done: Future) -> None:
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
