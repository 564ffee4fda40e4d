"""Builds the live keyed state backend a job's StateBackend description asks for, for one operator of one
subtask. RocksDB instances get a private working directory, removed again by `dispose()`."""

from __future__ import annotations

import os
import tempfile
from typing import Any


def create_rocksdb_backend(description: Any, max_parallelism: int, key_groups: range, task_info: Any,
                           operator_id: str) -> Any:
    from fluvial.state.rocksdb import RocksDBKeyedStateBackend

    roots = description.get_db_storage_paths() or (tempfile.gettempdir(),)
    root = roots[task_info.subtask_index % len(roots)]
    base = os.path.join(root, "fluvial-rocksdb", task_info.job_id)
    os.makedirs(base, exist_ok=True)
    directory = tempfile.mkdtemp(
        prefix=f"{operator_id}-{task_info.subtask_index}-{task_info.attempt_number}-", dir=base)
    return RocksDBKeyedStateBackend(max_parallelism, key_groups, directory,
                                    incremental=description.is_incremental_checkpointing_enabled())
