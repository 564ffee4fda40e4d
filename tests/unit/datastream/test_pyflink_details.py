"""Details PyFlink's own tests check: the AsyncRetryStrategy factories, StateTtlConfig's falsy periodic
compaction and proto round-trip, and checkpoint paths as Flink's Path prints them."""

from __future__ import annotations

import pickle

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.common.file_paths import local_path, normalise_path
from fluvial.common.time import Duration, Time
from fluvial.datastream.async_retry_strategies import (
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
    NoRetryStrategy,
)
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from fluvial.datastream.functions import AsyncRetryStrategy
from fluvial.datastream.state import StateTtlConfig


def test_async_retry_strategy_factories_build_the_strategies():
    def on_empty(results):
        return not results

    fixed = AsyncRetryStrategy.fixed_delay(3, 100, on_empty, None)
    assert isinstance(fixed, FixedDelayRetryStrategy)
    assert fixed.can_retry(3) and not fixed.can_retry(4) and fixed.get_backoff_time_millis(1) == 100
    assert fixed.get_retry_predicate().result_predicate() is on_empty
    backoff = AsyncRetryStrategy.exponential_backoff(5, 10, 50, 2.0, None, None)
    assert isinstance(backoff, ExponentialBackoffDelayRetryStrategy)
    assert [backoff.get_backoff_time_millis(n) for n in (1, 2, 3, 4)] == [10, 20, 40, 50]
    assert isinstance(AsyncRetryStrategy.no_restart(), NoRetryStrategy)
    with pytest.raises(InvalidJobError, match="max_attempts"):
        AsyncRetryStrategy.fixed_delay(0, 100, None, None)


@pytest.mark.parametrize("arguments", [(), (None,), (0,), (False,), ("",)])
def test_a_falsy_periodic_compaction_time_means_the_30_day_default(arguments):
    config = StateTtlConfig.new_builder(Time.days(1)).cleanup_in_rocksdb_compact_filter(17, *arguments).build()
    strategy = config.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
    assert strategy.get_query_time_after_num_entries() == 17
    assert strategy.get_periodic_compaction_time() == Duration.of_days(30)


@pytest.mark.parametrize("millis", [0, 3_600_000])
def test_an_explicit_periodic_compaction_duration_is_kept_as_given(millis):
    duration = Duration.of_millis(millis)
    config = StateTtlConfig.new_builder(Time.days(1)).cleanup_in_rocksdb_compact_filter(17, duration).build()
    assert (
        config.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy().get_periodic_compaction_time()
        is duration
    )
    with pytest.raises(InvalidJobError, match="periodic_compaction_time"):
        StateTtlConfig.new_builder(Time.days(1)).cleanup_in_rocksdb_compact_filter(17, 5)


def test_the_nested_strategy_class_defaults_as_pyflinks():
    strategy = StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy(17)
    assert strategy.get_periodic_compaction_time() == Duration.of_days(30)


@pytest.mark.parametrize("serializer", ["pickle", "proto"])
@pytest.mark.parametrize("explicit", [False, True])
def test_ttl_config_round_trips(serializer, explicit):
    builder = StateTtlConfig.new_builder(Time.days(1)).update_ttl_on_read_and_write().cleanup_incrementally(7, True)
    if explicit:
        builder.cleanup_in_rocksdb_compact_filter(17, Duration.of_hours(2)).cleanup_full_snapshot()
    config = builder.build()
    if serializer == "pickle":
        restored = pickle.loads(pickle.dumps(config))
    else:
        restored = StateTtlConfig._from_proto(config._to_proto())
    assert restored == config and restored.get_ttl() == Time.days(1)
    strategy = restored.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
    assert strategy.get_query_time_after_num_entries() == (17 if explicit else 1000)


@pytest.mark.parametrize(
    "given, printed, local",
    [
        ("file://var/checkpoints/", "file://var/checkpoints", "/checkpoints"),
        ("file:///var/checkpoints/", "file:///var/checkpoints", "/var/checkpoints"),
        ("file://localhost/tmp/x", "file://localhost/tmp/x", "/tmp/x"),
        ("/tmp//a/b/", "/tmp/a/b", "/tmp/a/b"),
        ("/", "/", "/"),
        ("s3://bucket/dir/", "s3://bucket/dir", "s3://bucket/dir"),
    ],
)
def test_paths_are_normalised_as_flinks_path(given, printed, local):
    assert normalise_path(given) == printed
    assert local_path(printed) == local


def test_checkpoint_storages_print_their_path_as_pyflink():
    assert FileSystemCheckpointStorage("file://var/checkpoints/").get_checkpoint_path() == "file://var/checkpoints"
    assert JobManagerCheckpointStorage("file://var/checkpoints/").get_checkpoint_path() == "file://var/checkpoints"


def test_a_file_uri_authority_is_ignored_where_checkpoints_are_written(tmp_path):
    """Flink's local file system ignores it; fsspec would read the path as relative to the working directory."""
    from fluvial.checkpoint.storage import create_checkpoint_storage

    storage = create_checkpoint_storage(FileSystemCheckpointStorage(f"file://localhost{tmp_path}/"), "job")
    storage.write_state(1, "state", b"x" * 100_000)
    assert list(tmp_path.glob("job/chk-1/*")), list(tmp_path.rglob("*"))


