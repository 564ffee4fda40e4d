"""`fluvial history-server`: Flink's history server — the dashboard of ended jobs, from the archives their
clusters wrote to `jobmanager.archive.fs.dir` — in this terminal until Ctrl-C."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from fluvial.cli.console import fail_usage
from fluvial.cli.launch import LaunchOptionError, LaunchOptions


def history_server(
    directory: Annotated[
        str | None,
        typer.Option(
            "--dir",
            metavar="DIR[,DIR...]",
            help="Where the archives are (historyserver.archive.fs.dir): the clusters' jobmanager.archive.fs.dir.",
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port", min=0, max=65535, help="The port (historyserver.web.port, default 8082; 0: a free one)."
        ),
    ] = None,
    properties: Annotated[
        list[str] | None,
        typer.Option(
            "-D",
            metavar="KEY=VALUE",
            help="A history server setting, e.g. -D historyserver.archive.fs.refresh-interval=2s.",
        ),
    ] = None,
) -> None:
    """Serve the dashboard of the jobs archived in --dir, until Ctrl-C."""
    from fluvial.web.history_server import HistoryServer, directories_of

    try:
        configuration = LaunchOptions(properties=tuple(properties or ())).to_configuration()
    except LaunchOptionError as problem:
        fail_usage(str(problem))
    if directory is not None:
        configuration.set_string("historyserver.archive.fs.dir", directory)
    if port is not None:
        configuration.set_string("historyserver.web.port", str(port))
    directories = directories_of(configuration.get("historyserver.archive.fs.dir") or "")
    if not directories:
        fail_usage(
            "give the directory of the job archives: --dir DIR (the jobmanager.archive.fs.dir the clusters "
            "archive their ended jobs to)"
        )
    server = HistoryServer(
        directories,
        configuration.get("historyserver.web.address"),
        configuration.get("historyserver.web.port"),
        configuration.get("historyserver.archive.fs.refresh-interval"),
    ).start()
    print(
        f"History server: {server.address} ({len(server.store.overviews())} archived jobs in "
        f"{', '.join(directories)}); Ctrl-C stops it.",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
