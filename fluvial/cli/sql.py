"""`fluvial sql [-f script.sql]`: Flink's SQL client, embedded: statements run in this process against one
table environment (fluvial.table.sql_session has the session's rules). With `-f`, the script's statements
run in order and the client ends when its INSERT jobs have; without it, statements are read from standard
input (`Flink SQL>` prompt on a terminal) until `QUIT;`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from fluvial.cli.console import ExitCode, exit_with, fail_usage


def sql(
    file: Annotated[Path | None, typer.Option("--file", "-f", help="A script of SQL statements to run.")] = None,
    init: Annotated[Path | None, typer.Option("--init", "-i", help="Statements to run first (DDL, SET).")] = None,
    batch: Annotated[bool, typer.Option("--batch", help="Run queries in batch mode.")] = False,
) -> None:
    """Run Flink SQL statements: a script with -f, or interactively."""
    from fluvial.table import EnvironmentSettings, TableEnvironment
    from fluvial.table.sql_session import SqlSession, statements_of

    settings = EnvironmentSettings.in_batch_mode() if batch else EnvironmentSettings.in_streaming_mode()
    session = SqlSession(TableEnvironment.create(settings))
    for path in (init, file):
        if path is not None and not path.is_file():
            fail_usage(f"no SQL script at {path}")
    try:
        if init is not None:
            for statement in statements_of(init.read_text().splitlines(keepends=True)):
                session.execute(statement)
        if file is not None:
            lines = file.read_text().splitlines(keepends=True)
        else:
            lines = _interactive_lines()
        for statement in statements_of(lines):
            if not session.execute(statement):
                break
        session.wait_for_jobs()
    except KeyboardInterrupt:
        exit_with(ExitCode.INTERRUPTED)


def _interactive_lines():
    prompt = sys.stdin.isatty()
    first = True
    while True:
        if prompt:
            sys.stdout.write("Flink SQL> " if first else "> ")
            sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return
        first = line.rstrip().endswith(";")
        yield line
