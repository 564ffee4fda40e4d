"""Fixtures shared across the suite.

`ray_cluster`: one two-node Ray cluster for the whole test session, started on first use (a few seconds) and
stopped at the end by the PIDs of the node processes it started (`LocalRayCluster`: loopback addresses
127.0.0.2 and 127.0.0.3, no cloud probes, Ray's output in its own log). The head has the custom resource
`head`, the second node `node2`. This process is connected to it (`ray.init`), so every job with
`execution.target: ray` runs there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

# fluvial's log files (one per embedded job) go to a directory of this run, removed at its end, and every record
# fluvial logs reaches the root logger (pytest's capture, caplog), as if it propagated; read on `import fluvial`.
_LOG_DIRECTORY = tempfile.mkdtemp(prefix="fluvial-test-logs-")
os.environ.setdefault("FLUVIAL_LOG_DIR", _LOG_DIRECTORY)
os.environ.setdefault("FLUVIAL_LOG_LEVEL", "NOTSET")

# A Ray call after the session's cluster stopped must fail, never make Ray start a local instance of its own
# (processes nobody would stop); read by Ray when it is first imported.
os.environ["RAY_ENABLE_AUTO_CONNECT"] = "0"

import pytest  # noqa: E402 - after the environment Ray reads on import

HEAD, SECOND = "127.0.0.2", "127.0.0.3"
CPUS_PER_NODE = 2


@pytest.fixture(scope="session")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="the Ray tests need the ray package: pip install 'fluvial[ray]'")
    from fluvial.cluster.ray.local_cluster import LocalRayCluster, NodeSpec

    cluster = LocalRayCluster(
        [NodeSpec(HEAD, CPUS_PER_NODE, {"head": 1}), NodeSpec(SECOND, CPUS_PER_NODE, {"node2": 1})]
    ).start()
    try:
        ray.init(address=cluster.address, _node_ip_address=HEAD, logging_level="WARNING")
        deadline = time.monotonic() + 60
        while sum(1 for node in ray.nodes() if node["Alive"]) < 2:
            assert time.monotonic() < deadline, f"the second Ray node did not join; see {cluster.log_path}"
            time.sleep(0.05)
        yield cluster
    finally:
        ray.shutdown()
        cluster.stop()


# Tests that share one session server run on one pytest-xdist worker (`make test` runs two): the server starts
# once. The tests on the session's Ray cluster are also marked `ray_cluster`: `make test` runs them in a second,
# single-process pytest after the others, alone, as they always ran (a Ray driver beside a busy second worker
# once died of SIGSEGV in CI).
_SERVER_GROUPS = {
    "kafka_broker": "kafka",
    "postgres": "postgres",
    "postgres_with_password": "postgres",
}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(session, config, items):
    """The tests on the session's Ray cluster run last, together: the cluster starts once, and no other test runs
    beside its idle processes (a dozen processes and about a gigabyte, which slow a 2-core machine's timing
    tests down). Under xdist, the tests of each session server form one group; the Ray ones are marked too."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for group in sorted({_SERVER_GROUPS[name] for name in fixtures if name in _SERVER_GROUPS}):
            item.add_marker(pytest.mark.xdist_group(group))
        if "ray_cluster" in fixtures:
            item.add_marker(pytest.mark.ray_cluster)
    items.sort(key=lambda item: "ray_cluster" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """One Apache Kafka broker (KRaft, one node) for the session, on a free loopback port, stopped by its PID at
    the end (`services/kafka.py`). Without Java it skips saying how to get it; under CI (CI=true) it fails
    instead, so CI never skips the Kafka tests."""
    from services.kafka import KafkaUnavailable, start_kafka

    try:
        server = start_kafka(tmp_path_factory.mktemp("kafka"))
    except KafkaUnavailable as error:
        if os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(str(error))
    try:
        yield server
    finally:
        server.stop()


def _start_postgres(**options):
    from services.postgres import start_postgres
    from services.server import ServerStartError

    pytest.importorskip("psycopg2", reason="the PostgreSQL tests need psycopg2: pip install 'fluvial[postgres]'")
    try:
        return start_postgres(**options)
    except ServerStartError as error:
        if os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"no PostgreSQL server: {error}")


@pytest.fixture(scope="session")
def postgres():
    """One PostgreSQL server for the session (services/postgres.py: a free loopback port, a temporary data
    directory, wal_level=logical, prepared transactions), stopped by its PID at the end. Without PostgreSQL
    installed the tests that use it skip, saying so — except in CI (CI=true), where .ci/run installs it and a
    missing server is a failure."""
    server = _start_postgres()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def postgres_with_password():
    """A second server whose superuser has the password `right` (md5 over TCP): the wrong-credentials tests."""
    server = _start_postgres(password="right")
    try:
        yield server
    finally:
        server.close()


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_LOG_DIRECTORY, ignore_errors=True)
