"""Running a job file as `python JOB.py ARGS...` would, and seeing the jobs it submits.

A job file is an ordinary PyFlink-style program: it builds a pipeline and calls `env.execute()` (or
`execute_async()` / `execute_and_collect()`). It runs as `__main__`, with its own sys.argv and its directory on
sys.path. Every submission it makes passes through the environment's execution interceptor, which the
commands use to count jobs (`run`), keep their JobClients (to cancel them on Ctrl-C or a closed pipe), or stop
at the first one to show its plan (`plan`).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import runpy
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from fluvial.cli.console import ExitCode, echo_err, error, exit_with, fail_usage
from fluvial.cli.failure_report import format_job_failure, format_script_error
from fluvial.common.errors import JobExecutionException

logger = logging.getLogger(__name__)

JobArgument = Annotated[Path, typer.Argument(help="The job file: a Python program that calls env.execute().")]
JobArguments = Annotated[
    list[str] | None,
    typer.Argument(help="Arguments of the job: everything after JOB, options included, becomes its sys.argv[1:]."),
]


class ScriptOutcome(enum.Enum):
    COMPLETED = "completed"  # ran to its end, or sys.exit(0)
    EXITED = "exited"  # sys.exit(code) with a non-zero code or a message
    INTERRUPTED = "interrupted"  # Ctrl-C
    JOB_FAILED = "job failed"  # a job it ran failed: JobExecutionException
    SCRIPT_FAILED = "script failed"  # any other exception


@dataclass(frozen=True, slots=True)
class ScriptResult:
    outcome: ScriptOutcome
    exit_code: object = None  # EXITED: the argument of sys.exit()
    error: BaseException | None = None  # JOB_FAILED, SCRIPT_FAILED


def require_job_file(job: Path) -> None:
    if not job.exists():
        fail_usage(f"job file '{job}' does not exist")
    if not job.is_file():
        fail_usage(f"'{job}' is not a file: give the path of a Python job file")


def fail_no_job(job: Path) -> NoReturn:
    fail_usage(
        f"{job} defined no job: it never called env.execute() (nor execute_async() or execute_and_collect()). "
        "Build a pipeline ending in a sink, e.g. .print(), and call env.execute() at the end of the file."
    )


def execute_job_file(job: Path, args: list[str], path_entries: list[str] | None = None) -> ScriptResult:
    """Run the file as `__main__` with sys.argv = [job, *args], its directory first on sys.path and then
    `path_entries` (-pyfs); restore both afterwards. Exceptions become the result; BaseExceptions other than
    SystemExit and KeyboardInterrupt (a closed pipe, a captured plan) propagate."""
    path = os.path.abspath(job)
    return _execute(
        lambda: runpy.run_path(path, run_name="__main__"),
        str(job),
        args,
        [os.path.dirname(path), *(path_entries or ())],
    )


def execute_job_module(module: str, args: list[str], path_entries: list[str] | None = None) -> ScriptResult:
    """Run `module` as `__main__` (`python -m MODULE`, Flink's -pym), found on `path_entries` (-pyfs) or the
    interpreter's path; sys.argv[0] becomes the module's file. A module that cannot be found is a usage error."""
    import importlib.util

    saved_path = list(sys.path)
    sys.path[:0] = list(path_entries or ())
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    finally:
        sys.path[:] = saved_path
    if found is None:
        fail_usage(
            f"-pym: no module named '{module}' on -pyfs nor on the interpreter's path: add the directory "
            "that holds it with -pyfs DIR"
        )
    return _execute(
        lambda: runpy.run_module(module, run_name="__main__", alter_sys=True), module, args, list(path_entries or ())
    )


def _execute(main: Callable[[], Any], argv0: str, args: list[str], path_entries: list[str]) -> ScriptResult:
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [argv0, *args]
    sys.path[:0] = path_entries
    try:
        main()
    except SystemExit as exit_:
        if exit_.code in (None, 0):
            return ScriptResult(ScriptOutcome.COMPLETED)
        return ScriptResult(ScriptOutcome.EXITED, exit_code=exit_.code)
    except KeyboardInterrupt:
        return ScriptResult(ScriptOutcome.INTERRUPTED)
    except JobExecutionException as failure:
        return ScriptResult(ScriptOutcome.JOB_FAILED, error=failure)
    except Exception as problem:  # noqa: BLE001 - any error of the user's script is reported, not re-raised
        return ScriptResult(ScriptOutcome.SCRIPT_FAILED, error=problem)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.stdout.flush()
    return ScriptResult(ScriptOutcome.COMPLETED)


def report(result: ScriptResult, verbose: bool) -> None:
    """Print what went wrong, if anything, and leave with its exit code; return only on success."""
    outcome = result.outcome
    if outcome is ScriptOutcome.COMPLETED:
        return
    if outcome is ScriptOutcome.EXITED:
        if isinstance(result.exit_code, int):
            raise typer.Exit(result.exit_code)
        error(str(result.exit_code))  # `sys.exit("text")` prints the text and exits 1, as Python does
        exit_with(ExitCode.FAILURE)
    if outcome is ScriptOutcome.INTERRUPTED:
        error("interrupted")
        exit_with(ExitCode.INTERRUPTED)
    failure = result.error
    if isinstance(failure, JobExecutionException):
        echo_err(format_job_failure(failure, verbose))
    elif failure is not None:
        echo_err(format_script_error(failure, verbose))
    exit_with(ExitCode.FAILURE)


class SubmittedJobs:
    """The JobClients of the jobs a job file submitted, so that those still running can be cancelled when the
    user presses Ctrl-C or the reader of the output goes away (a job submitted detached is only counted). Safe to
    call from any thread.

    Once `cancel_running` was called, a job added later is cancelled as it is added: a job's first output can
    close the pipe before `submit` has returned its client, and that job must not be left running. Detached jobs
    (`execution.attached: false`) are never cancelled: they are meant to run on without this process."""

    def __init__(self) -> None:
        self._clients: list[Any] = []
        self._lock = threading.Lock()
        self._cancelling = False

    def add(self, client: Any) -> Any:
        with self._lock:
            self._clients.append(client)
            late = self._cancelling and not client.detached
        if late:
            logger.info("cancelling job %s: it was submitted after the run began to end", client.get_job_id())
            client.cancel()
        return client

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def _running(self) -> list[Any]:
        """The attached jobs still running (a detached job runs on without this process: nothing to cancel)."""
        with self._lock:
            attached = [client for client in self._clients if not client.detached]
        return [client for client in attached if not client.get_job_execution_result().done()]

    def cancel_running(self) -> None:
        with self._lock:
            self._cancelling = True
        for client in self._running():
            logger.info("cancelling job %s", client.get_job_id())
            client.cancel()

    def wait(self, timeout: float) -> None:
        """Wait up to `timeout` seconds in all for the jobs to end; log the ones that did not."""
        deadline = time.monotonic() + timeout
        for client in self._running():
            try:
                client.get_job_execution_result().exception(timeout=max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                logger.warning("job %s has not ended %.0f s after it was cancelled", client.get_job_id(), timeout)


@contextlib.contextmanager
def observed_submissions(observer: Callable[[Any, Callable[[Any], Any]], Any]) -> Iterator[None]:
    """Route every job submission through `observer(pipeline, submit)` while the block runs; `submit` returns
    the job's JobClient, and the observer returns it (or raises to refuse the job)."""
    from fluvial.datastream.stream_execution_environment import execution_interceptor

    token = execution_interceptor.set(observer)
    try:
        yield
    finally:
        execution_interceptor.reset(token)
