"""A task failure crossing from a TaskManager process: the error and the traceback text arrive, whatever
pickle cannot carry."""

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
from fluvial.runtime.task import TaskFailure


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


def test_what_cannot_be_pickled_arrives_as_a_stand_in_with_its_type_and_message():
    failure = _across(_raised(HoldsALock("no pickle for me")))
    assert isinstance(failure.error, RemoteTaskError) and str(failure.error) == "HoldsALock: no pickle for me"
    assert failure.error.type_name == "HoldsALock" and failure.error.message == "no pickle for me"
    assert isinstance(failure.error.__cause__, RemoteTraceback) and "HoldsALock" in failure.error.__cause__.text


def test_a_failure_gets_its_traceback_text_as_its_cause():
    failure = _across(_raised(ZeroDivisionError("division by zero")))
    assert type(failure.error) is ZeroDivisionError
    assert isinstance(failure.error.__cause__, RemoteTraceback)
    assert "ZeroDivisionError: division by zero" in failure.error.__cause__.text
