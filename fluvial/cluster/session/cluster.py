"""SessionCluster: what a session cluster's JobManager process runs — the TaskManager processes, the
SessionDispatcher over them, the REST API and dashboard, and the cluster file that tells clients where it all is.

Lifecycle, numbered:
1. `start()`: refuse when the cluster file records a live cluster (a stale file is removed, with a note);
   start the TaskManager processes and wait until all have registered; serve the REST API on `bind:port`
   (port 0: any free port); write the cluster file (mode 0600) with a new random token.
2. `run_until_stopped()`: serve until `request_stop()` (SIGTERM, SIGINT, DELETE /cluster); meanwhile the
   cluster file is rewritten whenever a TaskManager process was replaced (its new PID).
3. `shutdown()`: cancel every job and wait for them (bounded), stop the REST server, stop the TaskManager
   processes (each exits when its control connection closes; one that does not is killed), end the process
   launcher, remove the cluster file. No process of the cluster outlives it; and should the JobManager be
   killed instead, its TaskManagers and launcher see their connections and pipes close and exit on their own.
"""

from __future__ import annotations

import datetime
import logging
import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fluvial.cluster.session.cluster_file import (
    CLUSTER_ID_VARIABLE,
    ClusterRecord,
    ProcessRecord,
    cluster_file_path,
    log_directory,
    read_cluster_file,
    remove_cluster_file,
    write_cluster_file,
)
from fluvial.cluster.session.session_dispatcher import SessionDispatcher
from fluvial.cluster.session.slot_pool import SlotPool
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError, ResourceError

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8081
DEFAULT_BIND = "127.0.0.1"
JOB_END_WAIT_SECONDS = 10.0  # at shutdown, how long the cancelled jobs get to end
FILE_REFRESH_SECONDS = 0.5  # how often a replaced TaskManager's PID is looked for

# The keys a session cluster takes (`fluvial cluster start -D KEY=VALUE`); each does what it says.
CLUSTER_KEYS = (
    "slot.request.timeout",
    "heartbeat.interval",
    "heartbeat.timeout",
    "taskmanager.bind-host",
    "metrics.fetcher.update-interval",
    "rest.allowed-hosts",
    "jobmanager.archive.fs.dir",
)


def cluster_configuration(pairs: list[str]) -> Configuration:
    """The cluster's configuration from `KEY=VALUE` pairs; a key a session cluster does not use, or a bad value,
    is a ConfigurationError naming it."""
    configuration = Configuration()
    for pair in pairs:
        key, separator, value = pair.partition("=")
        key = key.strip()
        if not separator or not key:
            raise ConfigurationError(f"-D expects KEY=VALUE, e.g. -D slot.request.timeout=60s; got '{pair}'")
        if key not in CLUSTER_KEYS:
            raise ConfigurationError(
                f"-D {key}: a session cluster takes {', '.join(CLUSTER_KEYS)}; set job "
                "settings in the job (or `fluvial run -D`), not on the cluster"
            )
        configuration.set_string(key, value.strip())
    configuration.validate()
    return configuration


@dataclass(frozen=True)
class SessionClusterSpec:
    """By default one TaskManager process per core with one slot each, as Flink's standalone cluster gives one
    slot per TaskManager: Python runs one thread at a time per process, so a slot per process is what lets a
    job's subtasks use every core; jobs default to parallelism 1 there (`parallelism.default`)."""

    task_managers: int = field(default_factory=lambda: os.cpu_count() or 1)
    slots: int = 1
    port: int = DEFAULT_PORT
    bind: str = DEFAULT_BIND
    configuration: Configuration = field(default_factory=Configuration)


class ServedWeb(Protocol):
    """A running REST server: the port it listens on, and how to stop it."""

    @property
    def port(self) -> int: ...

    def stop(self) -> None: ...


class WebFront(Protocol):
    """What serves the cluster's REST API and dashboard over its dispatcher (`fluvial.web.session.serve_session`).
    The web layer sits above the cluster, so the composition root (`fluvial.cli.jobmanager`) passes it in."""

    def __call__(
        self, dispatcher: SessionDispatcher, token: str, configuration: Configuration, bind: str, port: int
    ) -> ServedWeb: ...


