"""JobDetails: what a client, the logs and (later) the REST API report about one job beyond its status — how
often it restarted and what failed last (Flink's REST job details and root exception). Plain data, so it
crosses any process boundary; `JobClient.get_job_details()` is its future."""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from fluvial.common.job_status import JobStatus


@dataclass(frozen=True, slots=True)
class FailureInfo:
    """One failure of a job: what was raised, where, and when (wall clock, ms)."""

    exception: str  # the exception's class name
    message: str
    location: str  # the operator and subtask that raised it, or "job" for a job-level failure
    timestamp_ms: int
    traceback: str
    restartable: bool  # False when no restart could fix it (a NonRecoverableError)

    @staticmethod
    def of(error: BaseException, location: str, timestamp_ms: int, restartable: bool,
           traceback_text: str | None = None) -> "FailureInfo":
        text = traceback_text if traceback_text is not None else "".join(traceback.format_exception(error))
        return FailureInfo(type(error).__name__, str(error), location, timestamp_ms, text, restartable)

    def summary(self) -> str:
        return f"{self.exception}: {self.message} (in {self.location})"


@dataclass(frozen=True, slots=True)
class JobDetails:
    job_id: str
    job_name: str
    status: JobStatus
    restarts: int  # how many times the job was restarted after a failure
    last_failure: FailureInfo | None  # the latest failure, whether the job restarted from it or not
    failures: int  # every failure seen, restarted from or not