def test_a_checkpoint_named_with_a_file_uri_authority_is_read_from_the_local_path(tmp_path):
    from fluvial.checkpoint.metadata import CheckpointMetadata
    from fluvial.checkpoint.storage import create_checkpoint_storage, read_checkpoint_metadata

    storage = create_checkpoint_storage(FileSystemCheckpointStorage(tmp_path.as_uri()), "job")
    location = storage.write_metadata(3, CheckpointMetadata(3, 1, "job"))
    assert location.startswith("file://")
    with_authority = "file://localhost" + location.removeprefix("file://")
    assert read_checkpoint_metadata(with_authority).checkpoint_id == 3


def test_pyflink_2_method_names_on_configuration_row_and_the_rocksdb_backend():
    from fluvial.common import Configuration, Row
    from fluvial.common.errors import ConfigurationError
    from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend

    config = Configuration.from_dict({"parallelism.default": "3", "my.own.key": "x"})
    assert config.get_integer("parallelism.default", 1) == 3
    target = {"kept": "1"}
    config.add_all_to_dict(target)
    assert target == {"kept": "1", "parallelism.default": "3", "my.own.key": "x"}
    with pytest.raises(ConfigurationError):
        Configuration.from_dict({"pipeline.jars": "a.jar"})  # checked as set_string checks it

    row = Row(name="a", age=1, city="x")
    assert row.get_fields_by_names(["city", "name"]) == ["x", "a"]
    assert row.get_fields_by_names(["name", "age", "city"]) == ["a", 1, "x"]
    assert Row(1, 2).get_fields_by_names(["f0"]) == [1, 2]
    with pytest.raises(KeyError, match="zip"):
        row.get_fields_by_names(["zip"])

    assert EmbeddedRocksDBStateBackend().is_incremental_checkpoints_enabled() is True
    assert EmbeddedRocksDBStateBackend(False).is_incremental_checkpoints_enabled() is False


@pytest.mark.timeout(60)
def test_pyflink_2_method_names_on_streams_windows_and_the_collected_iterator():
    from fluvial.common import Types
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.window import TumblingProcessingTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    stream = env.from_collection([1, 2, 3], type_info=Types.INT())
    assert stream.get_execution_config() is env.get_config()
    windowed = stream.key_by(lambda x: x % 2).window(TumblingProcessingTimeWindows.of(Duration.of_seconds(1)))
    assert windowed.get_execution_environment() is env
    assert windowed.get_input_type() == Types.INT()
    all_windowed = stream.window_all(TumblingProcessingTimeWindows.of(Duration.of_seconds(1)))
    assert all_windowed.get_execution_environment() is env and all_windowed.get_input_type() == Types.INT()

    with stream.map(lambda x: x * 10, output_type=Types.INT()).execute_and_collect() as results:
        assert [results.next(), results.next(), results.next()] == [10, 20, 30]
        with pytest.raises(StopIteration):
            results.next()


def test_a_completable_future_cancels_as_javas_does():
    from fluvial.common.completable_future import CompletableFuture
    from fluvial.common.future import CancelledError

    future: CompletableFuture[int] = CompletableFuture()
    seen = []
    future.add_done_callback(lambda f: seen.append(f.cancelled()))
    assert not future.cancelled()
    assert future.cancel() is True and future.cancelled() and future.done() and seen == [True]
    with pytest.raises(CancelledError):
        future.result(0)
    future.set_result(1)  # the operation finishing afterwards is dropped, not an error
    assert future.cancelled()

    done: CompletableFuture[int] = CompletableFuture()
    done.set_result(7)
    assert done.cancel() is False and not done.cancelled() and done.result(0) == 7


def test_the_execution_config_has_pyflink_2s_methods():
    """Task cancellation is backed by the environment's configuration keys; the JVM serializer switches are
    recorded and change nothing; what fluvial does not do (latency markers, snapshot compression, a required
    uid on every operator) is refused when asked for."""
    from fluvial.common.errors import ConfigurationError
    from fluvial.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    config = env.get_config()
    assert (config.get_task_cancellation_interval(), config.get_task_cancellation_timeout()) == (30_000, 180_000)
    config.set_task_cancellation_interval(1_000).set_task_cancellation_timeout(5_000)
    assert env.get_configuration().get("task.cancellation.timeout") == 5_000
    assert (config.get_task_cancellation_interval(), config.get_task_cancellation_timeout()) == (1_000, 5_000)
    with pytest.raises(ConfigurationError, match="whole number of ms"):
        config.set_task_cancellation_timeout(-1)

    assert not config.is_force_kryo_enabled() and not config.is_force_avro_enabled()
    assert config.enable_force_kryo().is_force_kryo_enabled() and config.enable_force_avro().is_force_avro_enabled()
    assert config.disable_generic_types().has_generic_types_disabled()
    assert config.get_registered_kryo_types() == [] and config.get_registered_pojo_types() == []
    assert config.get_default_kryo_serializer_classes() == {}
    assert config.enable_auto_generated_uids().has_auto_generated_uids_enabled()

    assert config.set_latency_tracking_interval(0).get_latency_tracking_interval() == 0
    with pytest.raises(ConfigurationError, match="no latency markers"):
        config.set_latency_tracking_interval(1_000)
    assert not config.set_use_snapshot_compression(False).is_use_snapshot_compression()
    with pytest.raises(ConfigurationError, match="snapshot compression"):
        config.set_use_snapshot_compression(True)
    with pytest.raises(ConfigurationError, match="uid"):
        config.disable_auto_generated_uids()
