"""The filesystem connector's partitions without a job: paths and their escaping, the partition time extractor,
partition pruning in the planner, option errors, and the partition commit of the sink's writers driven by hand
(prepare at a checkpoint, commit when it completes), so the success file is checked before and after."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from fluvial.common.row import Row
from fluvial.common.task_info import TaskInfo
from fluvial.table import EnvironmentSettings, TableEnvironment, ValidationException
from fluvial.table.connectors.base import ConnectorContext
from fluvial.table.connectors.filesystem import FileSystemFactory
from fluvial.table.connectors.partitions import PartitionLayout, PartitionTimeExtractor, escape, unescape
from fluvial.table.planner.logical import ChangelogMode, Column
from fluvial.table.planner.partition_pruning import prune_partitions
from fluvial.table.types import DataTypes

pytestmark = pytest.mark.timeout(30)

COLUMNS = (
    Column("a", DataTypes.INT()),
    Column("dt", DataTypes.STRING()),
    Column("hr", DataTypes.INT()),
)


class _Capture:
    """Stands for the DataStream a sink factory is given: keeps the sink."""

    def sink_to(self, sink):
        self.sink = sink
        return self

    def name(self, name):
        return self


def sink_of(path, **options):
    context = ConnectorContext(
        "t",
        COLUMNS,
        {"connector": "filesystem", "path": str(path), "format": "csv", **options},
        partition_keys=("dt", "hr"),
    )
    return FileSystemFactory().create_sink(_Capture(), context, ChangelogMode.INSERT_ONLY).sink


def task(subtask: int, parallelism: int = 2) -> TaskInfo:
    return TaskInfo("job", "Sink: t", subtask, parallelism, 128, operator_id="op")


def test_partition_values_escape_and_come_back_typed():
    layout = PartitionLayout(("dt", "hr"), (DataTypes.STRING(), DataTypes.INT()))
    assert escape("a/b=c%d:e") == "a%2Fb%3Dc%25d%3Ae"
    assert unescape(escape("a/b=c%d:e\x01")) == "a/b=c%d:e\x01"
    path = layout.path_of(["2024/01/01", None])
    assert path == "dt=2024%2F01%2F01/hr=__DEFAULT_PARTITION__"
    assert layout.values_of(f"/base/{path}/part-0", "/base") == ("2024/01/01", None)
    with pytest.raises(ValueError, match="not inside the partition directories dt=.../hr=..."):
        layout.values_of("/base/part-0", "/base")
    with pytest.raises(ValueError, match="partition hr=ten of file '/base/dt=x/hr=ten/part-0' is not of type INT"):
        layout.values_of("/base/dt=x/hr=ten/part-0", "/base")


def test_partition_time_extractor_reads_pattern_formatter_and_zone():
    pattern = PartitionTimeExtractor(("dt", "hr"), "$dt $hr:00:00")
    assert pattern.millis("dt=2024-01-02/hr=03") == int(dt.datetime(2024, 1, 2, 3, tzinfo=dt.UTC).timestamp() * 1000)
    first = PartitionTimeExtractor(("day",))
    assert first.millis("day=2024-01-02") == int(dt.datetime(2024, 1, 2, tzinfo=dt.UTC).timestamp() * 1000)
    shanghai = PartitionTimeExtractor(("d",), None, "yyyyMMdd", "Asia/Shanghai")
    assert shanghai.millis("d=20240102") == int(dt.datetime(2024, 1, 1, 16, tzinfo=dt.UTC).timestamp() * 1000)
    with pytest.raises(ValueError, match="timestamp-pattern"):
        pattern.millis("dt=yesterday/hr=3")


def test_where_on_partition_columns_prunes_partitions():
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.execute_sql(
        "CREATE TABLE t (a INT, dt STRING, hr INT, k AS a + 1) PARTITIONED BY (dt, hr) "
        "WITH ('connector' = 'filesystem', 'path' = '/nowhere', 'format' = 'csv')"
    )
    node = t_env.sql_query(
        "SELECT a FROM t WHERE dt = '2024-01-01' AND (hr = 1 OR hr = 2) AND a > 0 AND hr IN (2, 3)"
    )._node.input
    scan = prune_partitions(node)
    assert scan is not None
    assert dict(scan.source.partition_filter) == {"dt": ("2024-01-01",), "hr": (2,)}
    other = t_env.sql_query("SELECT a FROM t WHERE a = 1 OR hr = 2")._node.input
    assert prune_partitions(other) is None


def test_partition_columns_and_bad_options_are_refused_in_one_sentence(tmp_path):
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    with pytest.raises(ValidationException, match="Partition column 'x' not defined in the table schema"):
        t_env.execute_sql("CREATE TABLE t (a INT) PARTITIONED BY (x) WITH ('connector' = 'filesystem')")
    refused = {
        "sink.partition-commit.policy.kind": ("metastore", "needs a Hive metastore, and fluvial has none"),
        "sink.partition-commit.trigger": ("event-time", "use 'process-time' or 'partition-time'"),
        "sink.rolling-policy.file-size": ("big", "is not a memory size"),
        "sink.partition-commit.delay": ("soon", "is not a duration"),
        "partition.time-extractor.kind": ("custom", "a custom extractor is a Java class"),
        "auto-compaction": ("true", "Unsupported options found for 'filesystem': auto-compaction"),
    }
    for key, (value, message) in refused.items():
        with pytest.raises(ValidationException, match=message):
            sink_of(tmp_path, **{key: value})
    context = ConnectorContext("t", COLUMNS[:1], {"path": str(tmp_path), "format": "orc"})
    with pytest.raises(ValidationException, match="available formats: csv, json, avro, parquet"):
        FileSystemFactory().create_sink(_Capture(), context, ChangelogMode.INSERT_ONLY)
    for options, message in (
        ({"format": "avro", "avro.codec": "lzo"}, "Unsupported avro.codec 'lzo'"),
        ({"format": "avro"}, "legacy timestamp mapping has no type for TIMESTAMP_LTZ.3."),
        ({"format": "parquet", "parquet.compression": "LZO2"}, "Unsupported parquet.compression 'LZO2'"),
        ({"format": "csv", "sink.partition-commit.policy.kind": "success-file"}, "is not partitioned"),
    ):
        columns = (*COLUMNS[:1], Column("ltz", DataTypes.TIMESTAMP_LTZ(3)))
        context = ConnectorContext("t", columns, {"path": str(tmp_path), **options})
        with pytest.raises(ValidationException, match=message):
            FileSystemFactory().create_sink(_Capture(), context, ChangelogMode.INSERT_ONLY)


def _success(path, partition="dt=2024-01-01/hr=10", name="_SUCCESS"):
    return os.path.exists(os.path.join(path, partition, name))


def _parts(directory) -> int:
    return sum(1 for n in os.listdir(directory) if n.startswith("part-"))


def test_process_time_commit_waits_for_every_writer_to_commit_the_checkpoint(tmp_path):
    sink = sink_of(tmp_path, **{"sink.partition-commit.policy.kind": "success-file"})
    first, second = sink.create_writer(task(0)), sink.create_writer(task(1))
    first.write_batch([Row(1, "2024-01-01", 10)])
    second.write_batch([Row(2, "2024-01-02", 0)])
    one, two = first.prepare_commit(), second.prepare_commit()  # the checkpoint's barrier
    assert not _success(tmp_path)
    sink.commit(one)  # the checkpoint completes; the first writer's files are visible, the second's not yet
    assert _parts(tmp_path / "dt=2024-01-01" / "hr=10") == 1 and _parts(tmp_path / "dt=2024-01-02" / "hr=0") == 0
    assert not _success(tmp_path)
    sink.commit(two)
    assert _success(tmp_path) and _success(tmp_path, "dt=2024-01-02/hr=0")
    # committed partitions are forgotten by the writer that committed them
    assert [p for p, *_ in second.prepare_commit()[-1].pending] == []
    first.close()
    second.close()


def test_partition_time_commit_waits_for_the_smallest_watermark_and_the_delay(tmp_path):
    sink = sink_of(
        tmp_path,
        **{
            "sink.partition-commit.policy.kind": "success-file",
            "sink.partition-commit.success-file.name": "_DONE",
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
        },
    )
    first, second = sink.create_writer(task(0)), sink.create_writer(task(1))
    ten = int(dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC).timestamp() * 1000)
    first.write_batch([Row(1, "2024-01-01", 10)])
    first.write_watermark(ten + 3_600_000)
    second.write_watermark(ten + 3_599_999)  # one writer is short of the partition's time plus the delay
    sink.commit(first.prepare_commit())
    sink.commit(second.prepare_commit())
    assert not _success(tmp_path, name="_DONE")
    second.write_watermark(ten + 3_600_000)
    sink.commit(second.prepare_commit())
    assert _success(tmp_path, name="_DONE")
    first.close()
    second.close()


def test_every_partition_is_committed_when_the_input_ends_whatever_the_delay(tmp_path):
    sink = sink_of(
        tmp_path, **{"sink.partition-commit.policy.kind": "success-file", "sink.partition-commit.delay": "1 h"}
    )
    first, second = sink.create_writer(task(0)), sink.create_writer(task(1))
    first.write_batch([Row(1, "2024-01-01", 10)])
    sink.commit(first.prepare_commit())
    sink.commit(second.prepare_commit())
    assert not _success(tmp_path)  # an hour's delay
    for writer in (first, second):
        writer.flush(True)
        sink.commit(writer.prepare_commit())
    assert _success(tmp_path)
    assert not os.path.exists(tmp_path / "_partition-commit")
    first.close()
    second.close()


def test_a_restored_writer_keeps_its_uncommitted_partitions(tmp_path):
    sink = sink_of(tmp_path, **{"sink.partition-commit.policy.kind": "success-file"})
    writer = sink.create_writer(task(0, 1))
    writer.write_batch([Row(1, "2024-01-01", 10)])
    committables = writer.prepare_commit()
    state = writer.snapshot_state()
    writer.close()  # fails before the checkpoint completes
    restored = sink.create_writer(task(0, 1), state)
    sink.commit(committables)  # the restored operator commits what the checkpoint recorded
    assert _success(tmp_path)
    restored.close()


class _Env:
    """Stands for the StreamExecutionEnvironment a source factory is given: keeps the source."""

    def from_source(self, source, source_name=None):
        self.source = source
        return source


def test_monitor_interval_makes_an_unbounded_source_and_pruning_lists_only_allowed_partitions(tmp_path):
    from fluvial.datastream.connectors.source import Boundedness

    for partition in ("dt=a/hr=1", "dt=a/hr=2", "dt=b/hr=1"):
        (tmp_path / partition).mkdir(parents=True)
    options = {"connector": "filesystem", "path": str(tmp_path), "format": "json"}
    monitored = ConnectorContext(
        "t", COLUMNS, {**options, "source.monitor-interval": "1 s"}, partition_keys=("dt", "hr")
    )
    source = FileSystemFactory().create_source(_Env(), monitored)
    assert source.get_boundedness() is Boundedness.CONTINUOUS_UNBOUNDED and source.discovery_interval_ms == 1000
    pruned = ConnectorContext(
        "t", COLUMNS, options, partition_keys=("dt", "hr"), partition_filter=(("dt", ("a",)), ("hr", (2, 3)))
    )
    source = FileSystemFactory().create_source(_Env(), pruned)
    assert source.get_boundedness() is Boundedness.BOUNDED
    assert source.paths == (str(tmp_path / "dt=a" / "hr=2"),)


def test_a_partition_two_writers_write_waits_for_the_later_checkpoint_of_both(tmp_path):
    sink = sink_of(tmp_path, **{"sink.partition-commit.policy.kind": "success-file"})
    first, second = sink.create_writer(task(0)), sink.create_writer(task(1))
    first.write_batch([Row(1, "2024-01-01", 10)])
    one, two = first.prepare_commit(), second.prepare_commit()  # checkpoint 1: only the first wrote the partition
    second.write_batch([Row(2, "2024-01-01", 10)])
    three, four = first.prepare_commit(), second.prepare_commit()  # checkpoint 2: the second wrote it too
    sink.commit(two)
    sink.commit(four)  # the second writer's checkpoint 2 is committed, the first's checkpoints not yet
    assert not _success(tmp_path)
    sink.commit(one)  # the first writer's checkpoint 1: the second writer's files of checkpoint 2 are visible,
    assert not _success(tmp_path)  # but the first writer's of checkpoint 2 (if any) may not be
    sink.commit(three)
    assert _success(tmp_path) and _parts(tmp_path / "dt=2024-01-01" / "hr=10") == 2
    first.close()
    second.close()
