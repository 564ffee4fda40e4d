"""`fluvial list | cancel | savepoint | stop`: the jobs of a session cluster, as `flink list/cancel/savepoint/stop`
manage them — the same options and the same lines on stdout, so scripts written against Flink's CLI read them.

    fluvial list [-m HOST:PORT] [-r] [-s] [-a]          running and scheduled jobs (-a: the ended ones too)
    fluvial cancel [-m HOST:PORT] JOBID
    fluvial savepoint [-m HOST:PORT] JOBID [DIR]        prints the savepoint's path
    fluvial stop [-m HOST:PORT] [-p DIR] [-d] JOBID     stop with a savepoint
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Annotated, Any

import typer

from fluvial.cli.console import fail_usage
from fluvial.cli.target import JobManagerOption, cluster_client, reporting_cluster_errors
from fluvial.cluster.session.rest_client import RestClusterClient
from fluvial.common.job_id import JobID

JobIdArgument = Annotated[str, typer.Argument(metavar="JOBID", help="The job's id (32 hex digits, as `list` shows).")]
SECTION_RULE = "--------------------------------------------------------------"
SCHEDULED_STATES = ("CREATED", "INITIALIZING")
TERMINAL_STATES = ("FINISHED", "CANCELED", "FAILED")


def list_jobs(
    jobmanager: JobManagerOption = None,
    running: Annotated[bool, typer.Option("-r", "--running", help="Show only running and restarting jobs.")] = False,
    scheduled: Annotated[bool, typer.Option("-s", "--scheduled", help="Show only jobs waiting for slots.")] = False,
    all_jobs: Annotated[bool, typer.Option("-a", "--all", help="Show every job, the ended ones too.")] = False,
) -> None:
    """List the jobs of a session cluster: start time, id, name and state (Flink's `list`)."""
    if not (running or scheduled or all_jobs):
        running = scheduled = True
    client = cluster_client(jobmanager)
    print("Waiting for response...")
    with reporting_cluster_errors():
        jobs = client.jobs_overview()
    groups: dict[str, list[dict[str, Any]]] = {"running": [], "scheduled": [], "terminated": []}
    for job in jobs:
        state = job["state"]
        key = "scheduled" if state in SCHEDULED_STATES else "terminated" if state in TERMINAL_STATES else "running"
        groups[key].append(job)
    if running or all_jobs:
        _print_section("Running/Restarting Jobs", groups["running"], "No running jobs.")
    if scheduled or all_jobs:
        _print_section("Scheduled Jobs", groups["scheduled"], "No scheduled jobs.")
    if all_jobs and groups["terminated"]:
        _print_section("Terminated Jobs", groups["terminated"], None)


def _print_section(title: str, jobs: list[dict[str, Any]], when_empty: str | None) -> None:
    if not jobs:
        if when_empty:
            print(when_empty)
        return
    print(f" {title} ".center(len(SECTION_RULE), "-"))
    for job in sorted(jobs, key=lambda j: (j["state"], j["start-time"])):
        started = datetime.datetime.fromtimestamp(job["start-time"] / 1000).strftime("%d.%m.%Y %H:%M:%S")
        print(f"{started} : {job['jid']} : {job['name']} ({job['state']})")
    print(SECTION_RULE)


def cancel(job_id: JobIdArgument, jobmanager: JobManagerOption = None) -> None:
    """Cancel a job of a session cluster (Flink's `cancel`)."""
    job_id = _job_id(job_id)
    client = cluster_client(jobmanager)
    print(f"Cancelling job {job_id}.")
    with reporting_cluster_errors():
        client.cancel(job_id)
    print(f"Cancelled job {job_id}.")


def savepoint(
    job_id: JobIdArgument,
    directory: Annotated[
        str | None, typer.Argument(metavar="[DIR]", help="Where to write it (default: the job's state.savepoints.dir).")
    ] = None,
    jobmanager: JobManagerOption = None,
) -> None:
    """Take a savepoint of a running job and print its path (Flink's `savepoint`)."""
    job_id = _job_id(job_id)
    client = cluster_client(jobmanager)
    print(f"Triggering savepoint for job {job_id}.")
    _wait_for_savepoint(client, job_id, lambda: client.trigger_savepoint(job_id, directory))
    print("You can resume your program from this savepoint with the run command.")


def stop(
    job_id: JobIdArgument,
    savepoint_path: Annotated[
        str | None,
        typer.Option(
            "-p",
            "--savepointPath",
            metavar="DIR",
            help="Where to write the savepoint (default: the job's state.savepoints.dir).",
        ),
    ] = None,
    drain: Annotated[bool, typer.Option("-d", "--drain", help="Emit MAX_WATERMARK before the savepoint.")] = False,
    jobmanager: JobManagerOption = None,
) -> None:
    """Stop a job with a savepoint and print its path (Flink's `stop`)."""
    job_id = _job_id(job_id)
    client = cluster_client(jobmanager)
    print(f'{"Draining" if drain else "Suspending"} job "{job_id}" with a savepoint.')
    _wait_for_savepoint(client, job_id, lambda: client.stop_with_savepoint(job_id, savepoint_path, drain))


def _wait_for_savepoint(client: RestClusterClient, job_id: str, trigger: Callable[[], str]) -> None:
    """Start a savepoint operation (`trigger` returns its id), wait for it and print its path."""
    with reporting_cluster_errors():
        trigger_id = trigger()
        print("Waiting for response...")
        path = client.savepoint_path(job_id, trigger_id)
    print(f"Savepoint completed. Path: {path}")


def _job_id(text: str) -> str:
    try:
        return str(JobID(text))
    except ValueError:
        fail_usage(f"'{text}' is not a job id: a JobID is 32 hex digits, as `fluvial list` shows them")
