"""The SQL filesystem connector's avro and parquet formats and partitioned tables, written and read back by SQL
jobs: every type with NULLs, the files' schemas against Flink's mapping, partitions with pruning, and the
success file of a checkpointed streaming job's partitions."""

from __future__ import annotations

import datetime as dt
import glob
import os
import time
from decimal import Decimal

import fastavro
import pyarrow.parquet as pq
import pytest

from fluvial.common.restart_strategy import RestartStrategies
from fluvial.common.row import Row
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.table import DataTypes, EnvironmentSettings, StreamTableEnvironment, TableEnvironment
from fluvial.table.udf import ScalarFunction, udf

pytestmark = pytest.mark.timeout(60)

TYPES = [
    ("b", "BOOLEAN", DataTypes.BOOLEAN()),
    ("ti", "TINYINT", DataTypes.TINYINT()),
    ("si", "SMALLINT", DataTypes.SMALLINT()),
    ("i", "INT", DataTypes.INT()),
    ("bi", "BIGINT", DataTypes.BIGINT()),
    ("f", "FLOAT", DataTypes.FLOAT()),
    ("d", "DOUBLE", DataTypes.DOUBLE()),
    ("de", "DECIMAL(20, 4)", DataTypes.DECIMAL(20, 4)),
    ("s", "STRING", DataTypes.STRING()),
    ("by", "BYTES", DataTypes.BYTES()),
    ("da", "DATE", DataTypes.DATE()),
    ("tm", "TIME", DataTypes.TIME()),
    ("ts", "TIMESTAMP(3)", DataTypes.TIMESTAMP(3)),
    ("ltz", "TIMESTAMP_LTZ(3)", DataTypes.TIMESTAMP_LTZ(3)),
    ("arr", "ARRAY<INT>", DataTypes.ARRAY(DataTypes.INT())),
    ("m", "MAP<STRING, INT>", DataTypes.MAP(DataTypes.STRING(), DataTypes.INT())),
    (
        "r",
        "ROW<x INT, y STRING>",
        DataTypes.ROW([DataTypes.FIELD("x", DataTypes.INT()), DataTypes.FIELD("y", DataTypes.STRING())]),
    ),
]
FULL = (
    True,
    -1,
    2,
    3,
    4,
    1.5,
    2.25,
    Decimal("12345.6789"),
    "stra\u00dfe",
    b"\x00\x01",
    dt.date(2024, 2, 29),
    dt.time(12, 34, 56),
    dt.datetime(2024, 1, 1, 10, 0, 0, 123000),
    dt.datetime(2024, 1, 1, 10, 0, 0, 123000, tzinfo=dt.UTC),
    [1, None, 3],
    {"k": 1, "v": None},
    Row(x=7, y=None),
)


@pytest.fixture
def t_env() -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    env.get_config().set("parallelism.default", "1")
    return env


