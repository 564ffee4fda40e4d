"""What crosses a TaskManager process's control connection, besides the messages of `cluster/messages.py`.

Every frame is authenticated by the connection's handshake before any is read. CONTROL frames carry one message,
cloudpickled (a DeployTask carries the job's functions); everything else is plain pickle. A TaskManager's report
of a failure carries the user's exception; when that exception cannot be pickled it crosses as a
RemoteTaskError with the same type name, message and traceback text. Its chain of causes (`raise ... from`),
which pickle drops, crosses beside it and is linked up again on arrival, so `error.__cause__` is the same
in both execution modes.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import Any

from fluvial.common.errors import FluvialError
from fluvial.runtime.deployment import ExecutionAttemptId, JobPythonEnvironment


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
class DeploymentEnvelope:
    """JobMaster → TaskManager: a DeployTask, cloudpickled into `payload`, with who it is for in plain values.
    The payload holds the job's functions, and loading them in the TaskManager process can fail (a module
    there is not importable); the envelope lets the TaskManager fail that one subtask attempt with the error,
    instead of dying on a message it cannot read."""

    attempt_id: ExecutionAttemptId
    vertex_name: str
    parallelism: int
    payload: bytes
    python_environment: JobPythonEnvironment | None = None  # entered before the payload is loaded

    @classmethod
    def of(cls, message: Any) -> DeploymentEnvelope:
        spec = message.spec
        return cls(
            spec.attempt_id, spec.vertex.name, spec.vertex.parallelism, dumps_control(message), spec.python_environment
        )

    @property
    def job_id(self) -> str:
        return self.attempt_id.job_id

    @property
    def task_name(self) -> str:
        return f"{self.vertex_name} ({self.attempt_id.subtask_index + 1}/{self.parallelism})"


class DeploymentError(FluvialError):
    """A TaskManager process could not load a subtask's functions."""


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
        self.message = message

    def __reduce__(self) -> tuple[type[RemoteTaskError], tuple[str, str], dict[str, Any]]:
        # an exception unpickles as cls(*self.args), and args holds the one joined text: without this, the
        # stand-in itself failed to unpickle, and the TaskManager was taken for lost instead of the task failing
        return type(self), (self.type_name, self.message), self.__dict__


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a TaskManager process, as text (a traceback does not pickle):
    set as the `__cause__` of the exception when it arrives, so printing the error shows where it was raised
    (as concurrent.futures does)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text.rstrip()}\n"""'


CAUSES_ATTRIBUTE = "_fluvial_causes"  # where an error's causes travel: exceptions pickle their __dict__
MAX_CAUSES = 16


def with_remote_traceback(failure: Any) -> Any:
    """A failure that crossed processes: its error gets its chain of causes back, and the deepest of them the
    traceback text of the whole chain, as its cause."""
    if failure is None:
        return failure
    link = failure.error
    for cause in link.__dict__.pop(CAUSES_ATTRIBUTE, ()):
        link.__cause__ = cause
        link = cause
    if link.__traceback__ is None and failure.traceback_text:
        link.__cause__ = RemoteTraceback(failure.traceback_text)
    return failure


def dumps_control(message: Any) -> bytes:
    from fluvial.common.wire import dumps_code

    return dumps_code(message)


def loads_control(payload: bytes) -> Any:
    return pickle.loads(payload)


def sendable_failure(failure: Any) -> Any:
    """A TaskFailure whose error, and each of its causes, survives pickling (the traceback text stays whole
    either way); the causes ride in the error's CAUSES_ATTRIBUTE."""
    if failure is None:
        return None
    causes: list[BaseException] = []
    seen, cause = {id(failure.error)}, failure.error.__cause__
    while cause is not None and id(cause) not in seen and len(causes) < MAX_CAUSES:
        seen.add(id(cause))
        causes.append(_sendable(cause))
        cause = cause.__cause__
    error = _sendable(failure.error)
    if causes:  # on the error itself (it is on its way out of this process), as pickle carries an exception's dict
        error.__dict__[CAUSES_ATTRIBUTE] = causes
    return failure if error is failure.error else replace(failure, error=error)


def _sendable(error: BaseException) -> BaseException:
    """`error` if it survives pickling, else a RemoteTaskError with its type name and message."""
    try:
        pickle.loads(dumps_control(error))
        return error
    except Exception:  # noqa: BLE001 - any pickling trouble means: send a stand-in
        return RemoteTaskError(type(error).__name__, str(error))
