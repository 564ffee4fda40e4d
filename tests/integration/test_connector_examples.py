"""The NATS and MQTT examples run as a user runs them after `make services` (here against the test servers,
whose addresses the examples take from the environment) and print the right answer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server_fixtures import mosquitto_server, nats_server  # noqa: F401 - the fixtures

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, **env},
        cwd=EXAMPLES.parent,
    )


@pytest.mark.timeout(120)
def test_the_nats_example_prints_running_totals(nats_server):  # noqa: F811
    done = run_example("nats_order_totals.py", FLUVIAL_NATS_URL=nats_server.extra["url"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert "(ada,35)" in lines and "(bob,20)" in lines and "(cy,40)" in lines


@pytest.mark.timeout(120)
def test_the_mqtt_example_prints_the_warm_readings(mosquitto_server):  # noqa: F811
    done = run_example("mqtt_sensor_alerts.py", FLUVIAL_MQTT_PORT=str(mosquitto_server.port))
    assert done.returncode == 0, done.stderr
    assert "60 readings received" in done.stdout
    assert done.stdout.count("degrees\n") == sum(1 for i in range(30) if 20 + (i * 7) % 11 > 25) * 2