class SessionCluster:
    def __init__(self, spec: SessionClusterSpec, web_front: WebFront, cluster_file: Path | None = None) -> None:
        self.spec = spec
        self._web_front = web_front
        self._file = cluster_file or cluster_file_path()
        self.token = secrets.token_hex(32)
        # The id that proves a process is this cluster's (cluster_file.py): `fluvial cluster start` starts this
        # process with it; the launcher and TaskManagers started from here inherit it.
        self.cluster_id = os.environ.get(CLUSTER_ID_VARIABLE) or secrets.token_hex(16)
        os.environ[CLUSTER_ID_VARIABLE] = self.cluster_id
        self.dispatcher = SessionDispatcher(
            SlotPool(spec.task_managers, spec.slots), spec.configuration, on_shutdown=self.request_stop
        )
        self._processes: Any = None  # TaskManagerProcesses
        self._web: ServedWeb | None = None
        self._stop = threading.Event()
        self._recorded: ClusterRecord | None = None

    # -- 1 --------------------------------------------------------------------------------------------------------

    def start(self) -> SessionCluster:
        refuse_if_running(self._file)
        try:
            self._start_task_managers()
            self._start_web()
            self._write_file()
        except BaseException:
            self.shutdown()
            raise
        logger.info(
            "session cluster ready: %d TaskManagers with %d slots each, REST API and dashboard at %s",
            self.spec.task_managers,
            self.spec.slots,
            self.rest_url,
        )
        return self

    def _start_task_managers(self) -> None:
        from fluvial.cluster.process.pool import TaskManagerProcesses

        config = self.spec.configuration
        self._processes = TaskManagerProcesses(
            self.spec.task_managers,
            self.spec.slots,
            self.dispatcher,
            bind_host=config.get("taskmanager.bind-host"),
            heartbeat_interval_ms=config.get("heartbeat.interval"),
            heartbeat_timeout_ms=config.get("heartbeat.timeout"),
        )
        self._processes.start()
        self.dispatcher.serve(self._processes)

    def _start_web(self) -> None:
        self._web = self._web_front(
            self.dispatcher, self.token, self.spec.configuration, self.spec.bind, self.spec.port
        )

    @property
    def address(self) -> str:
        """host:port where clients reach the REST API (loopback when it listens on every address)."""
        if self._web is None:
            raise RuntimeError("the session cluster's REST API is not serving: start() the cluster first")
        host = self.spec.bind if self.spec.bind not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"[{host}]:{self._web.port}" if ":" in host else f"{host}:{self._web.port}"

    @property
    def rest_url(self) -> str:
        return f"http://{self.address}"

    @property
    def task_manager_pids(self) -> list[int]:
        return list(self._processes.pids) if self._processes is not None else []

    def _write_file(self) -> None:
        record = ClusterRecord(
            address=self.address,
            rest_url=self.rest_url,
            token=self.token,
            jobmanager=ProcessRecord.of(os.getpid()),
            taskmanagers=tuple(ProcessRecord.of(pid) for pid in self.task_manager_pids),
            log_dir=str(log_directory()),
            started_at=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            cluster_id=self.cluster_id,
        )
        write_cluster_file(record, self._file)
        self._recorded = record

    # -- 2 --------------------------------------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()

    def run_until_stopped(self) -> None:
        while not self._stop.wait(FILE_REFRESH_SECONDS):
            recorded = self._recorded
            if recorded is not None and [p.pid for p in recorded.taskmanagers] != self.task_manager_pids:
                logger.info("TaskManager processes are now %s; rewriting %s", self.task_manager_pids, self._file)
                self._write_file()

    # -- 3 --------------------------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        from fluvial.cluster.process.launcher import shutdown_launcher

        logger.info("session cluster shutting down")
        self.dispatcher.shutdown(JOB_END_WAIT_SECONDS)
        if self._web is not None:
            self._web.stop()
        if self._processes is not None:
            self._processes.shutdown()
        shutdown_launcher()
        if self._recorded is not None:
            remove_cluster_file(os.getpid(), self._file)
        logger.info("session cluster stopped")


def refuse_if_running(path: Path | None = None) -> None:
    """Raise ResourceError when the cluster file records a cluster whose JobManager runs; remove a stale file."""
    path = path or cluster_file_path()
    record = read_cluster_file(path)
    if record is None:
        return
    if record.jobmanager.alive():
        raise ResourceError(
            f"a session cluster is already running (JobManager pid {record.jobmanager.pid}, "
            f"dashboard {record.rest_url}, recorded in {path}): use it (fluvial run -m "
            f"{record.address} ...), or stop it first (fluvial cluster stop)"
        )
    logger.warning(
        "removing %s: the cluster it records (JobManager pid %d) is no longer running", path, record.jobmanager.pid
    )
    path.unlink(missing_ok=True)