def _columns() -> str:
    return ", ".join(f"`{n}` {sql}" for n, sql, _ in TYPES)


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_every_type_and_null_round_trips_through_files(t_env, tmp_path, fmt):
    options = (
        "'avro.codec' = 'deflate', 'avro.timestamp_mapping.legacy' = 'false'"  # the legacy one has no TIMESTAMP_LTZ
        if fmt == "avro"
        else "'parquet.compression' = 'ZSTD'"
    )
    t_env.execute_sql(
        f"CREATE TABLE t ({_columns()}) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}', "
        f"'format' = '{fmt}', {options})"
    )
    schema = DataTypes.ROW([DataTypes.FIELD(n, t) for n, _, t in TYPES])
    t_env.from_elements([FULL, (None,) * len(TYPES)], schema).execute_insert("t").wait()
    got = sorted((tuple(r) for r in t_env.execute_sql("SELECT * FROM t").collect()), key=lambda r: r[0] is None)
    assert got == [FULL, (None,) * len(TYPES)]
    assert [tuple(r) for r in t_env.execute_sql("SELECT i, r.x FROM t WHERE i = 3").collect()] == [(3, 7)]

    (part,) = glob.glob(str(tmp_path / "part-*"))
    if fmt == "avro":
        with open(part, "rb") as handle:
            reader = fastavro.reader(handle)
            assert reader.codec == "deflate"
            fields = {f["name"]: f["type"] for f in reader.writer_schema["fields"]}
        assert reader.writer_schema["name"] == "org.apache.flink.avro.generated.record"
        assert fields["ti"] == ["null", "int"] and fields["f"] == ["null", "float"]
        assert fields["de"][1] == {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}
        assert fields["ts"][1] == {"type": "long", "logicalType": "local-timestamp-millis"}
        assert fields["ltz"][1] == {"type": "long", "logicalType": "timestamp-millis"}
        assert fields["da"][1] == {"type": "int", "logicalType": "date"}
        assert fields["r"][1]["name"] == "org.apache.flink.avro.generated.record_r"
        assert fields["m"][1] == {"type": "map", "values": ["null", "int"]}
    else:
        parquet = pq.ParquetFile(part)
        physical = {c.name: (c.physical_type, str(c.logical_type)) for c in parquet.schema}
        assert physical["ti"] == ("INT32", "Int(bitWidth=8, isSigned=true)")
        assert physical["f"][0] == "FLOAT" and physical["s"] == ("BYTE_ARRAY", "String")
        assert physical["ts"][0] == "INT96" and physical["ltz"][0] == "INT96"  # as Flink writes timestamps
        assert physical["de"][0] == "FIXED_LEN_BYTE_ARRAY" and physical["tm"][0] == "INT32"
        assert parquet.metadata.row_group(0).column(0).compression == "ZSTD"


def test_partitioned_table_writes_directories_reads_them_back_and_prunes(t_env, tmp_path):
    t_env.execute_sql(
        f"CREATE TABLE p (a INT, s STRING, dt STRING, hr INT) PARTITIONED BY (dt, hr) WITH ("
        f"'connector' = 'filesystem', 'path' = '{tmp_path}', 'format' = 'parquet', 'partition.default-name' = 'none')"
    )
    t_env.execute_sql(
        "INSERT INTO p VALUES (1, 'a', '2024-01-01', 10), (2, 'b', '2024-01-01', 11), "
        "(3, 'c', '2024-01-02', 10), (4, CAST(NULL AS STRING), CAST(NULL AS STRING), 10)"
    ).wait()
    directories = sorted(os.path.relpath(d, tmp_path) for d in glob.glob(str(tmp_path / "*" / "*")))
    assert directories == ["dt=2024-01-01/hr=10", "dt=2024-01-01/hr=11", "dt=2024-01-02/hr=10", "dt=none/hr=10"]
    (part,) = glob.glob(str(tmp_path / "dt=2024-01-01" / "hr=10" / "part-*"))
    assert pq.ParquetFile(part).schema_arrow.names == ["a", "s"]  # partition columns live in the path only

    everything = {tuple(r) for r in t_env.execute_sql("SELECT * FROM p").collect()}
    assert everything == {
        (1, "a", "2024-01-01", 10),
        (2, "b", "2024-01-01", 11),
        (3, "c", "2024-01-02", 10),
        (4, None, None, 10),
    }
    # a file no reader can parse, in a partition the WHERE clause rules out: pruning never opens it
    (tmp_path / "dt=2024-01-02" / "hr=10" / "part-garbage").write_bytes(b"not parquet")
    pruned = t_env.execute_sql("SELECT a, hr FROM p WHERE dt = '2024-01-01' AND hr IN (10, 12)").collect()
    assert [tuple(r) for r in pruned] == [(1, 10)]
    assert list(t_env.execute_sql("SELECT a FROM p WHERE dt = '1999-01-01'").collect()) == []


