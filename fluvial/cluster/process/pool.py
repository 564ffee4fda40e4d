"""The TaskManager processes of a MiniCluster, seen from the JobMaster's process: started, registered, watched,
replaced, stopped.

Lifecycle, numbered:
1. A control Listener (loopback unless `taskmanager.bind-host` says otherwise; the cluster's secret) and N
   processes forked by the zygote (`zygote.py`: a fresh interpreter with fluvial preloaded, single-threaded, so
   forking from it is safe however many threads this process runs). Each connects back, authenticates and
   registers; once all have, every one learns every data-plane address (TaskManagerDirectory). Only then does
   the job deploy.
2. Each TaskManager's messages come back on its control connection and are routed: reports, acknowledgements
   and declines to the JobMaster; collected records to the client's buffers (a credit per buffer taken
   goes back); printed text to this process's stdout/stderr; log records to this process's logging.
3. A process that exits or is killed is noticed at once — the zygote reports how it ended, and its control
   connection closes with it — and a TaskManager that stops sending heartbeats (a stopped one, or one that is
   not our child) after `heartbeat.timeout`: the listener hears
   `task_manager_lost(index, error)`, and a replacement process starts under the same index. Messages to
   the index wait for the replacement; every TaskManager learns its new address before it is used.
4. `shutdown()` closes every connection — each process exits when its connection ends — then waits for their
   exits, and kills what did not exit in time, once it has written where its threads are to standard error. A
   process is never left behind: its connection ends with this process too, however it ends.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, cast

from fluvial.cluster.gateways import JobMasterGateway
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
from fluvial.cluster.process.protocol import (
    CollectCredit,
    DeploymentEnvelope,
    RegisterTaskManager,
    TaskManagerDirectory,
    TaskManagerProcessConfig,
    dumps_control,
    loads_control,
    with_remote_traceback,
)
from fluvial.common.errors import FluvialError, ResourceError
from fluvial.common.logs import ENGINE_LOGGER
from fluvial.common.processes import kill, pid_running, signal_if
from fluvial.common.thread_stacks import STACKS_SIGNAL
from fluvial.metrics.process_status import parse_gc_collections
from fluvial.runtime.network.auth import new_secret
from fluvial.runtime.network.connection import Connection, Listener
from fluvial.runtime.network.framing import FrameKind

logger = logging.getLogger(__name__)

REGISTRATION_TIMEOUT_S = 60.0
EXIT_STATUS_WAIT_S = 0.5  # after a connection closed, how long to wait for the zygote to say how the process ended
STACKS_WRITE_S = 0.2  # after asking a process that did not exit for its threads' stacks, before killing it
MAX_EARLY_DEATHS = 3  # replacements in a row that die before registering: the job cannot get its slots back


class TaskManagerLostError(FluvialError):
    """A TaskManager process died or stopped answering; its subtasks failed with it."""


class TaskManagerPoolListener(Protocol):
    """Who the pool reports to (the MiniCluster)."""

    def job_master_gateway(self, job_id: str) -> Any:
        """The JobMasterGateway of job `job_id`, where its TaskManagers' reports go (None when the job is not, or
        no longer, known: its reports are dropped)."""
        ...

    def collect_buffer(self, collect_id: str) -> Any: ...

    def task_manager_lost(self, index: int, error: TaskManagerLostError) -> None: ...


class RemoteTaskManagerGateway:
    """The TaskManagerGateway of TaskManager `index`: messages over its control connection. While the index
    has no live process (starting, or being replaced), messages wait and go out once it registers."""

    def __init__(self, index: int, number_of_slots: int) -> None:
        self.index = index
        self.number_of_slots = number_of_slots
        self.resource_id = f"tm-{index}"  # the process's own id once it has registered
        self._connection: Connection | None = None
        self._waiting: list[Any] = []
        self._lock = threading.Lock()

    def attach(self, connection: Connection) -> None:
        with self._lock:
            self._connection = connection
            waiting, self._waiting = self._waiting, []
            for message in waiting:
                connection.send(FrameKind.CONTROL, dumps_control(message))

    def detach(self) -> None:
        with self._lock:
            self._connection = None

    def send(self, message: Any) -> None:
        with self._lock:
            connection = self._connection
            if connection is None:
                self._waiting.append(message)
                return
            try:
                connection.send(FrameKind.CONTROL, dumps_control(message))
            except OSError:
                logger.debug("TaskManager %d is gone; dropped %s", self.index, type(message).__name__)

    def submit_task(self, message: DeployTask) -> None:
        self.send(DeploymentEnvelope.of(message))

    def cancel_task(self, message: CancelTask) -> None:
        self.send(message)

    def trigger_checkpoint(self, message: TriggerCheckpoint) -> None:
        self.send(message)

    def notify_checkpoint_complete(self, message: NotifyCheckpointComplete) -> None:
        self.send(message)

    def notify_checkpoint_aborted(self, message: NotifyCheckpointAborted) -> None:
        self.send(message)

    def release_job(self, message: ReleaseJob) -> None:
        self.send(message)

    def grant_collect_credit(self, count: int, collect_id: str) -> None:
        """The client took `count` buffers collect sink `collect_id` of this TaskManager sent: it may send that
        many more."""
        self.send(CollectCredit(count, collect_id))


class _Member:
    """One TaskManager index: its current process, connection and last sign of life."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.pid = 0
        self.ended: str | None = None  # how the current process ended, once it has
        self.connection: Connection | None = None
        self.data_address: tuple[str, int] | None = None
        self.last_seen = time.monotonic()
        self.lost = False
        self.early_deaths = 0  # processes in a row that died before they registered
        self.gc_collections: tuple[int, ...] = ()  # per generation, as its process's last heartbeat said

    def running(self) -> bool:
        """Its current process has not ended, as far as this process can tell (once the zygote has said how it
        ended, the PID may already name another program)."""
        return bool(self.pid) and self.ended is None and pid_running(self.pid)


