"""python.requirements and python.archives reach the job's TaskManagers: a local wheel installed with pip (no
network: `--no-index --find-links`) is imported by a function running in TaskManager processes (embedded
process mode, and a session cluster's long-lived TaskManagers) and in thread mode, which also reads a file of an
extracted archive by its relative path; a second job with the same requirements does not run pip; a failing
install fails the job before it starts, naming the requirement."""

from __future__ import annotations

import os
import sys
import zipfile

import pytest

from fluvial.cluster import python_environment
from fluvial.cluster.python_environment import PythonEnvironmentError
from fluvial.cluster.session.cluster import SessionCluster, SessionClusterSpec
from fluvial.common import Configuration
from fluvial.common.errors import ConfigurationError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.web.session import serve_session
from tests.python_packages import requirements_with

pytestmark = pytest.mark.timeout(90)


def shout_with_package(value):
    """Runs in a TaskManager: imports the job's requirement and reads its archive by a relative path."""
    import fluvial_e2e_pkg

    with open("words/words.txt") as file:
        suffix = file.read().strip()
    return f"{fluvial_e2e_pkg.shout(value)}{suffix}", os.getpid()


def shout_only(value):
    import fluvial_e2e_pkg

    return fluvial_e2e_pkg.shout(value)


@pytest.fixture
def dependencies(tmp_path):
    requirements, wheels = requirements_with(
        tmp_path, "fluvial_e2e_pkg", "1.0", "def shout(value):\n    return value.upper() + '!'\n"
    )
    archive = tmp_path / "words.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        packed.writestr("words.txt", "~\n")
    return requirements, wheels, archive


def environment(tmp_path, parallelism: int, **keys: str) -> StreamExecutionEnvironment:
    configuration = Configuration().set_string("python.requirements.install-dir", str(tmp_path / "installed"))
    for key, value in keys.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    return env


def count_pip_runs(monkeypatch) -> list[str]:
    runs: list[str] = []
    real = python_environment._pip_install

    def counted(requirements_file, *args):
        runs.append(requirements_file)
        return real(requirements_file, *args)

    monkeypatch.setattr(python_environment, "_pip_install", counted)
    return runs


def test_taskmanager_processes_import_the_requirements_and_read_the_archive_and_pip_runs_once(
    tmp_path, dependencies, monkeypatch
):
    requirements, wheels, archive = dependencies
    runs = count_pip_runs(monkeypatch)
    for _ in range(2):
        env = environment(tmp_path, 2)
        env.set_python_requirements(str(requirements), str(wheels))
        env.add_python_archive(str(archive))  # extracted as "words.zip"; the function reads "words/..."
        env.get_configuration().set_string("python.archives", f"{archive}#words")
        results = list(env.from_collection(["a", "b", "c"]).map(shout_with_package).execute_and_collect())
        assert sorted(value for value, _ in results) == ["A!~", "B!~", "C!~"]
        assert os.getpid() not in {pid for _, pid in results}  # TaskManager processes did the work
    assert runs == [str(requirements)]
    assert "fluvial_e2e_pkg" not in sys.modules  # the client itself never imported it


def test_thread_mode_puts_the_requirements_on_the_path_while_the_job_runs(tmp_path, dependencies):
    requirements, wheels, _ = dependencies
    env = environment(tmp_path, 1, **{"local.taskmanager.mode": "thread"})
    env.set_python_requirements(str(requirements), str(wheels))
    try:
        assert list(env.from_collection(["x"]).map(shout_only).execute_and_collect()) == ["X!"]
    finally:
        sys.modules.pop("fluvial_e2e_pkg", None)
    assert not [entry for entry in sys.path if entry.startswith(str(tmp_path))]


def test_archives_in_thread_mode_are_refused_with_the_way_out(tmp_path, dependencies):
    env = environment(tmp_path, 1, **{"local.taskmanager.mode": "thread"})
    env.add_python_archive(str(dependencies[2]), "words")
    env.from_collection([1]).print()
    with pytest.raises(ConfigurationError, match="python.archives' needs TaskManager processes"):
        env.execute()


def test_a_failing_install_fails_the_job_before_it_starts(tmp_path, dependencies):
    requirements, wheels, _ = dependencies
    requirements.write_text("fluvial-e2e-absent==3.0\n")
    env = environment(tmp_path, 2)
    env.set_python_requirements(str(requirements), str(wheels))
    env.from_collection(["a"]).map(shout_only).print()
    with pytest.raises(PythonEnvironmentError, match=r"failed at 'fluvial-e2e-absent' \(pip exited with \d+\): .*"):
        env.execute()


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the cluster file goes there
    cluster = SessionCluster(SessionClusterSpec(task_managers=2, slots=1, port=0), serve_session)
    try:
        yield cluster.start()
    finally:
        cluster.shutdown()


def test_a_session_clusters_taskmanagers_get_the_jobs_environment(tmp_path, dependencies, session):
    requirements, wheels, archive = dependencies
    env = environment(tmp_path, 2, **{"execution.target": "remote", "rest.port": session.address.rpartition(":")[2]})
    env.set_python_requirements(str(requirements), str(wheels))
    env.add_python_archive(str(archive), "words")
    results = list(env.from_collection(["a", "b"]).map(shout_with_package).execute_and_collect())
    assert sorted(value for value, _ in results) == ["A!~", "B!~"]
    assert {pid for _, pid in results} <= set(session.task_manager_pids)
