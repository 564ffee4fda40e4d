"""What every command says on the console when it is done: its exit code, and its error lines on stderr."""

from __future__ import annotations

import contextlib
import enum
import logging
import sys
from collections.abc import Iterator
from typing import Annotated, NoReturn

import typer


class ExitCode(enum.IntEnum):
    """The exit codes of `fluvial`; shells and CI scripts branch on them."""

    SUCCESS = 0
    FAILURE = 1  # the job or the job file failed
    USAGE = 2  # bad options, a missing job file, a file that defined no job (click's usage errors are 2 too)
    INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as a shell reports it
    PIPE_CLOSED = 141  # the reader of our output went away: 128 + SIGPIPE, what `set -o pipefail` sees of any tool


def error(message: str) -> None:
    typer.echo(f"error: {message}", err=True)


def echo_err(text: str) -> None:
    typer.echo(text, err=True)


def exit_with(code: ExitCode) -> NoReturn:
    raise typer.Exit(int(code))


def fail_usage(message: str) -> NoReturn:
    error(message)
    exit_with(ExitCode.USAGE)


VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="Show complete tracebacks, fluvial's own frames included, and fluvial's logs."
    ),
]


@contextlib.contextmanager
def verbose_logging(enabled: bool) -> Iterator[None]:
    """With --verbose, fluvial's INFO logs go to stderr while the block runs (without, Python's default: warnings
    and errors only). The handler goes on the `fluvial` logger alone and is removed afterwards, so a job file's
    own logging setup is left as it is."""
    if not enabled:
        yield
        return
    engine_logger = logging.getLogger("fluvial")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved_level = engine_logger.level
    engine_logger.addHandler(handler)
    engine_logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        engine_logger.removeHandler(handler)
        engine_logger.setLevel(saved_level)
