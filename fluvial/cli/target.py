"""Which session cluster a command talks to: `-m HOST:PORT` (Flink's `--jobmanager`), or the one recorded in
`~/.fluvial/cluster.json` (`list`, `cancel`, `savepoint`, `stop`; `run` stays embedded without `-m`).

Every cluster command fails the same way: a usage error (exit 2) for a bad address or no cluster to talk to,
and exit 1 with the cluster's message when the cluster is unreachable or refuses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated

import typer

from fluvial.cli.console import ExitCode, error, exit_with, fail_usage
from fluvial.cluster.session.cluster_file import ClusterFileError, cluster_file_path, read_cluster_file
from fluvial.cluster.session.rest_client import ClusterAddress, RestClusterClient
from fluvial.common.configuration import Configuration
from fluvial.common.errors import FluvialError

JobManagerOption = Annotated[
    str | None,
    typer.Option(
        "-m",
        "--jobmanager",
        metavar="HOST:PORT",
        help="The session cluster's REST address (default: the cluster in ~/.fluvial/cluster.json).",
    ),
]


def parse_address(text: str) -> ClusterAddress:
    try:
        return ClusterAddress.parse(text)
    except ValueError as problem:
        fail_usage(f"-m: {problem}")


def target_session_cluster(configuration: Configuration, jobmanager: str) -> ClusterAddress:
    """Set the keys that send every job to the session cluster at `jobmanager` (-m): `execution.target: remote`,
    `rest.address` and `rest.port`, as Flink's `-m` does; a bad address is a usage error."""
    address = parse_address(jobmanager)
    configuration.set_string("execution.target", "remote")
    configuration.set_string("rest.address", address.host)
    configuration.set_string("rest.port", str(address.port))
    return address


def cluster_client(jobmanager: str | None) -> RestClusterClient:
    """The REST client of the cluster `-m` names, else of the recorded one."""
    if jobmanager is not None:
        return RestClusterClient(parse_address(jobmanager))
    path = cluster_file_path()
    try:
        record = read_cluster_file(path)
    except ClusterFileError as problem:
        fail_usage(str(problem))
    if record is None:
        fail_usage(
            f"no session cluster is recorded ({path} does not exist): start one (fluvial cluster start), or "
            "name one with -m HOST:PORT"
        )
    return RestClusterClient(ClusterAddress.parse(record.address))


@contextlib.contextmanager
def reporting_cluster_errors() -> Iterator[None]:
    """A cluster that cannot be reached or refuses: its message on stderr, exit 1."""
    try:
        yield
    except FluvialError as problem:
        error(str(problem))
        exit_with(ExitCode.FAILURE)
