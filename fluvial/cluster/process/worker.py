"""What runs in a TaskManager process: the TaskManager of thread mode, behind its control connection.

Start, numbered:
1. Connect to the JobMaster's control address and authenticate (the secret came with the start arguments).
2. Send what this process prints and logs over the connection (the client shows it, as PyFlink's local mode
   shows its workers' output), start the data plane, register (index, data address, pid).
3. Serve: each control message becomes a TaskManagerGateway call; the TaskManager's reports, acknowledgements
   and collected records go back over the same connection, in order — so a job's last printed line and last
   collected record reach the client before the task's FINISHED does.
4. When the connection ends — the cluster shut down, or the client died, however it died — the process exits
   at once: no TaskManager outlives its cluster.
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fluvial.cluster.messages import (
    AcknowledgeCheckpoint,
    CancelTask,
    DeclineCheckpoint,
    DeployTask,
    MetricsSnapshot,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    ReleaseJob,
    TaskEndOfData,
    TaskExecutionState,
    TriggerCheckpoint,
)
from fluvial.cluster.process.job_environment import JobEnvironments
from fluvial.cluster.process.protocol import (
    CollectCredit,
    DeploymentEnvelope,
    DeploymentError,
    RegisterTaskManager,
    TaskManagerDirectory,
    TaskManagerProcessConfig,
    dumps_control,
    loads_control,
    sendable_failure,
)
from fluvial.common.logs import own_process, task_manager_log_marker
from fluvial.common.thread_stacks import dump_stacks_on_signal, stack_of
from fluvial.common.wire import dumps_records
from fluvial.metrics.process_status import gc_collections_payload
from fluvial.runtime.deployment import TaskFailure
from fluvial.runtime.execution_state import ExecutionState
from fluvial.runtime.network.connection import Connection, connect
from fluvial.runtime.network.framing import FrameKind

if TYPE_CHECKING:
    from fluvial.cluster.task_manager import TaskManager
    from fluvial.runtime.network.data_plane import DataPlane, ProcessChannels

logger = logging.getLogger(__name__)

# How long the task thread may hold the GIL while another thread of this process waits for it (CPython's
# default: 5 ms). The data plane's reader threads need it after every socket read: a credit grant, or a
# buffer for a subtask of this process, waited up to 5 ms behind the CPU-bound task thread, and a producer out
# of credit idled that long (in keyed jobs at parallelism 2, 1 ms was about a sixth faster, in runs too noisy
# to say more). The threads that wait are few and wake rarely, so switches stay rare.
GIL_SWITCH_INTERVAL_S = 0.001
COLLECT_WINDOW = 8  # buffers of collected records in flight per collect sink before the client takes them


class ControlLink:
    """The TaskManager's end of its control connection (thread-safe sends)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._collect_credits = threading.Condition()
        self._collect_available: dict[str, int] = {}  # collect id -> buffers it may still send (COLLECT_WINDOW)

    def send(self, message: Any) -> None:
        self.connection.send(FrameKind.CONTROL, dumps_control(message))

    # -- JobMasterGateway ----------------------------------------------------------------------------------------

    def update_task_execution_state(self, message: TaskExecutionState) -> None:
        if message.failure is not None:
            message.failure = sendable_failure(message.failure)
        self.send(message)

    def acknowledge_checkpoint(self, message: AcknowledgeCheckpoint) -> None:
        self.send(message)

    def decline_checkpoint(self, message: DeclineCheckpoint) -> None:
        self.send(message)

    def notify_end_of_data(self, message: TaskEndOfData) -> None:
        self.send(message)

    def report_metrics(self, message: MetricsSnapshot) -> None:
        try:
            self.send(message)
        except OSError:
            pass  # the client is gone: the process is about to exit

    # -- collected records, with a credit window so the client's memory stays bounded ---------------------------

    def collect_target(self, collect_id: str) -> CollectChannel:
        return CollectChannel(self, collect_id)

    def collect_writable(self, collect_id: str) -> bool:
        with self._collect_credits:
            return self._collect_available.get(collect_id, COLLECT_WINDOW) > 0 or self.connection.closed

    def send_collected(self, collect_id: str, values: Any) -> None:
        with self._collect_credits:
            while self._collect_available.get(collect_id, COLLECT_WINDOW) <= 0 and not self.connection.closed:
                self._collect_credits.wait(0.5)
            self._collect_available[collect_id] = self._collect_available.get(collect_id, COLLECT_WINDOW) - 1
        # the records pickled apart from their collect id: the receiving side routes them without unpickling a
        # record (a session cluster's JobManager has none of the job's classes)
        self.connection.send(FrameKind.COLLECT, pickle.dumps((collect_id, dumps_records(values)), protocol=5))

    def grant_collect(self, count: int, collect_id: str) -> None:
        with self._collect_credits:
            self._collect_available[collect_id] = self._collect_available.get(collect_id, COLLECT_WINDOW) + count
            self._collect_credits.notify_all()


