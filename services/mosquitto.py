"""An MQTT broker (Debian's `mosquitto`) on 127.0.0.1 with persistence in a temporary directory; for the MQTT
receiver's tests and `make services`.

The configuration lifts two defaults that would quietly lose or slow a persistent session's messages:
`max_queued_messages` (1,000 by default: a broker drops QoS 1/2 messages beyond it while a client is away or
behind) and `max_inflight_messages` (20 by default: the messages a client may hold unacknowledged, which a
receiver that acknowledges only after its write-ahead log holds a batch needs more of)."""

from __future__ import annotations

import os
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

DEFAULT_PORT = 1883  # what `make services` binds when it is free: the examples' default


def mosquitto_binary() -> str | None:
    return server_binary("mosquitto")


def write_config(data_dir: Path, port: int, password_file: Path | None = None) -> Path:
    config = data_dir / "mosquitto.conf"
    lines = [
        f"listener {port} {LOOPBACK}",
        "persistence true",
        f"persistence_location {data_dir}/",
        "max_queued_messages 0",
        "max_inflight_messages 1000",
        "log_dest stdout",
    ]
    if os.geteuid() == 0:
        # started as root, mosquitto would drop to the `mosquitto` user, who cannot enter a temporary directory
        # of root's to write its persistence file or read the password file
        lines.append("user root")
    if password_file is None:
        lines.append("allow_anonymous true")
    else:
        lines += ["allow_anonymous false", f"password_file {password_file}"]
    config.write_text("\n".join(lines) + "\n")
    return config


def start_mosquitto(
    data_dir: Path,
    port: int | None = None,
    *,
    user: str | None = None,
    password: str | None = None,
    timeout: float = 30.0,
) -> RunningServer:
    """Start mosquitto on 127.0.0.1:`port` (a free one by default) and wait until it accepts. `user`/`password`
    make it refuse anonymous clients."""
    binary = mosquitto_binary()
    if binary is None:
        raise ServerStartError("mosquitto is not installed: apt-get install mosquitto")
    data_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    password_file = None
    if user is not None:
        password_file = data_dir / "passwords"
        password_file.write_text(f"{user}:{password or ''}\n")
        password_file.chmod(0o600)
        helper = server_binary("mosquitto_passwd")
        if helper is None:
            raise ServerStartError("mosquitto_passwd is not installed: apt-get install mosquitto")
        import subprocess

        subprocess.run([helper, "-U", str(password_file)], check=True, capture_output=True)
    config = write_config(data_dir, port, password_file)
    server = start_process("mosquitto", [binary, "-c", str(config)], data_dir=data_dir, port=port)
    server.extra["url"] = f"mqtt://{LOOPBACK}:{port}"
    return server.wait_until_ready(timeout)


def serve() -> tuple[str, Callable[[], None]]:
    """For `make services`: a broker (on 1883 when free), the line telling the examples where it is, and how to
    stop it."""
    server, stop = serve_in_temporary_directory("fluvial-mosquitto-", start_mosquitto, DEFAULT_PORT)
    return f"MQTT (mosquitto) on {server.address}: export FLUVIAL_MQTT_PORT={server.port}", stop
