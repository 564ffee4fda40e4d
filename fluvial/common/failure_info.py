"""FailureInfo: a job's latest failure as a client and the logs report it (the `last_failure` of the JobDetails
that `JobClient.get_job_details()` gives, `fluvial.cluster.job_details`). Plain data, so it crosses any process
boundary."""

from __future__ import annotations

import traceback
from dataclasses import dataclass


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
    def of(
        error: BaseException, location: str, timestamp_ms: int, restartable: bool, traceback_text: str | None = None
    ) -> FailureInfo:
        text = traceback_text if traceback_text is not None else "".join(traceback.format_exception(error))
        return FailureInfo(type(error).__name__, str(error), location, timestamp_ms, text, restartable)

    def summary(self) -> str:
        return f"{self.exception}: {self.message} (in {self.location})"
