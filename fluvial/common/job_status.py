"""JobStatus (PyFlink `pyflink.common.JobStatus`): the states of a job once a JobMaster has accepted it.

A job moves CREATED → RUNNING → FINISHED; a failure moves it to FAILING → FAILED, or to RESTARTING → RUNNING
when its restart strategy allows; a cancel to CANCELLING → CANCELED. `checked_move` rejects any other step,
naming both states.
"""

from __future__ import annotations

import enum

from fluvial.common.errors import FluvialError


class JobStatus(enum.Enum):
    """The states of a job, Flink's: CREATED, RUNNING, FAILING, FAILED, CANCELLING, CANCELED, FINISHED,
    RESTARTING, SUSPENDED, RECONCILING, INITIALIZING.
    """

    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"
    INITIALIZING = "INITIALIZING"

    @property
    def is_globally_terminal(self) -> bool:
        """The job is over for good: nothing restarts it (FINISHED, CANCELED, FAILED)."""
        return self in (JobStatus.FINISHED, JobStatus.CANCELED, JobStatus.FAILED)

    def is_globally_terminal_state(self) -> bool:
        """Whether the job is over for good (FINISHED, CANCELED, FAILED)."""
        return self.is_globally_terminal

    def is_terminal_state(self) -> bool:
        """Terminal for this JobMaster: globally terminal, or SUSPENDED (another JobMaster may take over)."""
        return self.is_globally_terminal or self is JobStatus.SUSPENDED


class IllegalJobStatusTransition(FluvialError):
    """A job was asked to move to a status its current one does not lead to."""


_J = JobStatus
_ALLOWED: dict[JobStatus, frozenset[JobStatus]] = {
    _J.INITIALIZING: frozenset({_J.CREATED, _J.FAILED, _J.CANCELED}),
    _J.CREATED: frozenset({_J.RUNNING, _J.FAILING, _J.FAILED, _J.CANCELLING, _J.CANCELED}),
    _J.RUNNING: frozenset({_J.FINISHED, _J.FAILING, _J.RESTARTING, _J.CANCELLING, _J.SUSPENDED}),
    _J.RESTARTING: frozenset({_J.RUNNING, _J.FAILING, _J.CANCELLING, _J.CANCELED, _J.FAILED, _J.SUSPENDED}),
    _J.FAILING: frozenset({_J.FAILED, _J.RESTARTING, _J.CANCELLING, _J.CANCELED}),
    _J.CANCELLING: frozenset({_J.CANCELED, _J.FAILED, _J.FINISHED}),
    _J.RECONCILING: frozenset({_J.RUNNING, _J.FAILING, _J.CANCELLING}),
    _J.SUSPENDED: frozenset(),
    _J.FINISHED: frozenset(),
    _J.CANCELED: frozenset(),
    _J.FAILED: frozenset(),
}


def checked_move(current: JobStatus, target: JobStatus, job: str) -> JobStatus:
    """`target` if a job in `current` may move there; otherwise the error naming the job and both statuses."""
    if target not in _ALLOWED[current]:
        raise IllegalJobStatusTransition(
            f"job {job} cannot go from {current.value} to {target.value} (from {current.value} it may go to "
            f"{', '.join(sorted(s.value for s in _ALLOWED[current])) or 'nothing: it has ended'})"
        )
    return target
