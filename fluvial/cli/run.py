"""`fluvial run [OPTIONS] JOB [ARGS]...`: run a job file, as `flink run` does a program — its jobs on the embedded
cluster; with `-m HOST:PORT` on that session cluster (each `execute()` submits its job there and prints Flink's
`Job has been submitted with JobID <id>`; attached, the default, it waits for the job, showing its progress on
stderr, and fails with the job's failure); with `--target ray` on a Ray cluster. Detached (`-d`, with -m or
on Ray) each job is submitted and left running: its id is printed, and it is never cancelled.

Options (Flink's) come before JOB; everything after JOB is the job's own sys.argv[1:], options included, so
`fluvial run job.py -p 4` hands `-p 4` to the job. The run fails with exit code 2 when the file never submits a
job, 1 when a job or the file fails (the message and the user's frames on stderr), 130 on Ctrl-C, and 141 — with
nothing printed — when the reader of its output goes away (`fluvial run job.py | head`). On Ctrl-C and on a
closed pipe, the attached jobs still running are cancelled before fluvial exits (a detached job runs on).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from fluvial.cli.closed_pipe import ClosedPipe, PipeWatch
from fluvial.cli.console import ExitCode, VerboseOption, exit_with, fail_usage, verbose_logging
from fluvial.cli.job_file import (
    JobArgument,
    JobArguments,
    ScriptOutcome,
    ScriptResult,
    SubmittedJobs,
    execute_job_file,
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
from fluvial.cli.target import parse_address
from fluvial.cluster.session.remote_job_client import RemoteJobClient
from fluvial.common.configuration import Configuration

RunJobManagerOption = Annotated[
    str | None,
    typer.Option("-m", "--jobmanager", metavar="HOST:PORT",
                 help="Submit the jobs to the session cluster at this REST address (without -m they run embedded)."),
]
WebOption = Annotated[
    bool,
    typer.Option("--web", help="Serve the REST API and the dashboard while the jobs run (rest.port, default "
                               "8081; -D rest.port=0 takes a free one) and print their address."),
]

CANCEL_WAIT_SECONDS = 10.0
"""How long `run` waits for cancelled jobs to end before it exits anyway."""


def run(
    job: JobArgument,
    args: JobArguments = None,
    parallelism: ParallelismOption = None,
    properties: PropertyOption = None,
    savepoint: SavepointOption = None,
    allow_non_restored_state: AllowNonRestoredOption = False,
    jobmanager: RunJobManagerOption = None,
    target: TargetOption = None,
    detached: DetachedOption = False,
    web: WebOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Run JOB as `__main__`: its jobs on the embedded cluster, with -m on that session cluster, with --target ray
    on Ray. Options go before JOB; everything after JOB becomes the job's sys.argv[1:]."""
    require_job_file(job)
    options = LaunchOptions(parallelism, tuple(properties or ()), savepoint, allow_non_restored_state, target,
                            detached)
    configuration = launch_configuration(options)
    if jobmanager is not None:
        if target is not None and target != "remote":
            fail_usage(f"-m submits to a session cluster, and --target {target} runs the jobs elsewhere: give one")
        _target_session_cluster(configuration, jobmanager, detached, web)
    elif detached and configuration.get("execution.target") != "ray":
        fail_usage("-d (--detached) submits each job and leaves it running, on a session cluster (add -m HOST:PORT; "
                   "`fluvial cluster start` starts one) or on Ray (add --target ray)")
    target = configuration.get("execution.target")
    if configuration.contains_key("rest.address") and target != "remote":
        fail_usage(f"-D rest.address names the session cluster to submit to, and the jobs run on execution.target "
                   f"{target}: give the cluster with -m HOST:PORT")
    if web and not configuration.contains_key("rest.port"):
        configuration.set_string("rest.port", "8081")
    progress = ConsoleProgress() if jobmanager is not None and not detached else None
    jobs = SubmittedJobs()
    with PipeWatch(on_close=jobs.cancel_running) as watch, verbose_logging(verbose):
        observer = _keep_unless_closed(jobs, watch, web, progress, detached)
        result = _run_watched(job, list(args or ()), configuration, observer)
        if watch.check_now():
            _end_quietly(jobs)
    if result.outcome is ScriptOutcome.INTERRUPTED:
        jobs.cancel_running()
        jobs.wait(CANCEL_WAIT_SECONDS)
    report(result, verbose)
    if not jobs:
        fail_no_job(job)


def _run_watched(job: Path, args: list[str], configuration: Configuration, observer: Callable[..., Any]) -> ScriptResult:
    try:
        with launched_with(configuration), observed_submissions(observer):
            return execute_job_file(job, args)
    except ClosedPipe:  # the job file wrote after the pipe closed: it ends here, as SIGPIPE would end it
        return ScriptResult(ScriptOutcome.COMPLETED)


def _target_session_cluster(configuration: Configuration, jobmanager: str, detached: bool, web: bool) -> None:
    """The keys that send every job of the file to the session cluster at `jobmanager` (-m)."""
    if web:
        fail_usage(f"--web serves the dashboard of an embedded job; the session cluster at {jobmanager} serves its "
                   "own (its address is the dashboard's): drop --web")
    address = parse_address(jobmanager)
    configuration.set_string("execution.target", "remote")
    configuration.set_string("rest.address", address.host)
    configuration.set_string("rest.port", str(address.port))
    configuration.set_string("execution.attached", "false" if detached else "true")


def _keep_unless_closed(jobs: SubmittedJobs, watch: PipeWatch, web: bool, progress: ConsoleProgress | None = None,
                        detached: bool = False) -> Callable[[Any, Callable[[Any], Any]], Any]:
    """The submission observer of `run`: keep each job's client (with --web, say where its dashboard is; on a
    session cluster, show its progress unless detached); refuse new jobs once the output is gone."""

    def observe(pipeline: Any, submit: Callable[[Any], Any]) -> Any:
        if watch.closed:
            raise ClosedPipe()
        client = jobs.add(submit(pipeline))
        if progress is not None and isinstance(client, RemoteJobClient):
            client.add_progress_listener(progress)
        endpoint = getattr(client, "web", None)
        if web and endpoint is not None and endpoint.address:
            print(f"Dashboard and REST API of job {client.get_job_id()}: {endpoint.address}", file=sys.stderr,
                  flush=True)
        return client

    return observe


def _end_quietly(jobs: SubmittedJobs) -> None:
    jobs.cancel_running()
    jobs.wait(CANCEL_WAIT_SECONDS)
    exit_with(ExitCode.PIPE_CLOSED)
