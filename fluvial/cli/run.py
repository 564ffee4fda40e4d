"""`fluvial run [OPTIONS] JOB [ARGS]...`: run a job file, as `flink run` does a program — its jobs on the embedded
cluster; with `-m HOST:PORT` on that session cluster (each `execute()` submits its job there and prints Flink's
`Job has been submitted with JobID <id>`; attached, the default, it waits for the job, showing its progress on
stderr, and fails with the job's failure); with `--target ray` on a Ray cluster. Detached (`-d`, with -m or
on Ray) each job is submitted and left running: its id is printed, and it is never cancelled.

Options (Flink's) come before JOB; everything after JOB is the job's own sys.argv[1:], options included, so
`fluvial run job.py -p 4` hands `-p 4` to the job. Flink's Python options work as in `flink run`: `-py job.py`
names the job file, `-pym package.module` a module to run (with `-pyfs` the files and directories it is found
in), and what follows either is the job's (`python_options.py`).

As `flink run` does, each job the file submits is announced with `Job has been submitted with JobID <id>` and,
once `execute()` returns, `Job Runtime: N ms`. On a session cluster these lines go to stdout (the jobs' own output
goes to the cluster's `jobmanager.out`, as in Flink); an embedded job prints its records to this process's
stdout, so there they go to stderr, keeping stdout for the job's data (`fluvial run job.py | sort`). The run fails with exit code 2 when the file never submits a
job, 1 when a job or the file fails (the message and the user's frames on stderr), 130 on Ctrl-C, and 141 — with
nothing printed — when the reader of its output goes away (`fluvial run job.py | head`). On Ctrl-C and on a
closed pipe, the attached jobs still running are cancelled before fluvial exits (a detached job runs on).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from fluvial.cli.closed_pipe import ClosedPipe, PipeWatch
from fluvial.cli.console import ExitCode, VerboseOption, exit_with, fail_usage, verbose_logging
from fluvial.cli.job_file import (
    JobArguments,
    ScriptOutcome,
    ScriptResult,
    SubmittedJobs,
    execute_job_file,
    execute_job_module,
    fail_no_job,
    observed_submissions,
    report,
    require_job_file,
)
from fluvial.cli.launch import (
    AllowNonRestoredOption,
    DetachedOption,
    LaunchOptions,
    ParallelismOption,
    PropertyOption,
    SavepointOption,
    TargetOption,
    launch_configuration,
    launched_with,
)
from fluvial.cli.progress import ConsoleProgress
from fluvial.cli.python_options import (
    PythonArchivesOption,
    PythonExecutableOption,
    PythonFileOption,
    PythonFilesOption,
    PythonModuleOption,
    PythonRequirementsOption,
    python_file_paths,
)
from fluvial.cli.target import target_session_cluster
from fluvial.cluster.session.remote_job_client import RemoteJobClient
from fluvial.common.configuration import Configuration
from fluvial.datastream.python_dependencies import sys_path_entry

RunJobManagerOption = Annotated[
    str | None,
    typer.Option(
        "-m",
        "--jobmanager",
        metavar="HOST:PORT",
        help="Submit the jobs to the session cluster at this REST address (without -m they run embedded).",
    ),
]
RunJobArgument = Annotated[
    Path | None, typer.Argument(help="The job file: a Python program that calls env.execute() (or give it with -py).")
]
WebOption = Annotated[
    bool,
    typer.Option(
        "--web",
        help="Serve the REST API and the dashboard while the jobs run (rest.port, default "
        "8081; -D rest.port=0 takes a free one) and print their address.",
    ),
]

CANCEL_WAIT_SECONDS = 10.0
"""How long `run` waits for cancelled jobs to end before it exits anyway."""


def run(
    job: RunJobArgument = None,
    args: JobArguments = None,
    parallelism: ParallelismOption = None,
    properties: PropertyOption = None,
    savepoint: SavepointOption = None,
    allow_non_restored_state: AllowNonRestoredOption = False,
    jobmanager: RunJobManagerOption = None,
    target: TargetOption = None,
    detached: DetachedOption = False,
    web: WebOption = False,
    python: PythonFileOption = None,
    py_module: PythonModuleOption = None,
    py_files: PythonFilesOption = None,
    py_requirements: PythonRequirementsOption = None,
    py_archives: PythonArchivesOption = None,
    py_executable: PythonExecutableOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Run JOB as `__main__`: its jobs on the embedded cluster, with -m on that session cluster, with --target ray
    on Ray. Options go before JOB; everything after JOB becomes the job's sys.argv[1:]."""
    job_args = list(args or ())
    if py_module is not None:
        job_args = ([str(job)] if job is not None else []) + job_args  # -pym: every argument is the module's
    elif job is None:
        fail_usage(NO_JOB_FILE)
    else:
        require_job_file(job)
    path_entries = python_file_paths(py_files)
    python_settings = tuple(
        (key, value, f"{option} {value}")
        for key, value, option in (
            ("python.files", ",".join(path_entries), "-pyfs"),
            ("python.requirements", py_requirements, "-pyreq"),
            ("python.archives", py_archives, "-pyarch"),
            ("python.executable", py_executable, "-pyexec"),
        )
        if value
    )
    options = LaunchOptions(
        parallelism, tuple(properties or ()), savepoint, allow_non_restored_state, target, detached, python_settings
    )
    configuration = launch_configuration(options)
    if jobmanager is not None:
        if target is not None and target != "remote":
            fail_usage(f"-m submits to a session cluster, and --target {target} runs the jobs elsewhere: give one")
        _target_session_cluster(configuration, jobmanager, detached, web)
    elif detached and configuration.get("execution.target") != "ray":
        fail_usage(
            "-d (--detached) submits each job and leaves it running, on a session cluster (add -m HOST:PORT; "
            "`fluvial cluster start` starts one) or on Ray (add --target ray)"
        )
    target = configuration.get("execution.target")
    if configuration.contains_key("rest.address") and target != "remote":
        fail_usage(
            f"-D rest.address names the session cluster to submit to, and the jobs run on execution.target "
            f"{target}: give the cluster with -m HOST:PORT"
        )
    if web and not configuration.contains_key("rest.port"):
        configuration.set_string("rest.port", "8081")
    if web and not configuration.contains_key("local.rest.keep-serving"):
        configuration.set_string("local.rest.keep-serving", "true")  # readable after the job ends, until Ctrl-C
    progress = ConsoleProgress() if jobmanager is not None and not detached else None
    announce = FlinkLines(sys.stdout if jobmanager is not None else sys.stderr)
    jobs = SubmittedJobs()
    with PipeWatch(on_close=jobs.cancel_running) as watch, verbose_logging(verbose):
        observer = _keep_unless_closed(jobs, watch, web, progress, detached, announce)
        client_path = list(dict.fromkeys(sys_path_entry(path) for path in path_entries))  # -pyfs, as Flink's client
        main: Callable[[], ScriptResult]
        if py_module is not None:
            main = partial(execute_job_module, py_module, job_args, client_path)
            script = Path(py_module)
        elif job is not None:  # always: without -pym a job file was required above
            main = partial(execute_job_file, job, job_args, client_path)
            script = job
        else:
            fail_usage(NO_JOB_FILE)
        result = _run_watched(main, configuration, observer, announce)
        if watch.check_now():
            _end_quietly(jobs)
    if result.outcome is ScriptOutcome.INTERRUPTED:
        jobs.cancel_running()
        jobs.wait(CANCEL_WAIT_SECONDS)
    if web:
        _keep_dashboard_until_interrupted(result.outcome is not ScriptOutcome.INTERRUPTED)
    report(result, verbose)
    if not jobs:
        fail_no_job(script)


