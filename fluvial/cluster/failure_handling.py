"""FailureHandlingResult: what the scheduler decided about one failure (Flink's), so the decision travels as a
value — restart or not, and why not — instead of a string that means "no" when it is there."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FailureHandlingResult:
    """`can_restart`: the job restarts after `error` (its restart strategy allowed it and nothing marks the error
    as non-recoverable); otherwise `reason` says why it fails instead, for the log and the job's status."""

    error: BaseException
    can_restart: bool
    reason: str = ""

    @classmethod
    def restartable(cls, error: BaseException) -> FailureHandlingResult:
        return cls(error, True)

    @classmethod
    def unrecoverable(cls, error: BaseException, reason: str) -> FailureHandlingResult:
        return cls(error, False, reason)
