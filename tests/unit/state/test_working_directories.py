"""RocksDB working directories are private and per job (issue 13, defect 11): no fixed, shared
`/tmp/fluvial-rocksdb` that one user could pre-create to read, break or move another user's job."""

from __future__ import annotations

import os
import stat

import pytest

from fluvial.common.task_info import TaskInfo
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend

pytest.importorskip("rocksdict", reason="rocksdict is not installed: pip install rocksdict==0.3.29")

from fluvial.state.factory import create_rocksdb_backend  # noqa: E402


def backend_for(root, job_id: str, subtask: int = 0):
    description = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    description.set_db_storage_paths(str(root))
    info = TaskInfo(job_id, "task", subtask, 2, 128, 0)
    return create_rocksdb_backend(description, 128, range(0, 64), info, "op")


def test_each_job_works_in_a_private_directory_of_its_own(tmp_path):
    root = tmp_path / "root"
    first, second, other_job = backend_for(root, "job-a"), backend_for(root, "job-a", 1), backend_for(root, "job-b")
    try:
        job_a = os.path.dirname(first.db_path)
        assert os.path.dirname(second.db_path) == job_a != os.path.dirname(other_job.db_path)
        for directory in (root, job_a, os.path.dirname(other_job.db_path)):
            assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory
        assert os.path.basename(job_a).startswith("fluvial-job-a-")
        assert not (root / "fluvial-rocksdb").exists()
        snapshot = first.checkpoint_native(1, f"{first.db_path}.chk-1")  # what a checkpoint does
        assert os.path.dirname(snapshot.directory) == job_a
        snapshot.discard()
    finally:
        for backend in (first, second, other_job):
            backend.dispose()


def test_a_directory_planted_under_the_old_fixed_name_is_not_used(tmp_path):
    planted = tmp_path / "fluvial-rocksdb" / "job-c"
    planted.mkdir(parents=True)
    os.chmod(tmp_path / "fluvial-rocksdb", 0o777)
    backend = backend_for(tmp_path, "job-c")
    try:
        assert not backend.db_path.startswith(str(tmp_path / "fluvial-rocksdb"))
        assert os.listdir(planted) == []
    finally:
        backend.dispose()


def test_a_killed_processes_directories_are_swept_by_the_next_and_nothing_else(tmp_path):
    import subprocess
    import sys

    from fluvial.state.factory import job_working_directory, release_job_directories

    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    killed = root / f"fluvial-job-d-p{dead.pid}.123-abcd1234"  # what a killed process left
    (killed / "db").mkdir(parents=True)
    mine = root / f"fluvial-job-e-p{os.getpid()}.-1-keep1234"  # a live process's (start time unknown)
    mine.mkdir()
    other = root / "not-ours"
    other.mkdir()
    made = job_working_directory(str(root), "job-f")
    assert not killed.exists() and mine.exists() and other.exists()
    assert os.path.basename(made).startswith(f"fluvial-job-f-p{os.getpid()}.")
    release_job_directories("job-f")
    assert not os.path.exists(made)


def test_releasing_a_job_sweeps_what_a_process_killed_after_the_last_sweep_left(tmp_path):
    import subprocess
    import sys

    from fluvial.state.factory import job_working_directory, release_job_directories

    root = tmp_path / "root"
    made = job_working_directory(str(root), "job-g")  # swept the root then: nothing was dead yet
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    killed = root / f"fluvial-job-g-p{dead.pid}.123-abcd1234"  # its process was killed after that sweep
    (killed / "db").mkdir(parents=True)
    release_job_directories("job-g")
    assert not os.path.exists(made) and not killed.exists()
