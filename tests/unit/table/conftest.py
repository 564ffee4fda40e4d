"""Fixtures of the table runtime's harness tests."""

from __future__ import annotations

import pytest

from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend


@pytest.fixture(params=["heap", "rocksdb"])
def backend(request, tmp_path):
    """Each keyed state backend in turn: None (the default heap backend), then RocksDB in a temporary directory."""
    if request.param == "heap":
        return None
    rocksdb = EmbeddedRocksDBStateBackend()
    rocksdb.set_db_storage_paths(str(tmp_path / "rocksdb"))
    return rocksdb
