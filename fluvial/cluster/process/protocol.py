"""What crosses a TaskManager process's control connection, besides the messages of `cluster/messages.py`.

Every frame is authenticated by the connection's handshake before any is read. CONTROL frames carry one message,
cloudpickled (a DeployTask carries the job's functions); everything else is plain pickle. A TaskManager's report
of a failure carries the user's exception; when that exception cannot be pickled it crosses as a
RemoteTaskError with the same type name, message and traceback text.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import Any

from fluvial.common.errors import FluvialError


@dataclass(eq=False)
class TaskManagerProcessConfig:
    """The start arguments of a TaskManager process (they reach it through the process start pipe, never the
    command line: the secret is among them)."""

    index: int
    number_of_slots: int
    control_address: tuple[str, int]
    secret: bytes
    bind_host: str
    log_level: int
    heartbeat_interval_ms: int
    sys_path: list[str]
    cwd: str
    environment: dict[str, str]


@dataclass(eq=False)
class RegisterTaskManager:
    """TaskManager → JobMaster, first on its control connection: who it is and where its data plane listens."""

    index: int
    data_address: tuple[str, int]
    pid: int
    resource_id: str = ""  # the TaskManager's id, as the REST API and metrics name it


@dataclass(eq=False)
class TaskManagerDirectory:
    """JobMaster → TaskManagers: where each TaskManager's data plane listens (sent before any deployment that
    needs it, and again when a TaskManager was replaced)."""

    addresses: dict[int, tuple[str, int]]


@dataclass(eq=False)
class CollectCredit:
    """Client → TaskManager: the client took `count` buffers of collect sink `collect_id`'s records; that sink
    may send that many more. Per collect sink: in a session cluster one TaskManager runs the collect sinks of
    several jobs, and a client that stops reading must hold back its own job only."""

    count: int
    collect_id: str


class RemoteTaskError(FluvialError):
    """A user exception from a TaskManager process that could not be sent as itself."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a TaskManager process, as text (a traceback does not pickle):
    set as the `__cause__` of the exception when it arrives, so printing the error shows where it was raised
    (as concurrent.futures does)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text.rstrip()}\n"""'


def with_remote_traceback(failure: Any) -> Any:
    """A failure that crossed processes: its error gets its traceback text back, as its cause."""
    if failure is not None and failure.error.__traceback__ is None and failure.traceback_text:
        failure.error.__cause__ = RemoteTraceback(failure.traceback_text)
    return failure


def dumps_control(message: Any) -> bytes:
    from fluvial.common.wire import dumps_code

    return dumps_code(message)


def loads_control(payload: bytes) -> Any:
    return pickle.loads(payload)


def sendable_failure(failure: Any) -> Any:
    """A TaskFailure whose error survives pickling (the traceback text stays whole either way)."""
    if failure is None:
        return None
    try:
        pickle.loads(dumps_control(failure.error))
        return failure
    except Exception:  # noqa: BLE001 - any pickling trouble means: send a stand-in
        error = failure.error
        return replace(failure, error=RemoteTaskError(type(error).__name__, str(error)))
