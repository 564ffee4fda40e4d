"""~/.fluvial/cluster.json: written atomically for its owner only, read back whole, a dead or reused PID never
taken for a cluster process, an unreadable file named with its fix, and only its own JobManager removes it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from fluvial.cluster.session.cluster_file import (
    ClusterFileError,
    ClusterRecord,
    ProcessRecord,
    cluster_file_path,
    read_cluster_file,
    remove_cluster_file,
    write_cluster_file,
)


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def record(jobmanager: int = 0, token: str = "secret") -> ClusterRecord:
    return ClusterRecord("127.0.0.1:8081", "http://127.0.0.1:8081", token, ProcessRecord.of(jobmanager or os.getpid()),
                         (ProcessRecord(12, 34),), "/logs", "2026-01-01T00:00:00+00:00")


def test_the_file_is_its_owners_alone_and_reads_back_whole(home):
    path = write_cluster_file(record())
    assert path == home / ".fluvial" / "cluster.json" == cluster_file_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_cluster_file() == record()
    assert [p.name for p in path.parent.iterdir()] == ["cluster.json"]  # no temporary file left


def test_rewriting_replaces_the_file_at_once(home):
    write_cluster_file(record(token="first"))
    write_cluster_file(record(token="second"))
    assert read_cluster_file().token == "second"
    assert [p.name for p in (home / ".fluvial").iterdir()] == ["cluster.json"]


def test_no_file_is_none_and_a_broken_one_is_named_with_its_fix(home):
    assert read_cluster_file() is None
    cluster_file_path().parent.mkdir()
    cluster_file_path().write_text("{not json")
    with pytest.raises(ClusterFileError, match=r"cluster\.json is not a cluster file .*if no cluster runs, delete it"):
        read_cluster_file()


def test_a_process_is_alive_only_while_that_very_process_runs():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        process = ProcessRecord.of(child.pid)
        assert process.alive()
        assert not ProcessRecord(child.pid, process.start_ticks + 1).alive()  # the PID, reused by another program
    finally:
        child.kill()
        child.wait()
    assert not process.alive()
    assert not process.kill()  # nothing to signal


def test_only_the_jobmanager_that_wrote_it_removes_it():
    write_cluster_file(record())
    assert not remove_cluster_file(os.getpid() + 1)
    assert cluster_file_path().exists()
    assert remove_cluster_file(os.getpid())
    assert not cluster_file_path().exists()
