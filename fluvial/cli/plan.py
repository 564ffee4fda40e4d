"""`fluvial plan [OPTIONS] JOB [ARGS]...`: the JobGraph a job file would run, without running it.

The file runs only up to its first submission; the StreamGraph is captured there and compiled to the JobGraph,
which is rendered — chains, parallelism, slot sharing groups, the rule that broke each chain, the slots it
needs. The file's own prints go to stderr, so stdout carries the plan alone (`| dot -Tsvg`, `| jq`).
"""

from __future__ import annotations

import contextlib
import enum
import sys
from typing import Annotated, Any

import typer

from fluvial.cli.closed_pipe import ClosedPipe, PipeWatch
from fluvial.cli.console import ExitCode, VerboseOption, exit_with
from fluvial.cli.job_file import (
    JobArgument,
    JobArguments,
    execute_job_file,
    fail_no_job,
    observed_submissions,
    report,
    require_job_file,
)
from fluvial.cli.launch import LaunchOptions, ParallelismOption, PropertyOption, launch_configuration, launched_with
from fluvial.common.configuration import Configuration


class PlanFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    DOT = "dot"
    FLINK = "flink"  # Flink's execution-plan JSON of the StreamGraph, for Flink's plan visualizer


FormatOption = Annotated[PlanFormat, typer.Option("--format", "-f", show_envvar=False, help="How to render the plan.")]


class _PlanCaptured(BaseException):
    """Raised at the job's first submission to stop the script once its plan is known.

    A BaseException, so a job file's own `except Exception:` cannot swallow it and run on.
    """

    def __init__(self, stream_graph: Any) -> None:
        super().__init__("plan captured")
        self.stream_graph = stream_graph


def plan(
    job: JobArgument,
    args: JobArguments = None,
    format: FormatOption = PlanFormat.TEXT,
    parallelism: ParallelismOption = None,
    properties: PropertyOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Show the JobGraph of JOB's first job without running it. Options go before JOB; everything after JOB
    becomes the job's sys.argv[1:]."""
    require_job_file(job)
    configuration = launch_configuration(LaunchOptions(parallelism, tuple(properties or ())))
    with PipeWatch(on_close=lambda: None) as watch:
        try:
            stream_graph = _capture_plan(job, list(args or ()), configuration, verbose)
            typer.echo(render(stream_graph, format), nl=False)
        except ClosedPipe:
            exit_with(ExitCode.PIPE_CLOSED)
        if watch.check_now():
            exit_with(ExitCode.PIPE_CLOSED)


def _capture_plan(job: Any, args: list[str], configuration: Configuration, verbose: bool) -> Any:
    """The StreamGraph of the file's first submission; a file that fails first, or never submits, is reported
    and exits."""

    def capture(pipeline: Any, submit: Any) -> Any:
        from fluvial.graph.translate import stream_graph_of

        raise _PlanCaptured(stream_graph_of(pipeline))

    try:
        with launched_with(configuration), observed_submissions(capture), contextlib.redirect_stdout(sys.stderr):
            result = execute_job_file(job, args)
    except _PlanCaptured as captured:
        return captured.stream_graph
    report(result, verbose)
    fail_no_job(job)


def render(stream_graph: Any, format: PlanFormat) -> str:
    from fluvial.graph.job_graph import build_job_graph
    from fluvial.graph.plan_render import render_dot, render_json, render_text

    if format is PlanFormat.FLINK:
        return stream_graph.to_execution_plan_json() + "\n"
    renderer = {PlanFormat.TEXT: render_text, PlanFormat.JSON: render_json, PlanFormat.DOT: render_dot}[format]
    return renderer(build_job_graph(stream_graph))
