"""DetachedJobClient without a Ray connection: its calls fail with the reason, and never reach Ray (a Ray call
after ray.shutdown() would make Ray start a local instance of its own)."""

from __future__ import annotations

import pytest

from fluvial.cluster.ray import connection
from fluvial.cluster.ray.connection import RayDisconnected
from fluvial.cluster.ray.detached import DetachedJobClient

pytestmark = pytest.mark.timeout(30)


class NeverCalled:
    def __getattr__(self, name):
        raise AssertionError(f"the actor's {name} was called without a Ray connection")


def test_calls_without_a_ray_connection_fail_naming_the_job_and_the_way_back(monkeypatch):
    monkeypatch.setattr(connection, "ray_connected", lambda: False)
    client = DetachedJobClient(NeverCalled(), "a" * 32)
    for future in (client.get_job_status(), client.cancel(), client.get_job_execution_result()):
        error = future.exception(timeout=10)
        assert isinstance(error, RayDisconnected), error
        assert "a" * 32 in str(error) and "DetachedJobClient.of(job_id)" in str(error)
