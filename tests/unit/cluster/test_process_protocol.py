"""A task failure crossing from a TaskManager process: the error, its chain of causes and the traceback text
arrive, whatever of them pickle drops or cannot pickle."""

from __future__ import annotations

import threading
import traceback

from fluvial.cluster.process.protocol import (
    RemoteTaskError,
    RemoteTraceback,
    dumps_control,
    loads_control,
    sendable_failure,
    with_remote_traceback,
)
from fluvial.runtime.deployment import TaskFailure


class HoldsALock(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()  # cannot be pickled


def _raised(error: BaseException, cause: BaseException | None = None) -> BaseException:
    try:
        raise error from cause
    except BaseException as raised:  # noqa: BLE001 - the test wants the raised object, traceback and all
        return raised


def _across(error: BaseException) -> TaskFailure:
    """The failure as the JobMaster's process gets it from a TaskManager process."""
    failure = TaskFailure(error, "Map", "Source -> Map (1/2)", "".join(traceback.format_exception(error)))
    return with_remote_traceback(loads_control(dumps_control(sendable_failure(failure))))


def test_the_chain_of_causes_arrives_linked_with_the_traceback_text_at_its_end():
    root = _raised(ConnectionRefusedError(111, "Connection refused"))
    middle = _raised(ConnectionError("could not connect to 127.0.0.1:9 after 2 attempts"), root)
    failure = _across(_raised(RuntimeError("receiver stopped with an error"), middle))
    error = failure.error
    assert type(error) is RuntimeError and str(error) == "receiver stopped with an error"
    assert type(error.__cause__) is ConnectionError and "after 2 attempts" in str(error.__cause__)
    assert type(error.__cause__.__cause__) is ConnectionRefusedError
    assert error.__cause__.__cause__.errno == 111
    last = error.__cause__.__cause__.__cause__
    assert isinstance(last, RemoteTraceback) and "ConnectionRefusedError" in last.text
    assert "_fluvial_causes" not in error.__dict__  # the carrier is gone once the chain is linked


def test_what_cannot_be_pickled_arrives_as_a_stand_in_with_its_type_and_message():
    failure = _across(_raised(HoldsALock("outer"), _raised(HoldsALock("inner"))))
    assert isinstance(failure.error, RemoteTaskError) and str(failure.error) == "HoldsALock: outer"
    assert failure.error.type_name == "HoldsALock" and failure.error.message == "outer"
    assert isinstance(failure.error.__cause__, RemoteTaskError) and str(failure.error.__cause__) == "HoldsALock: inner"
    assert isinstance(failure.error.__cause__.__cause__, RemoteTraceback)


def test_a_failure_without_causes_gets_its_traceback_text_as_its_cause():
    failure = _across(_raised(ZeroDivisionError("division by zero")))
    assert type(failure.error) is ZeroDivisionError
    assert isinstance(failure.error.__cause__, RemoteTraceback)
    assert "ZeroDivisionError: division by zero" in failure.error.__cause__.text


def test_a_cycle_of_causes_ends():
    first, second = ValueError("first"), KeyError("second")
    first.__cause__, second.__cause__ = second, first
    failure = _across(first)
    assert type(failure.error.__cause__) is KeyError
    assert isinstance(failure.error.__cause__.__cause__, RemoteTraceback)
