"""Builds the live keyed state backend a job's StateBackend description asks for, for one operator of one
subtask. RocksDB instances get a private working directory, removed again by `dispose()`.

Working directories: per process and job, one directory made by `tempfile.mkdtemp` under the root (a
`db_storage_paths` entry, else the system's temporary directory): mode 0700, a random name nobody can guess or
create first, owned by this user. Each RocksDB instance and its native checkpoints live inside it, so no other
user can read the state, or delete, move or swap another job's databases — which a fixed, shared
`/tmp/fluvial-rocksdb` allowed. RocksDB creates its own files with the process umask; the 0700 directory is what
keeps them private.

Nothing is left behind, however a process ends: a job's directory goes when the TaskManager releases the job
(`release_job_directories`), every directory of a process when it exits (`remove_job_directories`, which
TaskManager processes call before their `os._exit`, and an `atexit` hook for the rest), and a directory whose
process was killed is swept by the next process that makes one under the same root: its name carries its
process's PID and start time (`fluvial-<job>-p<pid>.<start>-<random>`), so a directory whose process is gone —
and only such a one — is known as garbage.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import tempfile
import threading
from typing import Any

from fluvial.common.private_files import make_private_dirs
from fluvial.common.processes import pid_running, process_start_ticks

logger = logging.getLogger(__name__)

_job_directories: dict[tuple[str, str], str] = {}
_lock = threading.Lock()
_OWNED_NAME = re.compile(r"^fluvial-.+-p(\d+)\.(-?\d+)-[^-]+$")


def create_rocksdb_backend(
    description: Any, max_parallelism: int, key_groups: range, task_info: Any, operator_id: str
) -> Any:
    from fluvial.state.rocksdb import RocksDBKeyedStateBackend

    roots = description.get_db_storage_paths() or (tempfile.gettempdir(),)
    root = roots[task_info.subtask_index % len(roots)]
    directory = tempfile.mkdtemp(
        prefix=f"{operator_id}-{task_info.subtask_index}-{task_info.attempt_number}-",
        dir=job_working_directory(root, task_info.job_id),
    )
    return RocksDBKeyedStateBackend(
        max_parallelism,
        key_groups,
        directory,
        incremental=description.is_incremental_checkpointing_enabled(),
        profile=description.get_predefined_options().name,
    )


def job_working_directory(root: str, job_id: str) -> str:
    """This process's private directory for `job_id` under `root` (created on first use, see the module
    docstring). A missing `root` is created 0700."""
    key = (os.path.abspath(root), job_id)
    with _lock:
        directory = _job_directories.get(key)
        if directory is None or not os.path.isdir(directory):
            make_private_dirs(key[0])
            sweep_dead_directories(key[0])
            pid = os.getpid()
            directory = tempfile.mkdtemp(prefix=f"fluvial-{job_id}-p{pid}.{process_start_ticks(pid)}-", dir=key[0])
            _job_directories[key] = directory
            logger.debug("RocksDB working directory of job %s in this process: %s", job_id, directory)
        return directory


def sweep_dead_directories(root: str) -> list[str]:
    """Remove the working directories under `root` whose process is gone (killed: it could not remove them);
    the ones removed."""
    removed: list[str] = []
    me = os.getuid()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _OWNED_NAME.match(entry.name)
        if match is None:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != me:
                continue
        except OSError:
            continue
        pid, started = int(match.group(1)), int(match.group(2))
        if pid_running(pid) and (started < 0 or process_start_ticks(pid) == started):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    if removed:
        logger.info(
            "removed %d RocksDB working director%s left by killed processes under %s",
            len(removed),
            "y" if len(removed) == 1 else "ies",
            root,
        )
    return removed


def release_job_directories(job_id: str) -> None:
    """The job has ended here: remove its working directories of this process, then sweep the roots it used for
    directories of killed processes. A replacement process sweeps when it makes its own directory, but the process
    it replaces may not be gone yet at that moment (its sockets close before it becomes a zombie, and a busy
    machine stretches that), and a process killed last has no replacement; at the job's end it is gone."""
    with _lock:
        keys = [key for key in _job_directories if key[1] == job_id]
        directories = [_job_directories.pop(key) for key in keys]
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
    for root in {root for root, _ in keys}:
        sweep_dead_directories(root)


@atexit.register
def remove_job_directories() -> None:
    """Every working directory of this process (it is about to exit)."""
    with _lock:
        directories = list(_job_directories.values())
        _job_directories.clear()
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
