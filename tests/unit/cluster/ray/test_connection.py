"""Which cluster a job connects to, with a stand-in for the ray module: ray.address, an initialised ray, auto,
then a local cluster; and one process never talks to two clusters."""

from __future__ import annotations

import types

import pytest

from fluvial.cluster.ray import connection
from fluvial.common.errors import ConfigurationError


class FakeRay:
    def __init__(self, initialised_at: str | None = None, auto_finds: str | None = None) -> None:
        self.address = initialised_at
        self.auto_finds = auto_finds
        self.inits: list[str] = []
        self.util = types.SimpleNamespace(get_node_ip_address=lambda: "127.0.0.2")

    def is_initialized(self) -> bool:
        return self.address is not None

    def init(self, address: str, **options) -> None:
        self.inits.append(address)
        if address == "auto":
            if self.auto_finds is None:
                raise ConnectionError("Could not find any running Ray instance.")
            address = self.auto_finds
        self.address = address

    def get_runtime_context(self):
        return types.SimpleNamespace(gcs_address=self.address)


@pytest.fixture
def fake(monkeypatch):
    def use(ray: FakeRay) -> FakeRay:
        monkeypatch.setattr(connection, "import_ray", lambda: ray)
        started = []

        def start_local(ray_module):
            started.append(True)
            ray_module.init("127.0.0.2:7000")

        monkeypatch.setattr(connection, "_start_local_cluster", start_local)
        ray.started_local = started
        return ray

    monkeypatch.setattr(connection, "_local_cluster", None)
    return use


def test_an_address_is_connected_to(fake):
    ray = fake(FakeRay())
    assert connection.connect("10.1.2.3:6379").node_ip == "127.0.0.2"
    assert ray.inits == ["10.1.2.3:6379"] and not ray.started_local


def test_an_initialised_ray_is_used_as_it_is(fake):
    ray = fake(FakeRay(initialised_at="10.1.2.3:6379"))
    connection.connect(None)
    connection.connect("auto")
    connection.connect("10.1.2.3:6379")
    assert ray.inits == []


def test_another_address_than_the_initialised_cluster_is_refused(fake):
    fake(FakeRay(initialised_at="10.1.2.3:6379"))
    with pytest.raises(
        ConfigurationError,
        match="ray.address is 10.9.9.9:6379, but this process is connected to "
        "the Ray cluster at 10.1.2.3:6379.*ray.shutdown",
    ):
        connection.connect("10.9.9.9:6379")


def test_without_an_address_auto_comes_first_then_a_local_cluster(fake):
    found = fake(FakeRay(auto_finds="10.1.2.3:6379"))
    connection.connect(None)
    assert found.inits == ["auto"] and not found.started_local
    nothing = fake(FakeRay())
    connection.connect(None)
    assert nothing.inits == ["auto", "127.0.0.2:7000"] and nothing.started_local


def test_local_starts_a_cluster_of_its_own_even_when_auto_would_find_one(fake):
    ray = fake(FakeRay(auto_finds="10.1.2.3:6379"))
    connection.connect("local")
    assert ray.inits == ["127.0.0.2:7000"] and ray.started_local


def test_a_detached_job_is_refused_where_only_a_local_instance_of_this_program_would_hold_it(fake, monkeypatch):
    nothing = fake(FakeRay())
    with pytest.raises(
        ConfigurationError,
        match=r"detached job .* Start a Ray cluster first \(ray start --head\).*"
        r"or drop -d",
    ):
        connection.connect(None, detached=True)
    assert nothing.inits == ["auto"] and not nothing.started_local  # nothing was started
    with pytest.raises(ConfigurationError, match="detached job"):
        connection.connect("local", detached=True)
    assert not nothing.started_local
    connection.connect(None)  # attached: the local instance is fine
    monkeypatch.setattr(connection, "_local_cluster", object())  # this program's own, now running
    with pytest.raises(ConfigurationError, match="detached job"):
        connection.connect(None, detached=True)


def test_a_detached_job_goes_to_a_running_cluster(fake):
    ray = fake(FakeRay(auto_finds="10.1.2.3:6379"))
    connection.connect(None, detached=True)
    assert ray.inits == ["auto"] and not ray.started_local