NO_JOB_FILE = "give the job file: fluvial run JOB.py [ARGS]... (or -py JOB.py, or -pym MODULE)"


class FlinkLines:
    """The lines `flink run` prints about each job: its JobID once submitted, its runtime once `execute()` ran it
    to its end."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def submitted(self, job_id: Any) -> None:
        print(f"Job has been submitted with JobID {job_id}", file=self._stream, flush=True)

    def finished(self, result: Any) -> None:
        print(
            f"Program execution finished\nJob with JobID {result.get_job_id()} has finished.\n"
            f"Job Runtime: {result.get_net_runtime()} ms",
            file=self._stream,
            flush=True,
        )


def _run_watched(
    main: Callable[[], ScriptResult], configuration: Configuration, observer: Callable[..., Any], announce: FlinkLines
) -> ScriptResult:
    from fluvial.datastream.stream_execution_environment import execution_listener

    token = execution_listener.set(announce.finished)
    try:
        with launched_with(configuration), observed_submissions(observer):
            return main()
    except ClosedPipe:  # the job file wrote after the pipe closed: it ends here, as SIGPIPE would end it
        return ScriptResult(ScriptOutcome.COMPLETED)
    finally:
        execution_listener.reset(token)


def _target_session_cluster(configuration: Configuration, jobmanager: str, detached: bool, web: bool) -> None:
    """The keys that send every job of the file to the session cluster at `jobmanager` (-m)."""
    if web:
        fail_usage(
            f"--web serves the dashboard of an embedded job; the session cluster at {jobmanager} serves its "
            "own (its address is the dashboard's): drop --web"
        )
    target_session_cluster(configuration, jobmanager)
    configuration.set_string("execution.attached", "false" if detached else "true")


def _keep_unless_closed(
    jobs: SubmittedJobs,
    watch: PipeWatch,
    web: bool,
    progress: ConsoleProgress | None = None,
    detached: bool = False,
    announce: FlinkLines | None = None,
) -> Callable[[Any, Callable[[Any], Any]], Any]:
    """The submission observer of `run`: keep each job's client (with --web, say where its dashboard is; on a
    session cluster, show its progress unless detached); refuse new jobs once the output is gone."""

    def observe(pipeline: Any, submit: Callable[[Any], Any]) -> Any:
        if watch.closed:
            raise ClosedPipe()
        client = jobs.add(submit(pipeline))
        if announce is not None and not isinstance(client, RemoteJobClient) and not client.detached:
            announce.submitted(client.get_job_id())  # a session cluster's and a detached Ray job's executor says it
        if progress is not None and isinstance(client, RemoteJobClient):
            client.add_progress_listener(progress)
        endpoint = getattr(client, "web", None)
        if web and endpoint is not None and endpoint.address:
            print(
                f"Dashboard and REST API of job {client.get_job_id()}: {endpoint.address}\n"
                f"  with its access token (to cancel, savepoint or stop from the dashboard): "
                f"{endpoint.address}/#/job/{client.get_job_id()}?token={endpoint.token}",
                file=sys.stderr,
                flush=True,
            )
        return client

    return observe


def _keep_dashboard_until_interrupted(wait: bool) -> None:
    """--web: the jobs have ended, and their dashboards still serve; in a terminal, until the user presses
    Ctrl-C (a run whose input is not a terminal — a script, CI — ends at once). Then they stop."""
    import time

    from fluvial.web.embedded import kept_servers, stop_kept_servers

    try:
        addresses = [endpoint.address for endpoint in kept_servers() if endpoint.address]
        if wait and addresses and sys.stdin is not None and sys.stdin.isatty():
            print(
                f"The jobs have ended; the dashboard stays at {', '.join(addresses)} until you press Ctrl-C.",
                file=sys.stderr,
                flush=True,
            )
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stop_kept_servers()


def _end_quietly(jobs: SubmittedJobs) -> None:
    jobs.cancel_running()
    jobs.wait(CANCEL_WAIT_SECONDS)
    exit_with(ExitCode.PIPE_CLOSED)
