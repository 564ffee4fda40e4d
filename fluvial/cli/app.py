"""The `fluvial` Typer application: the root options and the commands, one module per command group."""

from __future__ import annotations

from typing import Annotated

import typer

import fluvial
from fluvial.cli.cluster import cluster_app
from fluvial.cli.config import config
from fluvial.cli.history import history_server
from fluvial.cli.jobs import cancel, list_jobs, savepoint, stop
from fluvial.cli.plan import plan
from fluvial.cli.python_options import RunCommand
from fluvial.cli.run import run
from fluvial.cli.sql import sql

app = typer.Typer(
    name="fluvial",
    help="fluvial: stream processing with Flink's semantics and PyFlink's DataStream API, in Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Options end at the job file: what follows it is the job's (`fluvial run job.py -p 4` gives the job `-p 4`).
_JOB_FILE_COMMAND = {"allow_interspersed_args": False}


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


app.command(cls=RunCommand, context_settings=_JOB_FILE_COMMAND)(run)
app.command(context_settings=_JOB_FILE_COMMAND)(plan)
app.command("list")(list_jobs)
app.command()(cancel)
app.command()(savepoint)
app.command()(stop)
app.command()(config)
app.command("history-server")(history_server)
app.command()(sql)
app.add_typer(cluster_app)


def main() -> None:
    app()
