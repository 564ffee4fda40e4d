"""The JDBC SQL connector against the session's real PostgreSQL server (`postgres` fixture): a partitioned scan
read by two subtasks, with every mapped type and NULLs, written back by the append sink (one job: the copy must
equal the original); a GROUP BY's changelog written by the upsert sink (the final table checked, deletions by
HAVING included, with buffers of two rows so changes of one key span flushes); and the errors met at planning."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment, ValidationException

pytestmark = pytest.mark.timeout(90)

PG_COLUMNS = (
    "id BIGINT PRIMARY KEY, small SMALLINT, i INTEGER, r REAL, d DOUBLE PRECISION, n NUMERIC(10, 2), b BOOLEAN, "
    "day DATE, tod TIME, ts TIMESTAMP(3), tz TIMESTAMPTZ, s VARCHAR(20), c CHAR(3), txt TEXT, raw BYTEA, "
    "arr INTEGER[], doc JSONB"
)
FLINK_COLUMNS = (
    "id BIGINT, small SMALLINT, i INT, r FLOAT, d DOUBLE, n DECIMAL(10, 2), b BOOLEAN, day DATE, tod TIME(0), "
    "ts TIMESTAMP(3), tz TIMESTAMP_LTZ(6), s VARCHAR(20), c CHAR(3), txt STRING, raw BYTES, arr ARRAY<INT>, "
    "doc STRING"
)


def table_name() -> str:
    return f"t_{uuid.uuid4().hex[:10]}"


def execute(postgres, *statements: str, fetch: str | None = None) -> list[tuple]:
    with postgres.connect() as connection, connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
        if fetch is None:
            return []
        cursor.execute(fetch)
        return cursor.fetchall()


def jdbc(postgres, table: str, **extra: str) -> str:
    options = {"connector": "jdbc", "url": postgres.jdbc_url, "table-name": table, "username": "postgres", **extra}
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def streaming(parallelism: int = 1) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    return t_env


def typed_row(k: int) -> tuple:
    return (
        k,
        k - 1,
        k * 1000,
        k + 0.25,
        k / 3,
        Decimal(f"{k}.50"),
        k % 2 == 0,
        dt.date(2024, 1, k),
        dt.time(10, k, 5),
        dt.datetime(2024, 1, 1, 0, 0, k, 123000),
        dt.datetime(2024, 1, 1, 12, k, tzinfo=dt.UTC),
        f"s{k}",
        "ab",
        "text é" * k,
        bytes([k, 0, 255]),
        [k, None, -k],
        f'{{"k": {k}}}',
    )


def test_partitioned_scan_maps_types_and_nulls_and_the_append_sink_writes_them_back(postgres):
    source, copy = table_name(), table_name()
    rows = [typed_row(k) for k in range(1, 21)]
    nulls = (21,) + (None,) * 16
    outside = typed_row(1)[1:]
    execute(postgres, f"CREATE TABLE {source} ({PG_COLUMNS})", f"CREATE TABLE {copy} ({PG_COLUMNS})")
    with postgres.connect() as connection, connection.cursor() as cursor:
        placeholders = ", ".join(["%s"] * 17)
        cursor.executemany(f"INSERT INTO {source} VALUES ({placeholders})", [*rows, nulls, (99, *outside)])

    t_env = streaming(parallelism=2)
    partitioned = jdbc(
        postgres,
        source,
        **{
            "scan.partition.column": "id",
            "scan.partition.num": "3",
            "scan.partition.lower-bound": "1",
            "scan.partition.upper-bound": "21",
            "scan.fetch-size": "4",
        },
    )
    t_env.execute_sql(f"CREATE TABLE src ({FLINK_COLUMNS}, PRIMARY KEY (id) NOT ENFORCED) WITH ({partitioned})")
    t_env.execute_sql(
        f"CREATE TABLE dst ({FLINK_COLUMNS}) WITH ({jdbc(postgres, copy, **{'sink.buffer-flush.max-rows': '7'})})"
    )
    with t_env.execute_sql("SELECT * FROM src").collect() as result:
        read = sorted((tuple(r) for r in result), key=lambda r: r[0])
    assert [r[0] for r in read] == list(range(1, 22))  # id 99 is outside the partition bounds: not read
    first = read[0]
    assert first[:10] == (
        1,
        0,
        1000,
        1.25,
        1 / 3,
        Decimal("1.50"),
        False,
        dt.date(2024, 1, 1),
        dt.time(10, 1, 5),
        dt.datetime(2024, 1, 1, 0, 0, 1, 123000),
    )
    assert first[10] == dt.datetime(2024, 1, 1, 12, 1, tzinfo=dt.UTC)
    assert first[11:] == ("s1", "ab ", "text é", b"\x01\x00\xff", [1, None, -1], '{"k": 1}')
    assert read[-1] == nulls

    t_env.execute_sql("INSERT INTO dst SELECT * FROM src").wait()
    difference = f"(SELECT * FROM {source} WHERE id <= 21 EXCEPT SELECT * FROM {copy})"
    assert execute(postgres, fetch=f"SELECT count(*) FROM {copy}") == [(21,)]
    assert execute(postgres, fetch=f"SELECT count(*) FROM {difference} AS d") == [(0,)]


def test_upsert_sink_lands_a_group_by_changelog_as_its_final_table(postgres):
    target = table_name()
    execute(postgres, f"CREATE TABLE {target} (k TEXT PRIMARY KEY, cnt BIGINT NOT NULL, total BIGINT)")
    t_env = streaming()
    events = [("a", 1), ("b", 2), ("a", 3), ("c", None), ("b", 4), ("a", 5), ("d", 6), ("c", 7), ("d", 8), ("d", 9)]
    values = ", ".join(f"('{k}', {'NULL' if v is None else v})" for k, v in events)
    t_env.execute_sql(f"CREATE TEMPORARY VIEW events AS SELECT * FROM (VALUES {values}) AS e(k, v)")
    flush = {"sink.buffer-flush.max-rows": "2", "sink.buffer-flush.interval": "0", "sink.parallelism": "2"}
    options = jdbc(postgres, target, **flush)
    t_env.execute_sql(
        f"CREATE TABLE totals (k STRING, cnt BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ({options})"
    )
    query = "SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k HAVING COUNT(*) < 3"
    t_env.execute_sql(f"INSERT INTO totals {query}").wait()
    # a and d reached three rows: their last change was a retraction the HAVING did not follow with a row
    assert execute(postgres, fetch=f"SELECT * FROM {target} ORDER BY k") == [("b", 2, 6), ("c", 2, 7)]


def test_planning_errors(postgres):
    t_env = streaming()
    t_env.execute_sql(f"CREATE TABLE plain (k STRING, n BIGINT) WITH ({jdbc(postgres, 'plain')})")
    t_env.execute_sql("CREATE TEMPORARY VIEW words AS SELECT * FROM (VALUES ('a'), ('b')) AS w(k)")
    with pytest.raises(ValidationException, match="declare PRIMARY KEY \\(...\\) NOT ENFORCED"):
        t_env.execute_sql("INSERT INTO plain SELECT k, COUNT(*) FROM words GROUP BY k")

    mismatched = table_name()
    execute(postgres, f"CREATE TABLE {mismatched} (k INTEGER, tz TIMESTAMPTZ)")
    t_env.execute_sql(f"CREATE TABLE wrong (k INT, tz TIMESTAMP(3)) WITH ({jdbc(postgres, mismatched)})")
    with pytest.raises(Exception, match="is PostgreSQL timestamp with time zone, which does not map to the declared"):
        with t_env.execute_sql("SELECT * FROM wrong").collect() as result:
            list(result)


def test_a_restored_scan_reader_resumes_after_the_rows_it_emitted(postgres):
    from fluvial.table.connectors.base import ConnectorContext
    from fluvial.table.connectors.jdbc import JdbcTableFactory
    from fluvial.table.planner.logical import Column
    from fluvial.table.types import DataTypes

    table = table_name()
    execute(
        postgres,
        f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, v TEXT)",
        f"INSERT INTO {table} SELECT g, 'v' || g FROM generate_series(1, 50) AS g",
    )

    class Env:
        def from_source(self, source, source_name):
            return source

    options = {"connector": "jdbc", "url": postgres.jdbc_url, "table-name": table, "username": "postgres"}
    options.update({"scan.partition.column": "id", "scan.partition.num": "2"})
    options.update({"scan.partition.lower-bound": "1", "scan.partition.upper-bound": "50", "scan.fetch-size": "7"})
    columns = (Column("id", DataTypes.INT()), Column("v", DataTypes.STRING()))
    source = JdbcTableFactory().create_source(Env(), ConnectorContext("t", columns, options, ("id",)))
    reader = source.create_reader(None)
    reader.add_splits(source.create_splits(1))
    seen = [row[0] for row in reader.poll(10)] + [row[0] for row in reader.poll(3)]
    state = reader.snapshot_state()
    reader.close()
    assert [(s.split_id, s.offset) for s in state] == [("0", len(seen)), ("1", 0)]

    restored = source.create_reader(None)
    restored.add_splits(state)
    while (rows := restored.poll(4)) is not None:
        seen += [row[0] for row in rows]
    restored.close()
    assert seen == list(range(1, 51))  # each row once, in key order


def test_lookup_join_as_of_processing_time_with_a_partial_cache(postgres):
    dim = table_name()
    execute(
        postgres,
        f"CREATE TABLE {dim} (id INTEGER PRIMARY KEY, name TEXT)",
        f"INSERT INTO {dim} VALUES (1, 'one'), (2, 'two'), (3, NULL), (4, 'four')",
    )
    t_env = streaming()
    t_env.execute_sql(
        "CREATE TABLE orders (k INT, pt AS PROCTIME()) WITH ('connector' = 'datagen', 'fields.k.kind' = 'sequence', "
        "'fields.k.start' = '1', 'fields.k.end' = '6')"
    )
    cache = {"lookup.cache": "PARTIAL", "lookup.partial-cache.max-rows": "2", "lookup.max-retries": "1"}
    t_env.execute_sql(
        f"CREATE TABLE dim (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ({jdbc(postgres, dim, **cache)})"
    )
    query = (
        "SELECT o.k, d.id, d.name FROM orders AS o LEFT JOIN dim FOR SYSTEM_TIME AS OF o.pt AS d "
        "ON o.k = d.id AND d.id <> 2"
    )
    with t_env.execute_sql(query).collect() as result:
        joined = sorted(tuple(r) for r in result)
    assert joined == [(1, 1, "one"), (2, None, None), (3, 3, None), (4, 4, "four"), (5, None, None), (6, None, None)]


class _KeyOrFailOnce:
    """id → id % 7; on the first attempt (no marker file yet) the id three quarters in raises once."""

    def __init__(self, marker: str, fail_at: int) -> None:
        self.marker = marker
        self.fail_at = fail_at

    def eval(self, id):
        import os

        if id == self.fail_at:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                raise RuntimeError("injected failure three quarters through the ids")
        return id % 7


@pytest.mark.timeout(120)
def test_a_scan_into_an_upsert_sink_ends_right_across_a_failure(postgres, tmp_path):
    """Partitioned scan (resumed at the rows each split emitted) → GROUP BY (restored state) → upsert sink
    (the replayed changes rewritten, idempotently): the final table holds every key's true count and sum."""
    from fluvial.common.restart_strategy import RestartStrategies
    from fluvial.table import DataTypes, StreamTableEnvironment
    from fluvial.table.udf import ScalarFunction, udf
    from fluvial.testing import ExecutionMode, environment

    rows = 8_000
    source, target = table_name(), table_name()
    execute(
        postgres,
        f"CREATE TABLE {source} (id BIGINT PRIMARY KEY)",
        f"INSERT INTO {source} SELECT g FROM generate_series(1, {rows}) AS g",
        f"CREATE TABLE {target} (k BIGINT PRIMARY KEY, c BIGINT, s NUMERIC)",
    )
    env = environment(ExecutionMode.PROCESSES)
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 100))
    t_env = StreamTableEnvironment.create(env)
    scan = {"scan.partition.column": "id", "scan.partition.num": "4", "scan.fetch-size": "100"}
    scan.update({"scan.partition.lower-bound": "1", "scan.partition.upper-bound": str(rows)})
    t_env.execute_sql(
        f"CREATE TABLE ids (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ({jdbc(postgres, source, **scan)})"
    )
    t_env.execute_sql(
        f"CREATE TABLE totals (k BIGINT, c BIGINT, s BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ({jdbc(postgres, target)})"
    )
    key_of = type("KeyOrFailOnce", (_KeyOrFailOnce, ScalarFunction), {})(str(tmp_path / "failed"), rows * 3 // 4)
    t_env.create_temporary_function("key_of", udf(key_of, result_type=DataTypes.BIGINT()))
    t_env.execute_sql("INSERT INTO totals SELECT key_of(id), COUNT(*), SUM(id) FROM ids GROUP BY key_of(id)").wait()

    assert (tmp_path / "failed").exists(), "the injected failure did not happen"
    expected = [(k, len(range(k or 7, rows + 1, 7)), sum(range(k or 7, rows + 1, 7))) for k in range(7)]
    assert execute(postgres, fetch=f"SELECT k, c, s FROM {target} ORDER BY k") == expected
