"""ExecutionState: the life of one attempt of one subtask, as Flink names it, on both sides of the seam.

The Task (on a TaskManager) moves itself CREATED → INITIALIZING → RUNNING → FINISHED, or to CANCELED / FAILED,
and reports each state it reaches. The JobMaster's ExecutionVertex mirrors it: CREATED → DEPLOYING when the
deployment is sent, then whatever the task reports; CANCELING when the JobMaster asks the task to stop.
Every move is checked against `_ALLOWED`: an illegal one raises IllegalExecutionStateTransition naming both
states, so a bug shows where it happens instead of as a job that never ends.
"""

from __future__ import annotations

import enum

from fluvial.common.errors import FluvialError


class ExecutionState(enum.Enum):
    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL

    def can_move_to(self, target: ExecutionState) -> bool:
        return target in _ALLOWED[self]


class IllegalExecutionStateTransition(FluvialError):
    """A subtask was asked to move to a state its current state does not lead to."""


def checked_transition(current: ExecutionState, target: ExecutionState, who: str) -> ExecutionState:
    """`target` if `current` may move there; otherwise the error naming `who` and both states."""
    if not current.can_move_to(target):
        raise IllegalExecutionStateTransition(
            f"{who} cannot go from {current.value} to {target.value} (from {current.value} it may go to "
            f"{', '.join(sorted(s.value for s in _ALLOWED[current])) or 'nothing: it has ended'})"
        )
    return target


_S = ExecutionState
_TERMINAL = frozenset({_S.FINISHED, _S.CANCELED, _S.FAILED})
_ALLOWED: dict[ExecutionState, frozenset[ExecutionState]] = {
    _S.CREATED: frozenset({_S.SCHEDULED, _S.DEPLOYING, _S.INITIALIZING, _S.CANCELED, _S.FAILED}),
    _S.SCHEDULED: frozenset({_S.DEPLOYING, _S.CANCELED, _S.FAILED}),
    _S.DEPLOYING: frozenset({_S.INITIALIZING, _S.RUNNING, _S.FINISHED, _S.CANCELING, _S.CANCELED, _S.FAILED}),
    _S.INITIALIZING: frozenset({_S.RUNNING, _S.FINISHED, _S.CANCELING, _S.CANCELED, _S.FAILED}),
    _S.RUNNING: frozenset({_S.FINISHED, _S.CANCELING, _S.CANCELED, _S.FAILED}),
    # a task told to cancel may still report the end it reached first
    _S.CANCELING: frozenset({_S.FINISHED, _S.CANCELED, _S.FAILED}),
    _S.FINISHED: frozenset(),
    _S.CANCELED: frozenset(),
    _S.FAILED: frozenset(),
}