class OutputCopy:
    """A file that gets a copy of what TaskManager processes print (Flink's taskmanager.out); None: no copy.
    Opened on the first text, appended to, closed with the pool; a write that fails is dropped with a warning
    once — the terminal still has the text."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._file: Any = None
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        if self.path is None:
            return
        with self._lock:
            try:
                if self._file is None:
                    os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
                    self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
                self._file.write(text)
                self._file.flush()
            except OSError as error:
                logger.warning("cannot copy what the TaskManagers print to %s: %s", self.path, error)
                self.path = None

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class TaskManagerProcesses:
    def __init__(
        self,
        count: int,
        slots_each: int,
        listener: TaskManagerPoolListener,
        *,
        bind_host: str = "127.0.0.1",
        heartbeat_interval_ms: int = 1000,
        heartbeat_timeout_ms: int = 10_000,
        stdout_file: str | None = None,
    ) -> None:
        """`stdout_file`: where what the TaskManagers print is also written (the dashboard's stdout page), beside
        this process's own stdout and stderr."""
        self.count = count
        self._output_copy = OutputCopy(stdout_file)
        self.slots_each = slots_each
        self._listener = listener
        self._bind_host = bind_host
        self._heartbeat_interval_ms = heartbeat_interval_ms
        self._heartbeat_timeout_s = heartbeat_timeout_ms / 1000
        self._secret = new_secret()
        self._members = [_Member(i) for i in range(count)]
        self.gateways = [RemoteTaskManagerGateway(i, slots_each) for i in range(count)]
        self._registered = threading.Condition()
        self._stopping = threading.Event()
        self._started = False
        self._control = Listener(self._secret, self._on_connection, "fluvial-control", bind_host)
        self._monitor: threading.Thread | None = None

    # -- start --------------------------------------------------------------------------------------------------

    def start(self, timeout: float = REGISTRATION_TIMEOUT_S) -> None:
        """Step 1: start every process and wait until all have registered and know each other's addresses."""
        started = time.monotonic()
        for member in self._members:
            self._spawn(member)
        self._await_registration(timeout)
        self._monitor = threading.Thread(target=self._watch_heartbeats, name="fluvial-heartbeat-monitor", daemon=True)
        self._monitor.start()
        logger.info(
            "%d TaskManager processes with %d slots each ready in %.0f ms (pids %s)",
            self.count,
            self.slots_each,
            (time.monotonic() - started) * 1000,
            ", ".join(str(member.pid) for member in self._members),
        )

    def _spawn(self, member: _Member) -> None:
        from fluvial.cluster.process.launcher import launcher

        config = TaskManagerProcessConfig(
            member.index,
            self.slots_each,
            self._control.address,
            self._secret,
            self._bind_host,
            logging.getLogger(ENGINE_LOGGER).getEffectiveLevel(),
            self._heartbeat_interval_ms,
            list(sys.path),
            os.getcwd(),
            dict(os.environ),
        )
        member.connection, member.data_address, member.ended, member.lost = None, None, None, False
        member.last_seen = time.monotonic()
        member.gc_collections = ()
        member.pid = launcher().start(config, self._on_exit)

    def _await_registration(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._registered:
            while not self.ready():
                dead = [m for m in self._members if m.ended is not None and m.connection is None]
                if dead:
                    member = dead[0]
                    raise ResourceError(
                        f"TaskManager process {member.index} (pid {member.pid}) {member.ended} "
                        "before it registered; see the error above"
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    missing = [m.index for m in self._members if m.connection is None]
                    raise ResourceError(f"TaskManager processes {missing} did not register within {timeout:.0f} s")
                self._registered.wait(min(remaining, 0.2))
        self._started = True

    def ready(self) -> bool:
        """Every TaskManager has a live, registered process (deployments may go out). Read under the registration
        lock (re-entrant), so a member seen half-registered or half-replaced never answers."""
        with self._registered:
            return all(member.connection is not None and not member.lost for member in self._members)

    # -- step 2: what TaskManagers send -------------------------------------------------------------------------

    def _on_connection(self, connection: Connection) -> None:
        """A TaskManager process connected (on the Listener's handshake thread, which then reads it)."""
        member: _Member | None = None
        registration: Any = None
        try:
            frame = connection.read()
            if frame is None or frame[0] is not FrameKind.CONTROL:
                raise ConnectionError("the first frame is not a registration")
            registration = loads_control(frame[1])
            if not isinstance(registration, RegisterTaskManager) or not 0 <= registration.index < self.count:
                raise ConnectionError(f"unexpected first message {type(registration).__name__}")
            member = self._members[registration.index]
            self._register(member, connection, registration)
            self._read(member, connection)
        except (OSError, ConnectionError, pickle.UnpicklingError) as error:
            if not self._stopping.is_set() and member is None:
                logger.warning("dropped a control connection from %s: %s", connection.peer, error)
        finally:
            connection.close()
            if member is not None:
                self._connection_closed(member, registration.pid)

    def _register(self, member: _Member, connection: Connection, registration: RegisterTaskManager) -> None:
        with self._registered:
            member.connection, member.data_address = connection, registration.data_address
            self.gateways[member.index].resource_id = registration.resource_id or f"tm-{member.index}"
            member.last_seen = time.monotonic()
            member.early_deaths = 0
            all_known = all(m.data_address is not None and m.connection is not None for m in self._members)
            if all_known:  # every member's data_address and connection are set (cast below)
                addresses = {m.index: cast(tuple[str, int], m.data_address) for m in self._members}
                self._announce(TaskManagerDirectory(addresses))
            self._registered.notify_all()
        logger.info(
            "TaskManager %d registered (pid %d, data plane %s:%d)", member.index, member.pid, *member.data_address
        )
        if all_known:
            for other in self._members:
                self.gateways[other.index].attach(cast(Connection, other.connection))

    def _announce(self, directory: TaskManagerDirectory) -> None:
        """Every TaskManager learns every data-plane address, ahead of any message that may need one (called with
        the registration lock held, before the gateways attach): every member has its connection."""
        for member in self._members:
            cast(Connection, member.connection).send(FrameKind.CONTROL, dumps_control(directory))

    def _read(self, member: _Member, connection: Connection) -> None:
        while (frame := connection.read()) is not None:
            kind, payload = frame
            member.last_seen = time.monotonic()
            if kind is FrameKind.CONTROL:
                self._route(loads_control(payload))
            elif kind is FrameKind.COLLECT:
                collect_id, records = pickle.loads(payload)  # the records stay pickled until the client takes them
                self._listener.collect_buffer(collect_id).put_remote(records, self.gateways[member.index])
            elif kind is FrameKind.OUTPUT:
                stream_name, text = pickle.loads(payload)
                stream = sys.stderr if stream_name == "stderr" else sys.stdout
                stream.write(text)
                stream.flush()
                self._output_copy.write(text)
            elif kind is FrameKind.LOG:
                record = logging.makeLogRecord(pickle.loads(payload))
                logging.getLogger(record.name).handle(record)
            elif kind is FrameKind.HEARTBEAT and payload:
                member.gc_collections = parse_gc_collections(payload)

    def _route(self, message: Any) -> None:
        job_master = self._listener.job_master_gateway(message.job_id)
        if job_master is None:
            logger.debug("dropped a %s of job %s, which is not known here", type(message).__name__, message.job_id)
            return
        deliver = _TO_JOB_MASTER.get(type(message))
        if deliver is None:
            logger.warning("ignoring an unknown message from a TaskManager: %s", type(message).__name__)
            return
        if isinstance(message, TaskExecutionState):
            with_remote_traceback(message.failure)
        deliver(job_master, message)

    # -- step 3: failure detection ------------------------------------------------------------------------------

    def _on_exit(self, pid: int, how: str) -> None:
        """The zygote says process `pid` ended (on the launcher's reader thread)."""
        member = next((m for m in self._members if m.pid == pid), None)
        if member is None:
            return  # an earlier process of a replaced member
        member.ended = how
        with self._registered:
            self._registered.notify_all()
        self._lost(member, f"its process (pid {pid}) {how}")

    def _connection_closed(self, member: _Member, pid: int) -> None:
        """Process `pid`'s control connection ended: it died (the zygote will say how) or cut us off — unless it
        was replaced already."""
        deadline = time.monotonic() + EXIT_STATUS_WAIT_S
        while (
            member.pid == pid and member.ended is None and time.monotonic() < deadline and not self._stopping.is_set()
        ):
            time.sleep(0.01)
        if member.pid == pid:
            self._lost(member, f"its process (pid {pid}) {member.ended or 'closed its control connection'}")

    def _watch_heartbeats(self) -> None:
        interval = self._heartbeat_interval_ms / 1000
        while not self._stopping.wait(interval):
            now = time.monotonic()
            for member in self._members:
                silent = now - member.last_seen
                if member.connection is not None and not member.lost and silent > self._heartbeat_timeout_s:
                    self._kill_member(member)
                    self._lost(
                        member,
                        f"it sent no heartbeat for {silent:.1f} s (heartbeat.timeout is "
                        f"{self._heartbeat_timeout_s:.1f} s); its process (pid {member.pid}) was killed",
                    )

    def _kill_member(self, member: _Member) -> None:
        """End member's current process, however it is stuck."""
        kill(member.pid)

    def _lost(self, member: _Member, how: str) -> None:
        with self._registered:
            if member.lost or self._stopping.is_set() or not self._started:
                return  # already handled; or shutting down; or still starting (start() reports it)
            member.lost = True
            if member.connection is None:
                member.early_deaths += 1
        self.gateways[member.index].detach()
        if member.connection is not None:
            member.connection.close()
        error = TaskManagerLostError(f"TaskManager {member.index} was lost: {how}")
        if member.early_deaths >= MAX_EARLY_DEATHS:
            logger.error("%s; %d replacements in a row died before registering, giving up", error, member.early_deaths)
            self._listener.task_manager_lost(member.index, error)
            return
        logger.warning("%s; starting a replacement", error)
        self._listener.task_manager_lost(member.index, error)
        self._spawn(member)

    # -- step 4 -------------------------------------------------------------------------------------------------

    def shutdown(self, timeout: float = 5.0) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._control.close()
        self._output_copy.close()
        for member in self._members:
            if member.connection is not None:
                try:
                    member.connection.send(FrameKind.CLOSE)
                except OSError:
                    pass
                member.connection.close()
        deadline = time.monotonic() + timeout
        for member in self._members:
            while member.running() and time.monotonic() < deadline:
                time.sleep(0.01)
            if member.running():
                kill_stuck(member, timeout)

    @property
    def pids(self) -> list[int]:
        return [member.pid for member in self._members if member.pid]

    def gc_collections(self, pid: int) -> tuple[int, ...]:
        """The garbage-collection counts per generation that TaskManager process `pid` last reported; () before
        its first heartbeat or for a pid that is not one of this pool's processes."""
        for member in self._members:
            if member.pid == pid:
                return member.gc_collections
        return ()


def kill_stuck(member: _Member, waited_s: float) -> None:
    """Step 4 for a process still running `waited_s` after its connection ended: first it writes where its threads
    are to standard error (`thread_stacks`), so that what held it is on record; then it is killed."""
    pid = member.pid
    dumped = signal_if(pid, STACKS_SIGNAL, member.running)
    if dumped:
        time.sleep(STACKS_WRITE_S)
    if signal_if(pid, signal.SIGKILL, member.running):
        logger.warning(
            "TaskManager process %d (pid %d) did not exit within %.0f s of the end of its connection%s; killed it",
            member.index,
            pid,
            waited_s,
            "; the stacks of its threads are on standard error" if dumped else "",
        )


# What a TaskManager process reports, and the JobMasterGateway method that takes it (called on the gateway
# instance: a Protocol's own function is only its declaration).
_TO_JOB_MASTER: dict[type, Callable[[JobMasterGateway, Any], None]] = {
    TaskExecutionState: lambda job_master, message: job_master.update_task_execution_state(message),
    AcknowledgeCheckpoint: lambda job_master, message: job_master.acknowledge_checkpoint(message),
    DeclineCheckpoint: lambda job_master, message: job_master.decline_checkpoint(message),
    TaskEndOfData: lambda job_master, message: job_master.notify_end_of_data(message),
    MetricsSnapshot: lambda job_master, message: job_master.report_metrics(message),
}
