"""Error classification: a NonRecoverableError anywhere in the chain of causes makes a failure non-recoverable."""

from __future__ import annotations

from fluvial.checkpoint.metadata import CorruptCheckpointError
from fluvial.common.errors import JobExecutionException, UnreadableStateError, is_non_recoverable


def test_found_anywhere_in_the_cause_chain():
    root = CorruptCheckpointError("state file x is corrupted")
    try:
        try:
            raise root
        except CorruptCheckpointError as error:
            raise RuntimeError("restore failed") from error
    except RuntimeError as wrapped:
        outer = JobExecutionException("job failed")
        outer.__cause__ = wrapped
    assert is_non_recoverable(outer)
    assert is_non_recoverable(UnreadableStateError("cannot unpickle"))


def test_ordinary_errors_and_none_are_recoverable():
    assert not is_non_recoverable(None)
    assert not is_non_recoverable(ValueError("bad record"))
    looped = RuntimeError("a")
    other = RuntimeError("b")
    looped.__cause__, other.__cause__ = other, looped  # a cycle ends the walk
    assert not is_non_recoverable(looped)
