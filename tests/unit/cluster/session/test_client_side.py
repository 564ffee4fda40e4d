"""The client side of a session cluster, without one: addresses, where the token comes from, a failure read back
from the exception history, the keys of an embedded cluster refused, detached submissions, and the job's own
modules shipped by value with their classes installed where the job runs."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from fluvial.cluster.code_shipping import capture_classes, job_modules, pickled_by_value
from fluvial.cluster.session.cluster_file import ClusterRecord, ProcessRecord, write_cluster_file
from fluvial.cluster.session.remote_executor import check_remote_configuration
from fluvial.cluster.session.remote_job_client import remote_failure
from fluvial.cluster.session.rest_client import ClusterAddress, find_token
from fluvial.common import Configuration
from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.wire import dumps_code
from fluvial.datastream import StreamExecutionEnvironment


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FLUVIAL_TOKEN", raising=False)


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [("localhost:8081", "localhost", 8081), ("http://127.0.0.1:9000/", "127.0.0.1", 9000), ("[::1]:8081", "::1", 8081)],
)
def test_addresses_are_host_and_port(text, host, port):
    assert ClusterAddress.parse(text) == ClusterAddress(host, port)


@pytest.mark.parametrize("text", ["localhost", "localhost:http", ":8081", "host:70000"])
def test_a_bad_address_names_the_form_it_wants(text):
    with pytest.raises(ValueError, match="give HOST:PORT, e.g. localhost:8081"):
        ClusterAddress.parse(text)


def test_localhost_and_loopback_are_one_cluster():
    assert ClusterAddress("localhost", 8081).same_as(ClusterAddress("127.0.0.1", 8081))
    assert not ClusterAddress("localhost", 8081).same_as(ClusterAddress("127.0.0.1", 8082))


def test_the_token_comes_from_the_cluster_file_of_that_cluster_else_from_the_environment(monkeypatch):
    write_cluster_file(ClusterRecord("127.0.0.1:8081", "http://127.0.0.1:8081", "from-file", ProcessRecord(1)))
    assert find_token(ClusterAddress("localhost", 8081)).value == "from-file"
    other = find_token(ClusterAddress("127.0.0.1", 9999))
    assert other.value is None
    assert "records the cluster at 127.0.0.1:8081, not this one" in other.source
    assert "FLUVIAL_TOKEN is not set" in other.source
    monkeypatch.setenv("FLUVIAL_TOKEN", "from-env")
    assert find_token(ClusterAddress("127.0.0.1", 9999)).value == "from-env"


def test_a_failed_job_reads_back_as_an_embedded_one_does():
    history = {
        "exceptionHistory": {
            "entries": [
                {
                    "exceptionName": "ValueError",
                    "message": "bad value 3",
                    "taskName": "boom (1/1)",
                    "operatorName": "boom",
                    "stacktrace": 'Traceback (most recent call last):\n  File "/jobs/j.py", line 5, in boom\nValueError: bad',
                }
            ]
        }
    }
    failure = remote_failure("failing", "ab" * 16, history)
    assert str(failure) == (
        f"Job 'failing' ({'ab' * 16}) failed: operator 'boom' in task boom (1/1) raised ValueError: bad value 3"
    )
    assert failure.__cause__.type_name == "ValueError"
    assert 'File "/jobs/j.py", line 5, in boom' in failure.__cause__.__cause__.text
    empty = remote_failure("failing", "ab" * 16, {"exceptionHistory": {"entries": []}})
    assert "the cluster recorded no exception" in str(empty)


def test_keys_of_an_embedded_cluster_are_refused_for_a_session_cluster():
    configuration = Configuration().set_string("taskmanager.numberOfTaskSlots", "4")
    with pytest.raises(
        ConfigurationError,
        match="'taskmanager.numberOfTaskSlots' configures an embedded cluster.*fluvial cluster start --slots S",
    ):
        check_remote_configuration(configuration)


def test_detached_needs_a_session_cluster_and_collect_needs_attached():
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("execution.attached", "false")
    )
    env.from_collection([1]).print()
    with pytest.raises(
        ConfigurationError, match="execution.attached: false needs a cluster that outlives this program"
    ):
        env.execute()
    remote = Configuration().set_string("execution.target", "remote").set_string("execution.attached", "false")
    with pytest.raises(
        InvalidJobError, match="execute_and_collect brings the records to this program, which a detached"
    ):
        StreamExecutionEnvironment.get_execution_environment(remote).from_collection([1]).execute_and_collect()


def test_the_jobs_own_modules_ship_by_value_and_their_classes_are_installed_where_it_runs(tmp_path, monkeypatch):
    (tmp_path / "shapes_for_shipping.py").write_text(
        textwrap.dedent("""\
        class Square:
            def __init__(self, side):
                self.side = side
        """)
    )
    main = types.ModuleType("__main__")
    main.__file__ = str(tmp_path / "job.py")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.syspath_prepend(str(tmp_path))
    import shapes_for_shipping

    try:
        modules = job_modules()
        assert modules == [shapes_for_shipping]
        with pickled_by_value(modules):
            payload = capture_classes(modules)
            shipped_class = dumps_code(shapes_for_shipping.Square)  # as a job's function carries it
        import cloudpickle

        assert "shapes_for_shipping" not in cloudpickle.list_registry_pickle_by_value()  # only for the dump
    finally:
        sys.modules.pop("shapes_for_shipping", None)
    shipped = tmp_path / "shipped.pickle"
    shipped.write_bytes(pickle.dumps((payload, shipped_class)))
    elsewhere = tmp_path / "elsewhere"  # where the job runs, shapes_for_shipping cannot be imported
    elsewhere.mkdir()
    ran = subprocess.run(
        [sys.executable, "-c", WHERE_THE_JOB_RUNS, str(shipped)],
        cwd=elsewhere,
        text=True,
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["not-importable", "True", "True", "3"]


ROOT = Path(__file__).resolve().parents[4]
WHERE_THE_JOB_RUNS = """\
import pickle, sys
from fluvial.cluster.code_shipping import install_classes
from fluvial.common.wire import loads_code
payload, shipped_class = pickle.load(open(sys.argv[1], "rb"))
try:
    import shapes_for_shipping
except ImportError:
    print("not-importable")
install_classes(payload)
import shapes_for_shipping
cls = loads_code(shipped_class)
print(cls is shapes_for_shipping.Square)  # the class a job's function carries is the installed one
square = pickle.loads(pickle.dumps(cls(3)))  # its records pickle by name here
print(type(square) is cls, square.side)
"""
