"""A NATS server with JetStream (Debian's `nats-server`, or `nats-server` on PATH) on 127.0.0.1, its store in a
temporary directory; for the NATS connector's tests and `make services`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from services.server import (
    LOOPBACK,
    RunningServer,
    ServerStartError,
    free_port,
    serve_in_temporary_directory,
    server_binary,
    start_process,
)

DEFAULT_PORT = 4222  # what `make services` binds when it is free: the examples' default


def nats_server_binary() -> str | None:
    """The nats-server executable: on PATH, else Debian's /usr/sbin (not on a non-root user's PATH)."""
    return server_binary("nats-server")


def start_nats(
    data_dir: Path,
    port: int | None = None,
    *,
    user: str | None = None,
    password: str | None = None,
    timeout: float = 30.0,
) -> RunningServer:
    """Start nats-server with JetStream on 127.0.0.1:`port` (a free one by default) and wait until it accepts.
    `user`/`password` make it require them. `server.extra["url"]` is the client URL."""
    binary = nats_server_binary()
    if binary is None:
        raise ServerStartError("nats-server is not installed: apt-get install nats-server")
    port = port or free_port()
    store = data_dir / "jetstream"
    argv = [binary, "-a", LOOPBACK, "-p", str(port), "-js", "-sd", str(store)]
    if user is not None:
        argv += ["--user", user, "--pass", password or ""]
    server = start_process("nats-server", argv, data_dir=data_dir, port=port)
    server.extra["url"] = f"nats://{LOOPBACK}:{port}"
    return server.wait_until_ready(timeout)


def serve() -> tuple[str, Callable[[], None]]:
    """For `make services`: a server (on 4222 when free), the line telling the examples where it is, and how to
    stop it."""
    server, stop = serve_in_temporary_directory("fluvial-nats-", start_nats, DEFAULT_PORT)
    return f"NATS with JetStream on {server.address}: export FLUVIAL_NATS_URL={server.extra['url']}", stop
