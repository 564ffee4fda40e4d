"""`fluvial sql [-m HOST:PORT] [-D KEY=VALUE]... [-i init.sql] [-f script.sql]`: Flink's SQL client.

Statements run against one table environment (fluvial.table.sql_session has the session's rules). Embedded (no
`-m`), its jobs run in this process; with `-m HOST:PORT` (Flink's `--jobmanager`; or `-D execution.target=remote
-D rest.address=HOST -D rest.port=PORT`, or the same keys SET in the session) INSERT INTO and SELECT run as
jobs on that session cluster — on its dashboard and in `fluvial list`, named as Flink names them
(`insert-into_default_catalog.default_database.sink`, `collect`) — while DDL, SET and SHOW stay in the client's
session, and a SELECT's rows come back through the cluster's collect path. The client checks the cluster
answers before it runs anything.

With `-f`, the script's statements run in order and the client stops at the first that fails (exit 1), as
Flink's does; embedded, it ends when its INSERT jobs have, while on a session cluster they run on. Without
`-f`, statements are read from standard input (`Flink SQL>` prompt on a terminal) until `QUIT;`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from fluvial.cli.console import ExitCode, error, exit_with, fail_usage
from fluvial.cli.launch import LaunchOptions, PropertyOption, launch_configuration, launched_with
from fluvial.cli.run import RunJobManagerOption
from fluvial.cli.target import reporting_cluster_errors, target_session_cluster
from fluvial.common.configuration import Configuration

if TYPE_CHECKING:
    from fluvial.table.sql_session import SqlSession


def sql(
    file: Annotated[Path | None, typer.Option("--file", "-f", help="A script of SQL statements to run.")] = None,
    init: Annotated[Path | None, typer.Option("--init", "-i", help="Statements to run first (DDL, SET).")] = None,
    batch: Annotated[bool, typer.Option("--batch", help="Run queries in batch mode.")] = False,
    jobmanager: RunJobManagerOption = None,
    properties: PropertyOption = None,
) -> None:
    """Run Flink SQL statements: a script with -f, or interactively; embedded, or on the session cluster at -m
    HOST:PORT."""
    from fluvial.cli.sql_jobs import ClusterJobStatements
    from fluvial.cluster.session.remote_executor import announce_submissions
    from fluvial.table import EnvironmentSettings, TableEnvironment
    from fluvial.table.sql_session import SqlSession, statements_of

    for path in (init, file):
        if path is not None and not path.is_file():
            fail_usage(f"no SQL script at {path}")
    configuration = launch_configuration(LaunchOptions(properties=tuple(properties or ())))
    if jobmanager is not None:
        target_session_cluster(configuration, jobmanager)
    elif configuration.contains_key("rest.address") and configuration.get_string("execution.target") != "remote":
        fail_usage(
            "-D rest.address names a session cluster, and the statements run embedded: give the cluster with "
            "-m HOST:PORT (or add -D execution.target=remote)"
        )
    _check_cluster(configuration)
    settings = EnvironmentSettings.in_batch_mode() if batch else EnvironmentSettings.in_streaming_mode()
    script_lines = file.read_text().splitlines(keepends=True) if file is not None else None
    with launched_with(configuration):
        t_env = TableEnvironment.create(settings)
    session = SqlSession(
        t_env, interactive=script_lines is None and sys.stdin.isatty(), job_statements=ClusterJobStatements()
    )
    token = announce_submissions.set(False)  # the session prints Flink's SQL client lines about its jobs instead
    try:
        if init is not None:
            for statement in statements_of(init.read_text().splitlines(keepends=True)):
                session.execute(statement)
                if session.failed:
                    _stop_at_failure(session, init)
        for statement in statements_of(script_lines if script_lines is not None else _interactive_lines()):
            if not session.execute(statement):
                break
            if session.failed and file is not None:
                _stop_at_failure(session, file)
        session.failed = False  # from here: whether an embedded INSERT job failed
        session.wait_for_jobs()
    except KeyboardInterrupt:
        exit_with(ExitCode.INTERRUPTED)
    finally:
        announce_submissions.reset(token)
    if session.failed:
        exit_with(ExitCode.FAILURE)


def _check_cluster(configuration: Configuration) -> None:
    """On `execution.target: remote`, the cluster at rest.address:rest.port must answer before any statement
    runs; else the client ends (exit 1) with the address and how to start a cluster."""
    if configuration.get_string("execution.target") != "remote":
        return
    from fluvial.cluster.session.rest_client import ClusterAddress, RestClusterClient

    host = configuration.get_string("rest.address") or "localhost"
    port = configuration.get_string("rest.port") or "8081"
    with reporting_cluster_errors():
        RestClusterClient(ClusterAddress.parse(f"{host}:{port}")).overview()


def _stop_at_failure(session: SqlSession, script: Path) -> NoReturn:
    """`-f`/`-i`: the first failed statement ends the client (exit 1), once its embedded jobs have ended."""
    session.wait_for_jobs()
    error(f"{script}: stopped at the statement that failed (the [ERROR] above); the statements after it did not run")
    exit_with(ExitCode.FAILURE)


def _interactive_lines() -> Iterator[str]:
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