class CollectChannel:
    """A collect sink's CollectTarget in a TaskManager process: its buffers over the control connection, within
    the credit window of its collect id."""

    __slots__ = ("_link", "_collect_id")

    def __init__(self, link: ControlLink, collect_id: str) -> None:
        self._link = link
        self._collect_id = collect_id

    def writable(self) -> bool:
        return self._link.collect_writable(self._collect_id)

    def send(self, values: Any) -> None:
        self._link.send_collected(self._collect_id, values)


class ForwardedStream(io.TextIOBase):
    """sys.stdout / sys.stderr of a TaskManager process: text goes to the client, whole lines at a time."""

    def __init__(self, connection: Connection, name: str) -> None:
        self._connection = connection
        self._name = name
        self._buffer: list[str] = []
        self._size = 0
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            self._buffer.append(text)
            self._size += len(text)
            if text.endswith("\n") or self._size >= 1 << 16:
                self._flush_locked()
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._buffer:
            return
        text = "".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        try:
            self._connection.send(FrameKind.OUTPUT, pickle.dumps((self._name, text), protocol=5))
        except OSError:
            pass  # the client is gone; the process is about to exit


class LogForwarder(logging.Handler):
    """Log records of a TaskManager process, sent to the client to be handled by its own logging."""

    def __init__(self, connection: Connection, index: int) -> None:
        super().__init__()
        self._connection = connection
        self._index = index

    def emit(self, record: logging.LogRecord) -> None:
        try:
            fields = {
                "name": record.name,
                "levelno": record.levelno,
                "levelname": record.levelname,
                "msg": f"{task_manager_log_marker(self._index)}{record.getMessage()}",
                "args": None,
                "exc_text": self.format(record) if record.exc_info else None,
                "created": record.created,
                "threadName": record.threadName,
                "process": record.process,
                "processName": record.processName,
                "pathname": record.pathname,
                "lineno": record.lineno,
                "funcName": record.funcName,
            }
            self._connection.send(FrameKind.LOG, pickle.dumps(fields, protocol=5))
        except Exception:  # noqa: BLE001 - logging must never fail the caller
            pass


