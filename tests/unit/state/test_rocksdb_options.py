"""RocksDB option profiles (Flink's PredefinedOptions): set on the description, carried with the job, and really
applied to the subtask's database - read back from the OPTIONS file RocksDB writes beside it."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend, PredefinedOptions
from fluvial.state.rocksdb import RocksDBKeyedStateBackend


def _written_options(db_path: str) -> dict[str, str]:
    newest = sorted(Path(db_path).glob("OPTIONS-*"))[-1]
    return dict(re.findall(r"^\s*([a-z_]+)=(.*)$", newest.read_text(), re.M))


@pytest.mark.parametrize(
    "profile, expected",
    [
        (PredefinedOptions.DEFAULT, {"max_background_jobs": "2", "block_size": "4096", "filter_policy": "nullptr"}),
        (
            PredefinedOptions.SPINNING_DISK_OPTIMIZED,
            {
                "max_background_jobs": "4",
                "max_open_files": "-1",
                "compaction_style": "kCompactionStyleLevel",
                "level_compaction_dynamic_level_bytes": "true",
            },
        ),
        (
            PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM,
            {
                "max_background_jobs": "4",
                "block_size": "131072",
                "filter_policy": "bloomfilter",
                "max_write_buffer_number": "4",
                "min_write_buffer_number_to_merge": "3",
                "target_file_size_base": str(256 << 20),
                "max_bytes_for_level_base": str(1 << 30),
                "write_buffer_size": str(64 << 20),
            },
        ),
        (PredefinedOptions.FLASH_SSD_OPTIMIZED, {"max_background_jobs": "4", "max_open_files": "-1"}),
    ],
)
def test_each_profile_configures_the_database_it_names(tmp_path, profile, expected):
    description = EmbeddedRocksDBStateBackend()
    description.set_predefined_options(profile)
    description = pickle.loads(pickle.dumps(description))  # as it travels to a TaskManager
    assert description.get_predefined_options() is profile
    backend = RocksDBKeyedStateBackend(
        128, range(128), str(tmp_path / "db"), profile=description.get_predefined_options().name
    )
    try:
        written = _written_options(backend.db_path)
    finally:
        backend.dispose()
    assert {name: written.get(name) for name in expected} == expected


def test_profile_round_trip_as_pyflinks_test():
    backend = EmbeddedRocksDBStateBackend()
    assert backend.get_predefined_options() is PredefinedOptions.DEFAULT
    for profile in (
        PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM,
        PredefinedOptions.SPINNING_DISK_OPTIMIZED,
        PredefinedOptions.FLASH_SSD_OPTIMIZED,
        PredefinedOptions.DEFAULT,
    ):
        backend.set_predefined_options(profile)
        assert backend.get_predefined_options() is profile
    with pytest.raises(InvalidJobError, match="PredefinedOptions.SPINNING_DISK_OPTIMIZED"):
        backend.set_predefined_options("SPINNING_DISK_OPTIMIZED")  # type: ignore[arg-type]


def test_a_java_options_factory_is_refused_and_get_options_says_none():
    backend = EmbeddedRocksDBStateBackend()
    assert backend.get_options() is None
    with pytest.raises(InvalidJobError, match="Java RocksDBOptionsFactory.*set_predefined_options"):
        backend.set_options("org.apache.flink.contrib.streaming.state.DefaultConfigurableOptionsFactory")
    assert backend.get_options() is None


def test_storage_paths_are_read_as_flinks_local_file_system_reads_them():
    backend = EmbeddedRocksDBStateBackend()
    backend.set_db_storage_paths("file://var/db_storage_dir1/", "file:///tmp/dir2/", "/tmp/dir3//x/")
    assert backend.get_db_storage_paths() == ["/db_storage_dir1", "/tmp/dir2", "/tmp/dir3/x"]


def test_the_flink_key_chooses_the_profile():
    from fluvial.common.configuration import Configuration
    from fluvial.datastream.state_backend import state_backend_from_configuration

    configuration = Configuration()
    configuration.set_string("state.backend.type", "rocksdb")
    configuration.set_string("state.backend.rocksdb.predefined-options", "SPINNING_DISK_OPTIMIZED_HIGH_MEM")
    backend = state_backend_from_configuration(configuration)
    assert backend.get_predefined_options() is PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM
