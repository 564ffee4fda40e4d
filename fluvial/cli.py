"""The `fluvial` command line: run a job file, or show the plan it would run.

A job file is an ordinary PyFlink-style program: it builds a pipeline and calls `env.execute()` (or
`execute_async()` / `execute_and_collect()`). `fluvial run` executes it as `__main__`, exactly as
`python JOB.py` would, but tells the user when the file never submitted a job and turns a job failure into a
short report and exit code 1. `fluvial plan` executes the file only up to its first submission, captures the
StreamGraph there, and renders the JobGraph it compiles to — nothing runs.

Exit codes: 0 success; 1 the job or the script failed; 2 usage errors — a missing job file, or a file that
defined no job.
"""

from __future__ import annotations

import contextlib
import enum
import os
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any

import typer

import fluvial

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="fluvial",
    help="fluvial: stream processing with Flink's semantics and PyFlink's DataStream API, in Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class PlanFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    DOT = "dot"
    FLINK = "flink"  # Flink's execution-plan JSON of the StreamGraph, for Flink's plan visualizer


JobArgument = Annotated[Path, typer.Argument(help="The job file: a Python program that calls env.execute().")]


class _PlanCaptured(BaseException):
    """Raised at the job's first submission to stop the script once its plan is known.

    A BaseException, so a job file's own `except Exception:` cannot swallow it and run on.
    """

    def __init__(self, stream_graph: Any) -> None:
        super().__init__("plan captured")
        self.stream_graph = stream_graph


