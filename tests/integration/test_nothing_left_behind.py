"""Nothing a job used is left behind when it ends, in every execution mode: RocksDB working directories
(TaskManager processes end with os._exit, which skips atexit hooks), hidden in-progress part files of failed
attempts, and listeners."""

from __future__ import annotations

import os

import pytest

from fluvial.common import Types
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend
from fluvial.testing import environment, wait_until

pytest.importorskip("rocksdict", reason="rocksdict is not installed: pip install rocksdict==0.3.29")

pytestmark = pytest.mark.timeout(60)


def test_rocksdb_working_directories_are_removed_when_the_job_ends(tmp_path, mode):
    root = tmp_path / "rocksdb"
    env = environment(mode)
    env.set_parallelism(2)
    backend = EmbeddedRocksDBStateBackend()
    backend.set_db_storage_paths(str(root))
    env.set_state_backend(backend)
    stream = (env.from_collection(list(range(100)), type_info=Types.INT())
              .key_by(lambda value: value % 5, key_type=Types.INT())
              .reduce(lambda a, b: a + b))
    with stream.execute_and_collect() as results:
        assert len(list(results)) == 100
    assert root.is_dir(), "the job made no RocksDB working directory"
    wait_until(lambda: os.listdir(root) == [], timeout=20, what=f"the working directories under {root} to go")
