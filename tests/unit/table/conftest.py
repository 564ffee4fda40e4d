"""Fixtures the table operators' harness tests share."""

from __future__ import annotations

import pytest

from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend


@pytest.fixture(params=["heap", "rocksdb"])
def backend(request, tmp_path):
    """Each state backend in turn: None (the heap's, the harness's default) and RocksDB in a temporary directory."""
    if request.param == "heap":
        return None
    rocksdb = EmbeddedRocksDBStateBackend()
    rocksdb.set_db_storage_paths(str(tmp_path / "rocksdb"))
    return rocksdb
