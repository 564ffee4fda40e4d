"""CheckpointConfig (PyFlink's names and defaults), its frozen settings, and the storage/backend descriptions."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.time import Duration
from fluvial.datastream.checkpoint_config import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointCleanup,
    ExternalizedCheckpointRetention,
)
from fluvial.datastream.checkpoint_storage import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from fluvial.datastream.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    state_backend_from_configuration,
)


def test_defaults_are_flinks():
    config = CheckpointConfig()
    assert not config.is_checkpointing_enabled() and config.get_checkpoint_interval() == -1
    assert config.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    assert config.get_checkpoint_timeout() == 10 * 60 * 1000
    assert config.get_min_pause_between_checkpoints() == 0
    assert config.get_max_concurrent_checkpoints() == 1
    assert config.get_tolerable_checkpoint_failure_number() == 0
    assert config.get_num_retained() == 1
    assert config.get_checkpoint_storage() is None
    assert config.settings().storage == JobManagerCheckpointStorage()


@pytest.mark.parametrize("interval", [1, 5, 9])
def test_an_interval_below_10_ms_is_rejected_naming_value_and_fix(interval):
    with pytest.raises(InvalidJobError) as caught:
        CheckpointConfig().set_checkpoint_interval(interval)
    message = str(caught.value)
    assert f"{interval} ms" in message and "at least 10 ms" in message and "0/-1" in message


@pytest.mark.parametrize("interval", [-2, -1000])
def test_negative_intervals_other_than_minus_one_are_rejected(interval):
    with pytest.raises(InvalidJobError):
        CheckpointConfig().set_checkpoint_interval(interval)


@pytest.mark.parametrize("interval", [0, -1])
def test_zero_or_minus_one_disables_checkpointing(interval):
    config = CheckpointConfig().set_checkpoint_interval(1000).set_checkpoint_interval(interval)
    assert not config.is_checkpointing_enabled() and not config.settings().enabled


def test_an_interval_enables_checkpointing():
    config = CheckpointConfig().set_checkpoint_interval(10)
    assert config.is_checkpointing_enabled() and config.get_checkpoint_interval() == 10
    assert CheckpointConfig().set_checkpoint_interval(Duration.of_seconds(2)).get_checkpoint_interval() == 2000


def test_configuration_keys_seed_the_config():
    configuration = Configuration()
    configuration.set_string("execution.checkpointing.interval", "10 s")
    configuration.set_string("state.checkpoints.dir", "file:///var/checkpoints")
    configuration.set_string("state.checkpoints.num-retained", "3")
    config = CheckpointConfig(configuration)
    assert config.get_checkpoint_interval() == 10_000
    assert config.get_checkpoint_storage() == FileSystemCheckpointStorage("file:///var/checkpoints")
    assert config.get_num_retained() == 3


def test_a_too_short_configured_interval_is_rejected():
    configuration = Configuration().set_string("execution.checkpointing.interval", "5 ms")
    with pytest.raises(InvalidJobError, match="5 ms"):
        CheckpointConfig(configuration)


@pytest.mark.parametrize(
    ("setter", "value", "fragment"),
    [
        ("set_checkpoint_timeout", 5, "timeout 5 ms"),
        ("set_min_pause_between_checkpoints", -1, "minimum pause"),
        ("set_max_concurrent_checkpoints", 0, "concurrent"),
        ("set_tolerable_checkpoint_failure_number", -1, "tolerable"),
        ("set_num_retained", 0, "retained"),
        ("set_max_concurrent_checkpoints", True, "concurrent"),
        ("set_checkpoint_interval", "1000", "milliseconds"),
    ],
)
def test_bad_values_are_rejected_with_a_clear_message(setter, value, fragment):
    with pytest.raises(InvalidJobError, match=fragment):
        getattr(CheckpointConfig(), setter)(value)


def test_setters_chain_and_reach_the_settings():
    settings = (
        CheckpointConfig()
        .set_checkpoint_interval(500)
        .set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
        .set_checkpoint_timeout(60_000)
        .set_min_pause_between_checkpoints(100)
        .set_max_concurrent_checkpoints(2)
        .set_tolerable_checkpoint_failure_number(3)
        .set_num_retained(4)
        .set_checkpoint_storage_dir("/tmp/ckpt")
        .set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
        .settings()
    )
    assert (settings.interval_ms, settings.timeout_ms, settings.min_pause_ms) == (500, 60_000, 100)
    assert (settings.max_concurrent, settings.tolerable_failures, settings.num_retained) == (2, 3, 4)
    assert settings.mode is CheckpointingMode.AT_LEAST_ONCE and not settings.exactly_once
    assert settings.storage == FileSystemCheckpointStorage("/tmp/ckpt")
    assert settings.externalized_retention is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    assert settings.enabled


def test_settings_are_frozen_and_picklable():
    settings = CheckpointConfig().set_checkpoint_interval(1000).settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.interval_ms = 5  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(settings)) == settings


def test_checkpoint_storage_accepts_descriptions_and_paths():
    config = CheckpointConfig()
    config.set_checkpoint_storage(JobManagerCheckpointStorage(max_state_size=1024))
    assert config.get_checkpoint_storage() == JobManagerCheckpointStorage(max_state_size=1024)
    config.set_checkpoint_storage("memory://ckpt")
    assert config.get_checkpoint_storage() == FileSystemCheckpointStorage("memory://ckpt")
    with pytest.raises(InvalidJobError, match="got dict"):
        config.set_checkpoint_storage({"path": "/tmp"})  # type: ignore[arg-type]


def test_unaligned_checkpoints_their_timeout_and_forced_mode_reach_the_settings():
    config = CheckpointConfig()
    assert not config.settings().unaligned
    config.enable_unaligned_checkpoints()
    assert config.is_unaligned_checkpoints_enabled() and config.settings().unaligned
    config.set_aligned_checkpoint_timeout(Duration.of_seconds(3))
    assert config.get_alignment_timeout() == Duration.of_seconds(3)
    assert config.settings().aligned_checkpoint_timeout_ms == 3000
    config.disable_unaligned_checkpoints().set_force_unaligned_checkpoints(True)
    assert config.is_force_unaligned_checkpoints() and config.settings().unaligned
    with pytest.raises(InvalidJobError, match="the aligned checkpoint timeout must be a Duration >= 0"):
        config.set_aligned_checkpoint_timeout(Duration.of_millis(-1))


def test_unaligned_checkpoints_need_exactly_once():
    config = CheckpointConfig().enable_unaligned_checkpoints()
    config.set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
    with pytest.raises(InvalidJobError, match="unaligned checkpoints need CheckpointingMode.EXACTLY_ONCE"):
        config.settings()


def test_unaligned_keys_configure_the_checkpoint_config():
    configuration = Configuration()
    configuration.set_string("execution.checkpointing.unaligned.enabled", "true")
    configuration.set_string("execution.checkpointing.aligned-checkpoint-timeout", "2 s")
    settings = CheckpointConfig(configuration).settings()
    assert settings.unaligned and settings.aligned_checkpoint_timeout_ms == 2000
    legacy = Configuration().set_string("execution.checkpointing.unaligned", "true")
    assert CheckpointConfig(legacy).settings().unaligned


def test_externalized_retention_and_its_1x_names():
    config = CheckpointConfig()
    assert not config.is_externalized_checkpoints_enabled()
    assert config.get_externalized_checkpoint_cleanup() is None
    config.enable_externalized_checkpoints(ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION)
    assert config.is_externalized_checkpoints_enabled()
    assert config.get_externalized_checkpoint_retention() is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    with pytest.raises(InvalidJobError, match="ExternalizedCheckpointRetention"):
        config.set_externalized_checkpoint_retention("RETAIN")  # type: ignore[arg-type]


@pytest.mark.parametrize("setter", ["set_externalized_checkpoint_retention", "enable_externalized_checkpoints"])
def test_delete_on_cancellation_is_accepted_and_reaches_the_runtime(setter):
    """Deleting on cancellation is done (tests/integration/test_checkpoint_retention.py)."""
    config = CheckpointConfig()
    getattr(config, setter)(ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION)
    assert config.settings().externalized_retention is ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION


@pytest.mark.parametrize("mode", list(ExternalizedCheckpointRetention))
def test_the_retention_key_sets_the_mode(mode):
    configuration = Configuration()
    configuration.set_string("execution.checkpointing.externalized-checkpoint-retention", mode.name)
    assert CheckpointConfig(configuration).get_externalized_checkpoint_retention() is mode


def test_the_retention_key_refuses_an_unknown_mode():
    configuration = Configuration()
    configuration.set_string("execution.checkpointing.externalized-checkpoint-retention", "KEEP")
    with pytest.raises(ConfigurationError, match="'KEEP'.*retain_on_cancellation"):
        CheckpointConfig(configuration)


def test_fail_on_checkpointing_errors_maps_to_the_tolerance():
    config = CheckpointConfig().set_fail_on_checkpointing_errors(False)
    assert config.get_tolerable_checkpoint_failure_number() == 2**31 - 1
    assert not config.is_fail_on_checkpointing_errors()
    assert config.set_fail_on_checkpointing_errors(True).get_tolerable_checkpoint_failure_number() == 0


def test_checkpointing_mode_must_be_the_enum():
    with pytest.raises(InvalidJobError, match="EXACTLY_ONCE"):
        CheckpointConfig().set_checkpointing_mode("exactly_once")  # type: ignore[arg-type]


# -- storage descriptions ------------------------------------------------------------------------------------------


def test_jobmanager_storage_defaults_to_5_mib():
    storage = JobManagerCheckpointStorage()
    assert storage.get_max_state_size() == 5 * 1024 * 1024 and storage.get_checkpoint_path() is None
    assert JobManagerCheckpointStorage(max_state_size=10).get_max_state_size() == 10


@pytest.mark.parametrize("bad", [0, -5, 1.5, True])
def test_jobmanager_storage_rejects_bad_sizes(bad):
    with pytest.raises(InvalidJobError, match="max_state_size"):
        JobManagerCheckpointStorage(max_state_size=bad)


def test_filesystem_storage_needs_a_path():
    with pytest.raises(InvalidJobError, match="checkpoint_path"):
        FileSystemCheckpointStorage(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidJobError, match="checkpoint_path"):
        FileSystemCheckpointStorage("  ")


def test_filesystem_storage_thresholds():
    storage = FileSystemCheckpointStorage("file:///c")
    assert storage.get_checkpoint_path() == "file:///c"
    assert storage.get_min_file_size_threshold() == 20 * 1024
    assert FileSystemCheckpointStorage("/c", file_state_size_threshold=0).get_min_file_size_threshold() == 0
    with pytest.raises(InvalidJobError, match="between 0 and 1048576"):
        FileSystemCheckpointStorage("/c", file_state_size_threshold=2 * 1024 * 1024)
    assert FileSystemCheckpointStorage("/c", 0, write_buffer_size=8192).get_write_buffer_size() == 8192


def test_storage_descriptions_pickle_to_equal_values():
    for storage in (JobManagerCheckpointStorage("/p", 100), FileSystemCheckpointStorage("memory://x", 10, 4096)):
        assert pickle.loads(pickle.dumps(storage)) == storage


# -- state backend descriptions ------------------------------------------------------------------------------------


def test_rocksdb_backend_is_incremental_by_default():
    assert EmbeddedRocksDBStateBackend().is_incremental_checkpointing_enabled()
    assert not EmbeddedRocksDBStateBackend(False).is_incremental_checkpointing_enabled()
    with pytest.raises(InvalidJobError, match="True or False"):
        EmbeddedRocksDBStateBackend("yes")  # type: ignore[arg-type]


def test_rocksdb_backend_pickles_with_its_settings():
    backend = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=False)
    backend.set_db_storage_paths("/tmp/a", "file:///tmp/b")
    backend.set_number_of_transfer_threads(2)
    copy = pickle.loads(pickle.dumps(backend))
    assert copy == backend and copy.get_db_storage_paths() == ["/tmp/a", "/tmp/b"]
    assert copy.get_number_of_transfer_threads() == 2 and not copy.is_incremental_checkpointing_enabled()
    assert copy != EmbeddedRocksDBStateBackend(False)


def test_rocksdb_needs_local_paths_and_some_threads():
    backend = EmbeddedRocksDBStateBackend()
    with pytest.raises(InvalidJobError, match="not local"):
        backend.set_db_storage_path("s3://bucket/rocks")
    with pytest.raises(InvalidJobError, match=">= 1"):
        backend.set_number_of_transfer_threads(0)


def test_hashmap_backend_is_a_plain_value():
    assert pickle.loads(pickle.dumps(HashMapStateBackend())) == HashMapStateBackend()
    assert HashMapStateBackend() != EmbeddedRocksDBStateBackend()


def test_backend_from_configuration():
    assert state_backend_from_configuration(Configuration()) == HashMapStateBackend()
    rocks = Configuration().set_string("state.backend.type", "rocksdb")
    assert isinstance(state_backend_from_configuration(rocks), EmbeddedRocksDBStateBackend)


def test_checkpointing_keys_of_the_configuration_reach_the_checkpoint_config():
    from fluvial.common import Configuration
    from fluvial.datastream.checkpoint_config import CheckpointConfig, CheckpointingMode

    configuration = (
        Configuration()
        .set_string("execution.checkpointing.interval", "2 s")
        .set_string("execution.checkpointing.mode", "AT_LEAST_ONCE")
        .set_string("execution.checkpointing.timeout", "30 s")
        .set_string("execution.checkpointing.min-pause", "500 ms")
        .set_string("execution.checkpointing.max-concurrent-checkpoints", "2")
        .set_string("execution.checkpointing.tolerable-failed-checkpoints", "3")
    )
    config = CheckpointConfig(configuration)
    assert config.get_checkpoint_interval() == 2000
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert config.get_checkpoint_timeout() == 30_000
    assert config.get_min_pause_between_checkpoints() == 500
    assert config.get_max_concurrent_checkpoints() == 2
    assert config.get_tolerable_checkpoint_failure_number() == 3
