"""Session-scoped real servers for the connector tests (services/): each starts once on 127.0.0.1 with a free
port and a temporary data directory and is stopped by its PID at the end. A missing server or client library
skips the tests that need it, naming what to install — except under CI (`CI=true`), where `.ci/run` installs
them, so a missing one fails instead of hiding the tests. Import the fixtures a test module needs from here."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

from services.mosquitto import mosquitto_binary, start_mosquitto
from services.nats import nats_server_binary, start_nats


def require(available: bool, what: str) -> None:
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is missing on CI, where .ci/run installs it")
    pytest.skip(f"{what} is missing")


def _start(factory, tmp_path_factory, name: str, **options):  # type: ignore[no-untyped-def]
    directory = tmp_path_factory.mktemp(name)
    server = factory(directory, **options)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory):
    require(nats_server_binary() is not None, "nats-server (apt-get install nats-server)")
    require(importlib.util.find_spec("nats") is not None, "the nats-py client (pip install 'fluvial[nats]')")
    yield from _start(start_nats, tmp_path_factory, "nats")


@pytest.fixture(scope="session")
def mosquitto_server(tmp_path_factory):
    require(mosquitto_binary() is not None, "mosquitto (apt-get install mosquitto)")
    require(importlib.util.find_spec("paho") is not None, "the paho-mqtt client (pip install 'fluvial[mqtt]')")
    yield from _start(start_mosquitto, tmp_path_factory, "mosquitto")


def error_chain(error: BaseException | None) -> str:
    """An error and everything it was raised from, one string: what a user reading the job's failure sees."""
    parts = []
    while error is not None:
        parts.append(str(error))
        error = error.__cause__ or error.__context__
    return " | ".join(parts)
