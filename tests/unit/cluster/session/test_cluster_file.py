"""~/.fluvial/cluster.json: written atomically for its owner only, read back whole, a dead or reused PID never
taken for a cluster process, an unreadable file named with its fix, and only its own JobManager removes it."""

from __future__ import annotations

import os
import re
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
    return ClusterRecord(
        "127.0.0.1:8081",
        "http://127.0.0.1:8081",
        token,
        ProcessRecord.of(jobmanager or os.getpid()),
        (ProcessRecord(12, 34),),
        "/logs",
        "2026-01-01T00:00:00+00:00",
    )


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
    cluster_file_path().parent.mkdir(mode=0o700)
    cluster_file_path().write_text("{not json")
    cluster_file_path().chmod(0o600)
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
    assert not process.kill("any")  # nothing to signal


def test_a_process_is_the_clusters_only_if_it_started_with_the_clusters_id():
    env = {**os.environ, "FLUVIAL_CLUSTER_ID": "ours"}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        ours, theirs = ProcessRecord.of(child.pid), ProcessRecord.of(stranger.pid)
        assert ours.belongs_to("ours") and not ours.belongs_to("other") and not ours.belongs_to("")
        assert not theirs.belongs_to("ours") and not theirs.kill("ours")
        assert not ProcessRecord(child.pid, -1).belongs_to("ours")  # a PID alone proves nothing
        assert ours.kill("ours")
        assert child.wait(timeout=10) == -9
        assert stranger.poll() is None
    finally:
        for process in (child, stranger):
            process.kill()
            process.wait()


@pytest.mark.parametrize(
    ("file_mode", "directory_mode", "says"),
    [
        (0o666, 0o700, "is writable by group and others"),
        (0o644, 0o700, "can be read by other users (mode 0644)"),
        (0o600, 0o777, "is writable by group and others (mode 0777)"),
        (0o600, 0o770, "is writable by its group"),
    ],
)
def test_a_file_another_user_could_have_written_or_read_is_refused(home, file_mode, directory_mode, says):
    path = write_cluster_file(record())
    path.chmod(file_mode)
    path.parent.chmod(directory_mode)
    with pytest.raises(ClusterFileError, match=rf"refusing to use .*cluster\.json: .*{re.escape(says)}.*chmod 600"):
        read_cluster_file()
    if directory_mode & 0o022:
        with pytest.raises(ClusterFileError, match="refusing to write the cluster's token"):
            write_cluster_file(record())


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root (CI runs as root)")
def test_a_file_owned_by_another_user_is_refused(home):
    path = write_cluster_file(record())
    os.chown(path, 65534, 65534)
    with pytest.raises(ClusterFileError, match="is owned by another user"):
        read_cluster_file()


def test_the_fluvial_directory_is_private_even_when_its_log_directory_is_made_first(home):
    from fluvial.cluster.session.cluster_file import log_directory, private_directory

    private_directory(log_directory())
    assert stat.S_IMODE((home / ".fluvial").stat().st_mode) == 0o700


def test_only_the_jobmanager_that_wrote_it_removes_it():
    write_cluster_file(record())
    assert not remove_cluster_file(os.getpid() + 1)
    assert cluster_file_path().exists()
    assert remove_cluster_file(os.getpid())
    assert not cluster_file_path().exists()
