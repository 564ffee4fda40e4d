"""JobExecutionResult (PyFlink `pyflink.common.JobExecutionResult`): what `execute()` returns."""

from __future__ import annotations

from typing import Any


class JobExecutionResult:
    def __init__(self, job_id: Any, net_runtime_ms: int, accumulators: dict[str, Any] | None = None) -> None:
        """`job_id`: the JobID (PyFlink's get_job_id returns one)."""
        self._job_id = job_id
        self._net_runtime_ms = net_runtime_ms
        self._accumulators = dict(accumulators or {})

    def get_job_id(self) -> Any:
        return self._job_id

    def get_net_runtime(self) -> int:
        """Milliseconds from the first task deployed to the last task finished."""
        return self._net_runtime_ms

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        return self._accumulators.get(accumulator_name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self._accumulators)

    def is_job_execution_result(self) -> bool:
        return True

    def get_job_execution_result(self) -> "JobExecutionResult":
        return self

    def __repr__(self) -> str:
        return f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime_ms} ms)"


class DetachedJobExecutionResult(JobExecutionResult):
    """What `execute()` returns for a job submitted detached (`execution.attached: false`), as Flink's does: the
    job runs on, so only its id is known."""

    def __init__(self, job_id: Any) -> None:
        super().__init__(job_id, 0)

    def get_net_runtime(self) -> int:
        raise RuntimeError(f"job {self.get_job_id()} was submitted detached and runs on: its runtime is not known "
                           "here; the job's client (execute_async) waits for its result")

    def is_job_execution_result(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"DetachedJobExecutionResult(job_id={self.get_job_id()})"
