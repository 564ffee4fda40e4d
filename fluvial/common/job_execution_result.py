"""JobExecutionResult (PyFlink `pyflink.common.JobExecutionResult`): what `execute()` returns."""

from __future__ import annotations

from typing import Any


class JobExecutionResult:
    """What a finished job returns from `execute()` (PyFlink's `JobExecutionResult`): its id, its net runtime
    and its accumulators.
    """

    def __init__(self, job_id: Any, net_runtime_ms: int, accumulators: dict[str, Any] | None = None) -> None:
        """`job_id`: the JobID (PyFlink's get_job_id returns one)."""
        self._job_id = job_id
        self._net_runtime_ms = net_runtime_ms
        self._accumulators = dict(accumulators or {})

    def get_job_id(self) -> Any:
        """The job's JobID."""
        return self._job_id

    def get_net_runtime(self) -> int:
        """Milliseconds from the first task deployed to the last task finished."""
        return self._net_runtime_ms

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        """The final value of an accumulator.

        Args:
            accumulator_name: Its name.

        Returns:
            The value, or None.
        """
        return self._accumulators.get(accumulator_name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        """Every accumulator's final value, by name."""
        return dict(self._accumulators)

    def is_job_execution_result(self) -> bool:
        """True: this is the result of a finished job."""
        return True

    def get_job_execution_result(self) -> JobExecutionResult:
        """This result."""
        return self

    def __repr__(self) -> str:
        return f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime_ms} ms)"


class DetachedJobExecutionResult(JobExecutionResult):
    """What `execute()` returns for a job submitted detached (`fluvial run -d`): the job runs on in its cluster,
    so only its id is known (Flink's DetachedJobExecutionResult)."""

    _DETACHED = (
        "Job was submitted in detached mode. Results of job execution, such as accumulators, runtime, "
        "etc. are not available: run without -d (--detached) to wait for them, or ask the cluster "
        "(fluvial list, the REST API)"
    )

    def __init__(self, job_id: Any) -> None:
        super().__init__(job_id, -1)

    def get_net_runtime(self) -> int:
        raise RuntimeError(self._DETACHED)

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        raise RuntimeError(self._DETACHED)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        raise RuntimeError(self._DETACHED)

    def is_job_execution_result(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"DetachedJobExecutionResult(job_id={self.get_job_id()})"
