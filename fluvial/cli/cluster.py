"""`fluvial cluster start | stop`: a session cluster on this machine (Flink's start-cluster.sh / stop-cluster.sh).

`start` refuses while the cluster file records a live cluster (a stale file, whose JobManager is gone, is
removed with a note). In the background (the default) it starts the JobManager process in a session of its own
— its stdout and stderr in `~/.fluvial/log/jobmanager.out`, its log in `jobmanager.log` — and returns once the
REST API answers `GET /overview`, printing the dashboard's address. `--foreground` runs the JobManager in this
process until Ctrl-C.

`stop` asks the cluster to shut down (`DELETE /cluster`, with the token of the cluster file), waits for every
process the file records to exit, kills what did not, and removes the file. When the JobManager does not
answer, it is sent SIGTERM. A file whose JobManager is gone is cleaned up, with a note. A signal goes only to a
process proven to be the cluster's (its start time and the cluster's id in its environment: `cluster_file.py`),
never to a PID alone.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from typing import Annotated, NoReturn

import typer

from fluvial.cli.console import ExitCode, echo_err, error, exit_with, fail_usage
from fluvial.cluster.session.cluster import (
    DEFAULT_BIND,
    DEFAULT_PORT,
    SessionClusterSpec,
    cluster_configuration,
)
from fluvial.cluster.session.cluster_file import (
    CLUSTER_ID_VARIABLE,
    ClusterFileError,
    ClusterRecord,
    ProcessRecord,
    cluster_file_path,
    log_directory,
    private_directory,
    read_cluster_file,
    remove_cluster_file,
)
from fluvial.cluster.session.rest_client import AccessToken, ClusterAddress, RestClusterClient
from fluvial.common.errors import FluvialError
from fluvial.common.processes import python_command

START_TIMEOUT_SECONDS = 60.0
ANSWER_TIMEOUT_SECONDS = 5.0  # from the JobManager recording its address to its REST API answering
STOP_TIMEOUT_SECONDS = 30.0  # the cluster cancels its jobs (10 s at most) and stops its processes (5 s)
POLL_SECONDS = 0.05

cluster_app = typer.Typer(
    name="cluster", help="Start or stop a session cluster on this machine.", no_args_is_help=True, add_completion=False
)


@cluster_app.command()
def start(
    taskmanagers: Annotated[
        int | None, typer.Option("--taskmanagers", min=1, help="TaskManager processes (default: one per core).")
    ] = None,
    slots: Annotated[int, typer.Option("--slots", min=1, help="Slots per TaskManager.")] = 1,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="REST port (0: any free port).")] = DEFAULT_PORT,
    bind: Annotated[
        str, typer.Option("--bind", metavar="HOST", help="The address the REST API listens on.")
    ] = DEFAULT_BIND,
    foreground: Annotated[bool, typer.Option("--foreground", help="Run in this terminal until Ctrl-C.")] = False,
    properties: Annotated[
        list[str] | None,
        typer.Option("-D", metavar="KEY=VALUE", help="A cluster setting, e.g. -D slot.request.timeout=60s."),
    ] = None,
) -> None:
    """Start a session cluster: a JobManager (REST API and dashboard) and TaskManager processes."""
    try:
        configuration = cluster_configuration(list(properties or ()))
    except FluvialError as problem:
        fail_usage(str(problem))
    _refuse_if_running()
    taskmanagers = taskmanagers or os.cpu_count() or 1
    spec = SessionClusterSpec(taskmanagers, slots, port, bind, configuration)
    if foreground:
        from fluvial.cli.jobmanager import run

        raise typer.Exit(run(spec, foreground=True))
    record = _start_in_background(spec, list(properties or ()))
    print(
        f"Session cluster started: {taskmanagers} TaskManager{'s' if taskmanagers > 1 else ''} with {spec.slots} "
        f"slot{'s' if spec.slots > 1 else ''} each (JobManager pid {record.jobmanager.pid})."
    )
    print(f"Dashboard and REST API: {record.rest_url}")
    print(
        f"  with its access token (to cancel, savepoint or stop from the dashboard): {record.rest_url}/#/?token="
        f"{record.token}"
    )
    print(f"Logs: {record.log_dir} (jobmanager.log; what jobs print: jobmanager.out)")


def _refuse_if_running() -> None:
    path = cluster_file_path()
    record = _read_record()
    if record is None:
        return
    if record.jobmanager.alive():
        error(
            f"a session cluster is already running (JobManager pid {record.jobmanager.pid}, dashboard "
            f"{record.rest_url}): use it (fluvial run -m {record.address} JOB.py), or stop it first (fluvial "
            "cluster stop)"
        )
        exit_with(ExitCode.FAILURE)
    _clean_stale(record)
    echo_err(
        f"note: removed {path}, left by a cluster that is no longer running (JobManager pid {record.jobmanager.pid})"
    )


def _start_in_background(spec: SessionClusterSpec, properties: list[str]) -> ClusterRecord:
    from fluvial.cli.jobmanager import out_file

    private_directory(log_directory())
    command = [
        *python_command("-m", "fluvial.cli.jobmanager"),
        "--taskmanagers",
        str(spec.task_managers),
        "--slots",
        str(spec.slots),
        "--port",
        str(spec.port),
        "--bind",
        spec.bind,
    ]
    for pair in properties:
        command += ["-D", pair]
    environment = {**os.environ, CLUSTER_ID_VARIABLE: secrets.token_hex(16)}  # proves its processes the cluster's
    with open(out_file(), "ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=environment,
        )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    recorded_at: float | None = None
    while True:
        record = _read_record()
        if record is not None and record.jobmanager.pid == process.pid:
            problem = _answer_problem(record)
            if problem is None:
                return record
            recorded_at = recorded_at or time.monotonic()
            if time.monotonic() - recorded_at > ANSWER_TIMEOUT_SECONDS:
                _give_up(process, f"its REST API at {record.rest_url} fails ({problem})")
        if process.poll() is not None:
            error(
                f"the session cluster did not start (its JobManager exited with code {process.returncode}); the "
                f"end of {out_file()}:\n{_tail(out_file())}"
            )
            exit_with(ExitCode.FAILURE)
        if time.monotonic() > deadline:
            _give_up(process, f"it did not answer within {START_TIMEOUT_SECONDS:.0f} s")
        time.sleep(POLL_SECONDS)


def _give_up(process: subprocess.Popen, why: str) -> NoReturn:
    """Kill the JobManager that cannot serve, say why — with the first error it wrote — and exit 1."""
    from fluvial.cli.jobmanager import out_file

    process.kill()
    process.wait()
    first = _first_error(out_file())
    error(
        f"the session cluster did not start: {why}; it was stopped."
        + (f" Its first error, from {out_file()}:\n{first}" if first else f" See {log_directory()}")
    )
    exit_with(ExitCode.FAILURE)


def _first_error(path: object, context: int = 3) -> str:
    """The end of the first traceback in the file (its last frame and the exception's line), or ''."""
    try:
        with open(str(path), encoding="utf-8", errors="replace") as text:
            lines = text.read().splitlines()
    except OSError:
        return ""
    start = next((index for index, line in enumerate(lines) if line.startswith("Traceback (most recent call")), None)
    if start is None:
        return ""
    end = next(
        (index for index in range(start + 1, len(lines)) if lines[index] and not lines[index][0].isspace()),
        len(lines) - 1,
    )
    return "\n".join(lines[max(start + 1, end - context) : end + 1])


def _answer_problem(record: ClusterRecord) -> str | None:
    """Why the cluster's REST API does not answer GET /overview; None when it does."""
    try:
        RestClusterClient(ClusterAddress.parse(record.address), AccessToken(record.token, "")).overview()
    except FluvialError as problem:
        return str(problem)
    return None


@cluster_app.command("stop")
def stop_cluster() -> None:
    """Stop the session cluster recorded in ~/.fluvial/cluster.json, and every process of it."""
    path = cluster_file_path()
    record = _read_record()
    if record is None:
        print(f"No session cluster to stop: {path} does not exist.")
        return
    if not record.jobmanager.alive():
        _clean_stale(record)
        print(f"Removed {path}: the cluster it recorded (JobManager pid {record.jobmanager.pid}) is no longer running.")
        return
    print(f"Stopping the session cluster at {record.rest_url} (JobManager pid {record.jobmanager.pid}).")
    client = RestClusterClient(
        ClusterAddress.parse(record.address), AccessToken(record.token, f"the token in {path} was refused")
    )
    try:
        client.shutdown()
        accepted = True
    except FluvialError as problem:
        echo_err(f"note: the cluster did not take DELETE /cluster ({problem}); sending its JobManager SIGTERM")
        _terminate(record)
        accepted = False

    def waited_for(process: ProcessRecord) -> bool:  # a process that will end, or that may be killed
        return process.belongs_to(record.cluster_id) or (accepted and process.alive())

    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while any(waited_for(process) for process in record.processes) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    for process in record.processes:
        if process.kill(record.cluster_id):
            echo_err(
                f"warning: process {process.pid} of the cluster had not exited after "
                f"{STOP_TIMEOUT_SECONDS:.0f} s and was killed"
            )
        elif process.alive():
            echo_err(
                f"warning: process {process.pid}, named by {path}, still runs but is not provably the "
                "cluster's: it was not signalled"
            )
    remove_cluster_file(record.jobmanager.pid)
    print("Session cluster stopped.")


def _terminate(record: ClusterRecord) -> None:
    if not record.jobmanager.kill(record.cluster_id, signal.SIGTERM) and record.jobmanager.alive():
        echo_err(f"note: process {record.jobmanager.pid} is not provably the cluster's JobManager: not signalled")


def _clean_stale(record: ClusterRecord) -> None:
    """The JobManager is gone: kill what it left running (a TaskManager cannot outlive it for long, but it may
    still be ending) and remove the file."""
    for process in record.taskmanagers:
        process.kill(record.cluster_id)
    remove_cluster_file(record.jobmanager.pid)


def _read_record() -> ClusterRecord | None:
    try:
        return read_cluster_file()
    except ClusterFileError as problem:
        fail_usage(str(problem))


def _tail(path: object, lines: int = 20) -> str:
    try:
        with open(str(path), encoding="utf-8", errors="replace") as text:
            return "".join(text.readlines()[-lines:]).rstrip()
    except OSError:
        return "(nothing written)"
