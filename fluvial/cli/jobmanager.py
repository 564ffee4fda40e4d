"""The JobManager process of a session cluster:

    python -m fluvial.cli.jobmanager [--taskmanagers N] [--slots S] [--port P] [--bind HOST]
                                                 [--foreground] [-D KEY=VALUE ...]

`fluvial cluster start` runs it in the background, in a session of its own, with its stdout and stderr in
`~/.fluvial/log/jobmanager.out` (what the jobs' TaskManagers print arrives there: Flink's `.out` file); its log
goes to `~/.fluvial/log/jobmanager.log` (and to stderr too with `--foreground`). It runs a SessionCluster until
SIGTERM, SIGINT or DELETE /cluster, then shuts it down (`fluvial.cluster.session.cluster`, step 3) and exits: 0 after a clean
shutdown, 1 when the cluster could not start (the reason is the last line of its log and of stderr).

This is the session cluster's composition root: it puts the web layer's front (`fluvial.web.session`) on the
cluster, which sits below the web layer and does not import it.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from fluvial.cluster.session.cluster import (
    DEFAULT_BIND,
    DEFAULT_PORT,
    SessionCluster,
    SessionClusterSpec,
    cluster_configuration,
)
from fluvial.cluster.session.cluster_file import log_directory, private_directory
from fluvial.common.configuration import Configuration
from fluvial.common.errors import FluvialError
from fluvial.common.logs import FORMAT, own_process, rotating_handler
from fluvial.web.session import serve_session

logger = logging.getLogger(__name__)

LOG_FORMAT = FORMAT


def log_file() -> Path:
    return log_directory() / "jobmanager.log"


def out_file() -> Path:
    return log_directory() / "jobmanager.out"


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    import os

    parser = argparse.ArgumentParser(
        prog="python -m fluvial.cli.jobmanager", description="The JobManager of a fluvial session cluster."
    )
    parser.add_argument(
        "--taskmanagers", type=int, default=os.cpu_count() or 1, help="TaskManager processes (default: one per core)"
    )
    parser.add_argument("--slots", type=int, default=1, help="slots per TaskManager (default 1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="REST port (default 8081; 0: any free port)")
    parser.add_argument("--bind", default=DEFAULT_BIND, help="REST bind address (default 127.0.0.1)")
    parser.add_argument("--foreground", action="store_true", help="log to stderr too")
    parser.add_argument("-D", dest="properties", action="append", default=[], metavar="KEY=VALUE")
    return parser.parse_args(argv)


def configure_logging(foreground: bool) -> None:
    own_process()
    private_directory(log_directory())
    handlers: list[logging.Handler] = [rotating_handler(log_file(), Configuration().get("env.log.max"))]
    if foreground:
        handlers.append(logging.StreamHandler(sys.stderr))
    root = logging.getLogger()
    for handler in handlers:
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    root.setLevel(logging.INFO)


def run(spec: SessionClusterSpec, foreground: bool) -> int:
    """Run a session cluster until it is told to stop; the exit code."""
    configure_logging(foreground)
    try:
        cluster = SessionCluster(spec, serve_session).start()
    except (FluvialError, OSError, ValueError) as error:
        logger.error("the session cluster did not start: %s", error)
        print(f"error: the session cluster did not start: {error}", file=sys.stderr, flush=True)
        return 1
    previous = {
        number: signal.signal(number, lambda *_: cluster.request_stop()) for number in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        print(f"Session cluster running: REST API and dashboard at {cluster.rest_url}", flush=True)
        cluster.run_until_stopped()
    finally:
        cluster.shutdown()
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 0


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    try:
        configuration = cluster_configuration(arguments.properties)
    except FluvialError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    spec = SessionClusterSpec(arguments.taskmanagers, arguments.slots, arguments.port, arguments.bind, configuration)
    return run(spec, arguments.foreground)


if __name__ == "__main__":
    sys.exit(main())
