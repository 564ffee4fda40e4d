"""`fluvial run [OPTIONS] JOB [ARGS]...`: run a job file on the embedded cluster (or on Ray, `--target ray`), as
`flink run` does a program.

Options (Flink's) come before JOB; everything after JOB is the job's own sys.argv[1:], options included, so
`fluvial run job.py -p 4` hands `-p 4` to the job. The run fails with exit code 2 when the file never submits a
job, 1 when a job or the file fails (the message and the user's frames on stderr), 130 on Ctrl-C, and 141 — with
nothing printed — when the reader of its output goes away (`fluvial run job.py | head`). On Ctrl-C and on a
closed pipe, the jobs still running are cancelled before fluvial exits. With `-d` (`execution.attached: false`,
on Ray) each job is submitted and left running: its id is printed, and it is never cancelled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import typer

from fluvial.cli.closed_pipe import ClosedPipe, PipeWatch
from fluvial.cli.console import ExitCode, VerboseOption, exit_with, verbose_logging
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
from fluvial.common.configuration import Configuration

CANCEL_WAIT_SECONDS = 10.0
"""How long `run` waits for cancelled jobs to end before it exits anyway."""


def run(
    job: JobArgument,
    args: JobArguments = None,
    parallelism: ParallelismOption = None,
    properties: PropertyOption = None,
    savepoint: SavepointOption = None,
    allow_non_restored_state: AllowNonRestoredOption = False,
    target: TargetOption = None,
    detached: DetachedOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Run JOB as `__main__` on the embedded cluster (or on Ray: --target ray). Options go before JOB; everything
    after JOB becomes the job's sys.argv[1:]."""
    require_job_file(job)
    options = LaunchOptions(parallelism, tuple(properties or ()), savepoint, allow_non_restored_state, target,
                            detached)
    configuration = launch_configuration(options)
    jobs = SubmittedJobs()
    with PipeWatch(on_close=jobs.cancel_running) as watch, verbose_logging(verbose):
        result = _run_watched(job, list(args or ()), configuration, _keep_unless_closed(jobs, watch))
        if watch.check_now():
            _end_quietly(jobs)
    if result.outcome is ScriptOutcome.INTERRUPTED:
        jobs.cancel_running()
        jobs.wait(CANCEL_WAIT_SECONDS)
    for job_id in jobs.detached_job_ids():
        typer.echo(f"Job has been submitted with JobID {job_id}")  # Flink's line; the job runs on
    report(result, verbose)
    if not jobs:
        fail_no_job(job)


def _run_watched(job: Path, args: list[str], configuration: Configuration, observer: Callable[..., Any]) -> ScriptResult:
    try:
        with launched_with(configuration), observed_submissions(observer):
            return execute_job_file(job, args)
    except ClosedPipe:  # the job file wrote after the pipe closed: it ends here, as SIGPIPE would end it
        return ScriptResult(ScriptOutcome.COMPLETED)


def _keep_unless_closed(jobs: SubmittedJobs, watch: PipeWatch) -> Callable[[Any, Callable[[Any], Any]], Any]:
    """The submission observer of `run`: keep each job's client; refuse new jobs once the output is gone."""

    def observe(pipeline: Any, submit: Callable[[Any], Any]) -> Any:
        if watch.closed:
            raise ClosedPipe()
        return jobs.add(submit(pipeline))

    return observe


def _end_quietly(jobs: SubmittedJobs) -> None:
    jobs.cancel_running()
    jobs.wait(CANCEL_WAIT_SECONDS)
    exit_with(ExitCode.PIPE_CLOSED)