# -- commands -----------------------------------------------------------------------------------------------------


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"fluvial {fluvial.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version and exit."),
    ] = False,
) -> None:
    """fluvial: stream processing with Flink's semantics and PyFlink's DataStream API, in Python."""


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(ctx: typer.Context, job: JobArgument) -> None:
    """Run JOB as `__main__`; arguments after JOB become its sys.argv[1:] (use `--` before job options that
    fluvial would otherwise read, such as --help)."""
    _require_job_file(job)
    submissions = 0

    def count(submit: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        nonlocal submissions
        submissions += 1
        return submit(*args, **kwargs)

    with _observed_submissions(count):
        _run_script(job, list(ctx.args))
    if submissions == 0:
        _fail_no_job(job)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def plan(
    ctx: typer.Context,
    job: JobArgument,
    format: Annotated[PlanFormat, typer.Option("--format", "-f", help="How to render the plan.")] = PlanFormat.TEXT,
) -> None:
    """Show the JobGraph of JOB's first job — chains, parallelism, slot sharing groups, the rule that broke each
    chain, and the slots it needs — without running it. Arguments after JOB become its sys.argv[1:]."""
    from fluvial.graph.job_graph import build_job_graph
    from fluvial.graph.plan_render import render_dot, render_json, render_text

    _require_job_file(job)

    def capture_submission(submit: Callable[..., Any], pipeline: Any) -> Any:
        from fluvial.graph.translate import stream_graph_of

        raise _PlanCaptured(stream_graph_of(pipeline))

    try:
        # The script's own prints go to stderr, so stdout carries the plan alone (`| dot -Tsvg`, `| jq`).
        with _observed_submissions(capture_submission), contextlib.redirect_stdout(sys.stderr):
            _run_script(job, list(ctx.args))
    except _PlanCaptured as captured:
        stream_graph = captured.stream_graph
    else:
        _fail_no_job(job)

    if format is PlanFormat.FLINK:
        typer.echo(stream_graph.to_execution_plan_json())
        return
    render = {PlanFormat.TEXT: render_text, PlanFormat.JSON: render_json, PlanFormat.DOT: render_dot}[format]
    typer.echo(render(build_job_graph(stream_graph)), nl=False)


# -- running a job file -------------------------------------------------------------------------------------------


def _require_job_file(job: Path) -> None:
    if not job.exists():
        _error(f"job file '{job}' does not exist")
        raise typer.Exit(EXIT_USAGE)
    if not job.is_file():
        _error(f"'{job}' is not a file: give the path of a Python job file")
        raise typer.Exit(EXIT_USAGE)


def _fail_no_job(job: Path) -> None:
    _error(
        f"{job} defined no job: it never called env.execute() (nor execute_async() or execute_and_collect()). "
        "Build a pipeline ending in a sink, e.g. .print(), and call env.execute() at the end of the file."
    )
    raise typer.Exit(EXIT_USAGE)


def _run_script(job: Path, args: list[str]) -> None:
    """Run the file as `python JOB args...` would: as `__main__`, with sys.argv and sys.path[0] set for it.

    A failure is reported here and turns into `typer.Exit`: a JobExecutionException as its message and its
    cause's traceback (the user's code, not the engine's), anything else as the traceback from the job file down.
    """
    from fluvial.common.errors import JobExecutionException

    path = os.path.abspath(job)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(job), *args]
    sys.path.insert(0, os.path.dirname(path))
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            raise typer.Exit(exit_.code if isinstance(exit_.code, int) else _report_exit_message(exit_.code))
    except KeyboardInterrupt:
        _error("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED)
    except JobExecutionException as failure:
        _report_job_failure(failure)
        raise typer.Exit(EXIT_FAILURE)
    except Exception as error:  # noqa: BLE001 - any error of the user's script is reported, not re-raised
        _stderr(_format_from(error, path).rstrip())
        raise typer.Exit(EXIT_FAILURE)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.stdout.flush()


def _report_exit_message(message: object) -> int:
    """`sys.exit("some text")` prints the text and exits 1, as Python does."""
    _error(str(message))
    return EXIT_FAILURE


def _report_job_failure(failure: BaseException) -> None:
    _error(str(failure))
    if failure.__cause__ is not None:
        _stderr("\nCaused by:\n" + _format_user_frames(failure.__cause__).rstrip())


def _format_user_frames(error: BaseException) -> str:
    """The traceback of an exception raised in a task, without the engine's frames: what the user wrote failed,
    and the runtime's mailbox and operator frames above it only hide that. All frames stay if none is the user's."""
    engine_dir = os.path.dirname(os.path.abspath(fluvial.__file__)) + os.sep
    remote = getattr(error.__cause__, "text", None)  # raised in a TaskManager process: its traceback as text
    if remote is not None:
        return _user_frames_of_text(remote, engine_dir)
    report = traceback.TracebackException.from_exception(error)
    user_frames = [frame for frame in report.stack if not os.path.abspath(frame.filename).startswith(engine_dir)]
    if user_frames:
        report.stack = traceback.StackSummary.from_list(user_frames)
    return "".join(report.format())


def _user_frames_of_text(text: str, engine_dir: str) -> str:
    """A formatted traceback without the engine's frames (a frame: its `  File "..."` line and the indented
    lines under it)."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if line.startswith('  File "'):
            path = line[len('  File "'):].split('"', 1)[0]
            skipping = os.path.abspath(path).startswith(engine_dir)
        elif not line.startswith("    "):
            skipping = False
        if not skipping:
            kept.append(line)
    return "".join(kept)


def _format_from(error: BaseException, path: str) -> str:
    """The traceback without the frames of this CLI and runpy: it starts at the job file."""
    tb: TracebackType | None = error.__traceback__
    start = tb
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == path:
            start = tb
            break
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, start))


@contextlib.contextmanager
def _observed_submissions(observer: Callable[..., Any]) -> Iterator[None]:
    """Route every job submission (`execute`, `execute_async`, `execute_and_collect`) through
    `observer(submit, pipeline)` while the block runs, via the environment's `execution_interceptor`."""
    from fluvial.datastream.stream_execution_environment import execution_interceptor

    token = execution_interceptor.set(lambda pipeline, submit: observer(submit, pipeline))
    try:
        yield
    finally:
        execution_interceptor.reset(token)


def _error(message: str) -> None:
    typer.echo(f"error: {message}", err=True)


def _stderr(text: str) -> None:
    typer.echo(text, err=True)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