def task_manager_main(config: TaskManagerProcessConfig) -> None:
    """The entry point of a TaskManager process (see the module docstring)."""
    os.environ.update(config.environment)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    dump_stacks_on_signal()  # what the pool asks for before it kills a process that did not exit (pool.py, 4)
    os.chdir(config.cwd)
    for entry in reversed(config.sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    connection = connect(config.control_address, config.secret)  # 1
    try:
        _serve(config, connection)
    finally:
        try:
            from fluvial.state.factory import remove_job_directories

            remove_job_directories()  # os._exit skips atexit hooks
        finally:
            os._exit(0)  # 4: at once, whatever threads are still running


@dataclass(eq=False)
class TaskManagerEndpoint:
    """A TaskManager serving behind its control connection: what control messages are dispatched to."""

    task_manager: TaskManager
    channels: ProcessChannels
    link: ControlLink
    data_plane: DataPlane
    environments: JobEnvironments

    def dispatch(self, message: Any) -> None:
        """One control message from the JobMaster's side, as a TaskManagerGateway call (or a directory update,
        or collect credit)."""
        if isinstance(message, DeploymentEnvelope):
            deployment = _open(message, self.task_manager.index, self.environments)
            if isinstance(deployment, TaskFailure):
                state = TaskExecutionState(message.attempt_id, ExecutionState.FAILED, deployment)
                self.link.update_task_execution_state(state)
                return
            message = deployment
        dispatch_control(message, self.task_manager, self.channels, self.link)
        if isinstance(message, ReleaseJob):
            self.environments.leave(message.job_id)

    def close(self) -> None:
        self.link.connection.close()
        self.data_plane.close()
        self.environments.close()


def start_task_manager(
    index: int,
    number_of_slots: int,
    connection: Connection,
    secret: bytes,
    bind_host: str,
    log_level: int,
    heartbeat_interval_ms: int,
    on_stuck_task: Callable[[Any, int], None] | None = None,
) -> TaskManagerEndpoint:
    """Step 2 on an authenticated control connection: this process's output and logs go over it, the data plane
    listens on `bind_host`, the TaskManager registers and heartbeats start. Shared by TaskManager processes and
    Ray TaskManager actors (`fluvial.cluster.ray.actor`)."""
    from fluvial.cluster.task_manager import TaskManager
    from fluvial.runtime.network.data_plane import DataPlane, ProcessChannels

    sys.stdout = ForwardedStream(connection, "stdout")
    sys.stderr = ForwardedStream(connection, "stderr")
    own_process()  # every record goes to the forwarder; the starting process applies its own logging policy
    root = logging.getLogger()
    root.handlers[:] = [LogForwarder(connection, index)]
    root.setLevel(log_level)
    link = ControlLink(connection)
    data_plane = DataPlane(secret, f"taskmanager-{index}", bind_host)
    channels = ProcessChannels(data_plane, index)
    task_manager = TaskManager(index, number_of_slots, channels, link.collect_target, on_stuck_task)
    link.send(RegisterTaskManager(index, data_plane.address, os.getpid(), task_manager.resource_id))
    threading.Thread(
        target=_heartbeat, args=(connection, heartbeat_interval_ms / 1000), name="fluvial-heartbeat", daemon=True
    ).start()
    return TaskManagerEndpoint(task_manager, channels, link, data_plane, JobEnvironments(index))


def _serve(config: TaskManagerProcessConfig, connection: Connection) -> None:
    endpoint = start_task_manager(
        config.index,
        config.number_of_slots,
        connection,
        config.secret,  # 2
        config.bind_host,
        config.log_level,
        config.heartbeat_interval_ms,
        _end_process_for_stuck_task,
    )
    try:
        while (frame := connection.read()) is not None:  # 3
            kind, payload = frame
            if kind is FrameKind.CLOSE:
                break
            if kind is FrameKind.CONTROL:
                endpoint.dispatch(loads_control(payload))
    except (OSError, ConnectionError) as error:
        logger.debug("the control connection ended: %s", error)
    finally:
        endpoint.close()


STUCK_TASK_EXIT_CODE = 70  # EX_SOFTWARE: the process ended itself because a task did not cancel


def _end_process_for_stuck_task(task: Any, timeout_ms: int) -> None:
    """Flink's answer to a task that outlives task.cancellation.timeout (a fatal error of its TaskManager): the
    process ends, and with it the stuck thread and whatever it holds; the client sees the process exit and
    starts a replacement. Abandoning the thread instead would add a stuck thread per restart of a job whose
    function never returns."""
    from fluvial.state.factory import remove_job_directories

    logger.error(
        "%s (attempt %d) did not cancel within %d ms (task.cancellation.timeout): its thread is stuck in "
        "user code; this TaskManager process ends so that a new one replaces it. The thread is stuck in:\n%s",
        task.name,
        task.spec.attempt,
        timeout_ms,
        stack_of(task.executor.thread),
    )
    try:
        remove_job_directories()
    finally:
        os._exit(STUCK_TASK_EXIT_CODE)


def dispatch_control(message: Any, task_manager: TaskManager, channels: ProcessChannels, link: ControlLink) -> None:
    handle = _CONTROL_HANDLERS.get(type(message))
    if handle is None:
        logger.warning("ignoring an unknown control message %s", type(message).__name__)
        return
    handle(message, task_manager, channels, link)


def _deploy(message: DeployTask, task_manager: TaskManager, channels: ProcessChannels, link: ControlLink) -> None:
    task_manager.register_job_master(message.spec.job_id, link)
    task_manager.submit_task(message)


# Each control message the JobMaster sends, and what this TaskManager process does with it.
_CONTROL_HANDLERS: dict[type, Callable[[Any, Any, Any, ControlLink], None]] = {
    DeployTask: _deploy,
    CancelTask: lambda message, task_manager, channels, link: task_manager.cancel_task(message),
    TriggerCheckpoint: lambda message, task_manager, channels, link: task_manager.trigger_checkpoint(message),
    NotifyCheckpointComplete: lambda message, task_manager, channels, link: task_manager.notify_checkpoint_complete(
        message
    ),
    NotifyCheckpointAborted: lambda message, task_manager, channels, link: task_manager.notify_checkpoint_aborted(
        message
    ),
    ReleaseJob: lambda message, task_manager, channels, link: task_manager.release_job(message),
    TaskManagerDirectory: lambda message, task_manager, channels, link: channels.directory.update(message.addresses),
    CollectCredit: lambda message, task_manager, channels, link: link.grant_collect(message.count, message.collect_id),
}


def _open(envelope: DeploymentEnvelope, index: int, environments: JobEnvironments) -> DeployTask | TaskFailure:
    """The DeployTask in `envelope`, or the failure of its subtask attempt when its functions cannot be loaded
    here (a module of the job not importable in this process). The job's Python environment is entered first:
    its functions may import its requirements."""
    try:
        environments.enter(envelope.job_id, envelope.python_environment)
    except Exception as error:  # noqa: BLE001 - the attempt fails, named; the process goes on
        logger.error("could not enter the Python environment of job %s: %s", envelope.job_id, error)
        return TaskFailure(error, envelope.vertex_name, envelope.task_name, traceback.format_exc())
    try:
        deploy: DeployTask = loads_control(envelope.payload)  # what the client's gateway pickled
        return deploy
    except Exception as error:  # noqa: BLE001 - any load error fails the attempt, named
        logger.error("could not load %s: %s: %s", envelope.task_name, type(error).__name__, error)
        failure = DeploymentError(
            f"TaskManager process {index} could not load the functions of {envelope.task_name}: "
            f"{type(error).__name__}: {error}. Every module the job's functions come from must be importable in "
            "TaskManager processes: put its directory on sys.path before the job is submitted (the client's "
            "sys.path travels), add it with env.add_python_file(...), or install it; or run the job in one "
            "process (local.taskmanager.mode: thread)"
        )
        failure.__cause__ = error
        return TaskFailure(failure, envelope.vertex_name, envelope.task_name, traceback.format_exc())


def _heartbeat(connection: Connection, interval_s: float) -> None:
    """A sign of life every interval, carrying this process's garbage-collection counts (only a process can read
    its own: the dashboard's Status.Python.GarbageCollector metrics of a TaskManager come from here)."""
    stop = threading.Event()
    while not connection.closed and not stop.wait(interval_s):
        try:
            connection.send(FrameKind.HEARTBEAT, gc_collections_payload())
        except OSError:
            return