def test_a_running_jobs_partitions_are_committed_checkpoint_by_checkpoint(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(100)
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(
        "CREATE TABLE src (a INT) WITH ('connector' = 'datagen', 'rows-per-second' = '200', "
        "'fields.a.kind' = 'sequence', 'fields.a.start' = '1', 'fields.a.end' = '1000000')"
    )
    t_env.execute_sql(
        f"CREATE TABLE out (a INT, k INT) PARTITIONED BY (k) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path}', 'format' = 'parquet', 'sink.partition-commit.policy.kind' = 'success-file')"
    )
    result = t_env.execute_sql("INSERT INTO out SELECT a, MOD(a, 2) FROM src")
    client = result.get_job_client()
    try:
        deadline = time.monotonic() + 30
        while not all(os.path.exists(tmp_path / f"k={k}" / "_SUCCESS") for k in (0, 1)):
            assert time.monotonic() < deadline, f"no success files in {os.listdir(tmp_path)}"
            time.sleep(0.05)
        # process-time, delay 0: committed at the first checkpoint every writer committed after writing it, so the
        # partition already holds visible part files when its success file appears
        for k in (0, 1):
            visible = [n for n in os.listdir(tmp_path / f"k={k}") if n.startswith("part-")]
            assert visible and all(pq.ParquetFile(tmp_path / f"k={k}" / n).metadata.num_rows > 0 for n in visible)
    finally:
        client.cancel().result(timeout=30)


class FailOnce(ScalarFunction):
    """a -> a; on the first attempt (no marker file yet), `a` = 300 raises once."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def eval(self, a):
        if a == 300:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                raise RuntimeError("injected failure")
        return a


def test_partition_time_commits_are_exactly_once_across_a_failure(tmp_path):
    """Half-hour event times over five hours, partitioned by day and hour, shuffled by partition, committed by
    partition time; the job fails once half-way and is restored from a checkpoint."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(50)
    env.set_parallelism(2)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 50))
    t_env = StreamTableEnvironment.create(env)
    t_env.create_temporary_function(
        "pass_or_fail", udf(FailOnce(str(tmp_path / "failed")), result_type=DataTypes.INT())
    )
    t_env.execute_sql(
        "CREATE TABLE src (a INT, ts AS TO_TIMESTAMP_LTZ(a * 30000, 3), WATERMARK FOR ts AS ts) WITH ("
        "'connector' = 'datagen', 'rows-per-second' = '1000', "
        "'fields.a.kind' = 'sequence', 'fields.a.start' = '1', 'fields.a.end' = '599')"
    )
    out = tmp_path / "out"
    t_env.execute_sql(
        f"CREATE TABLE out (a INT, dt STRING, hr STRING) PARTITIONED BY (dt, hr) WITH ("
        f"'connector' = 'filesystem', 'path' = '{out}', 'format' = 'avro', "
        "'sink.partition-commit.trigger' = 'partition-time', "
        "'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00', "
        "'sink.partition-commit.policy.kind' = 'success-file', 'sink.shuffle-by-partition.enable' = 'true')"
    )
    t_env.execute_sql(
        "INSERT INTO out SELECT pass_or_fail(a), DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM src"
    ).wait()
    assert os.path.exists(tmp_path / "failed")  # the job did fail once, and was restored from a checkpoint
    partitions = sorted(os.path.relpath(d, out) for d in glob.glob(str(out / "dt=*" / "hr=*")))
    assert partitions == [f"dt=1970-01-01/hr={h:02d}" for h in range(5)]
    for partition in partitions:
        assert os.path.exists(out / partition / "_SUCCESS")
        # shuffled by partition: one writer (the subtask in `part-<uuid>-<subtask>-<n>`) wrote the partition
        writers = {name.rsplit("-", 2)[1] for name in os.listdir(out / partition) if name.startswith("part-")}
        assert len(writers) == 1
    assert not os.path.exists(out / "_partition-commit")  # every writer finished: their progress is removed
    assert glob.glob(str(out / "**" / ".part-*"), recursive=True) == []  # no attempt left a hidden part behind
    back = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    back.execute_sql(
        f"CREATE TABLE back (a INT, dt STRING, hr STRING) PARTITIONED BY (dt, hr) WITH ("
        f"'connector' = 'filesystem', 'path' = '{out}', 'format' = 'avro')"
    )
    rows = sorted(tuple(r) for r in back.execute_sql("SELECT a, hr FROM back").collect())
    assert rows == [(a, f"{a // 120:02d}") for a in range(1, 600)]  # every row once: nothing lost, nothing twice
