"""Builds the live keyed state backend a job's StateBackend description asks for, for one operator of one
subtask. RocksDB instances get a private working directory, removed again by `dispose()`.

Working directories: per process and job, one directory made by `tempfile.mkdtemp` under the root (a
`db_storage_paths` entry, else the system's temporary directory): mode 0700, a random name nobody can guess or
create first, owned by this user. Each RocksDB instance and its native checkpoints live inside it, so no other
user can read the state, or delete, move or swap another job's databases — which a fixed, shared
`/tmp/fluvial-rocksdb` allowed. RocksDB creates its own files with the process umask; the 0700 directory is what
keeps them private. The job directories of a process are removed when it exits.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
from typing import Any

from fluvial.common.private_files import make_private_dirs

logger = logging.getLogger(__name__)

_job_directories: dict[tuple[str, str], str] = {}
_lock = threading.Lock()


def create_rocksdb_backend(description: Any, max_parallelism: int, key_groups: range, task_info: Any,
                           operator_id: str) -> Any:
    from fluvial.state.rocksdb import RocksDBKeyedStateBackend

    roots = description.get_db_storage_paths() or (tempfile.gettempdir(),)
    root = roots[task_info.subtask_index % len(roots)]
    directory = tempfile.mkdtemp(
        prefix=f"{operator_id}-{task_info.subtask_index}-{task_info.attempt_number}-",
        dir=job_working_directory(root, task_info.job_id))
    return RocksDBKeyedStateBackend(max_parallelism, key_groups, directory,
                                    incremental=description.is_incremental_checkpointing_enabled())


def job_working_directory(root: str, job_id: str) -> str:
    """This process's private directory for `job_id` under `root` (created on first use, see the module
    docstring). A missing `root` is created 0700."""
    key = (os.path.abspath(root), job_id)
    with _lock:
        directory = _job_directories.get(key)
        if directory is None or not os.path.isdir(directory):
            make_private_dirs(key[0])
            directory = tempfile.mkdtemp(prefix=f"fluvial-{job_id}-", dir=key[0])
            _job_directories[key] = directory
            logger.debug("RocksDB working directory of job %s in this process: %s", job_id, directory)
        return directory


@atexit.register
def _remove_job_directories() -> None:
    with _lock:
        directories = list(_job_directories.values())
        _job_directories.clear()
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
