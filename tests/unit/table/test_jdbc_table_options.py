"""The JDBC table connector without a server: option validation (each error names the option and the fix), the
partitioned scan's ranges, identifiers as Flink's PostgreSQL dialect writes them, the statements the sink runs,
and the upsert writer's reduction of a changelog buffer to the last change per key."""

from __future__ import annotations

import pytest

from fluvial.common.row import Row, RowKind
from fluvial.common.task_info import TaskInfo
from fluvial.table.connectors.base import ConnectorContext
from fluvial.table.connectors.jdbc import JdbcTableOptions, UpsertJdbcSink, UpsertJdbcWriter, quote_identifier
from fluvial.table.connectors.jdbc_scan import JdbcScanSplit, ScanPartition, partition_ranges
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Column
from fluvial.table.types import DataTypes

pytestmark = pytest.mark.timeout(30)

URL = "jdbc:postgresql://127.0.0.1:5432/db"
COLUMNS = (Column("id", DataTypes.BIGINT()), Column("name", DataTypes.STRING()), Column("ts", DataTypes.TIMESTAMP(3)))


def context(primary_key: tuple[str, ...] = (), **options: str) -> ConnectorContext:
    base = {"connector": "jdbc", "url": URL, "table-name": "users"}
    base.update(options)
    return ConnectorContext("users", COLUMNS, base, primary_key)


def with_options(**options: str) -> ConnectorContext:
    base = {"connector": "jdbc", "url": URL, "table-name": "users", **options}
    return ConnectorContext("users", COLUMNS, base)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "jdbc:mysql://h/db"}, "not a PostgreSQL URL"),
        ({"driver": "com.mysql.cj.jdbc.Driver"}, "driver 'com.mysql.cj.jdbc.Driver' is not supported"),
        ({"scan.partition.column": "id"}, "Either all or none of the following options should be provided"),
        (
            {
                "scan.partition.column": "id",
                "scan.partition.num": "2",
                "scan.partition.lower-bound": "10",
                "scan.partition.upper-bound": "1",
            },
            "'scan.partition.lower-bound'='10' must not be larger than 'scan.partition.upper-bound'='1'",
        ),
        (
            {
                "scan.partition.column": "ts",
                "scan.partition.num": "2",
                "scan.partition.lower-bound": "1",
                "scan.partition.upper-bound": "9",
            },
            "integer ranges of a numeric column",
        ),
        (
            {
                "scan.partition.column": "nope",
                "scan.partition.num": "2",
                "scan.partition.lower-bound": "1",
                "scan.partition.upper-bound": "9",
            },
            "is not a column of table 'users'",
        ),
        ({"scan.fetch-size": "many"}, "Could not parse value 'many' for key 'scan.fetch-size'"),
        ({"sink.max-retries": "-1"}, "'sink.max-retries' must be at least 0"),
        ({"sink.buffer-flush.interval": "soon"}, "Could not parse value 'soon' as a duration"),
        ({"scan.auto-commit": "true"}, "'scan.auto-commit' = 'true' is not supported"),
        ({"sink.semantic": "exactly-once"}, "Unsupported options found for 'jdbc': sink.semantic"),
        ({"lookup.max-retries": "x"}, "Could not parse value 'x' for key 'lookup.max-retries'"),
        ({"connection.max-retry-timeout": "500 ms"}, "shouldn't be smaller than 1 second"),
    ],
)
def test_option_errors_name_the_option(options, message):
    with pytest.raises(ValidationException, match=message.replace("(", r"\(").replace(")", r"\)")):
        JdbcTableOptions.of(with_options(**options))


def test_required_options():
    with pytest.raises(ValidationException, match="required options are missing for 'jdbc': table-name"):
        JdbcTableOptions.of(ConnectorContext("users", COLUMNS, {"connector": "jdbc", "url": URL}))


def test_defaults_are_flinks():
    options = JdbcTableOptions.of(with_options(driver="org.postgresql.Driver", username="u", password="p"))
    execution = options.execution_options()
    assert (execution.batch_size, execution.batch_interval_ms, execution.max_retries) == (100, 1000, 3)
    assert options.connection.address().user == "u"
    flush_only_at_checkpoints = JdbcTableOptions.of(
        with_options(**{"sink.buffer-flush.max-rows": "0", "sink.buffer-flush.interval": "0"})
    ).execution_options()
    assert flush_only_at_checkpoints.batch_interval_ms == 0 and flush_only_at_checkpoints.batch_size > 10**9


def test_partition_ranges_cover_the_bounds_contiguously():
    assert partition_ranges(ScanPartition("id", 3, 1, 10)) == [(1, 4), (5, 7), (8, 10)]
    assert partition_ranges(ScanPartition("id", 4, 0, 1)) == [(0, 0), (1, 1)]
    assert partition_ranges(ScanPartition("id", 1, -5, 5)) == [(-5, 5)]
    for num in range(1, 12):
        ranges = partition_ranges(ScanPartition("id", num, -3, 17))
        covered = [v for lo, hi in ranges for v in range(lo, hi + 1)]
        assert covered == list(range(-3, 18))
        sizes = {hi - lo + 1 for lo, hi in ranges}
        assert max(sizes) - min(sizes) <= 1


def test_identifiers_as_the_postgres_dialect_writes_them():
    assert quote_identifier("order") == '"order"'  # lower case: quoted, so a reserved word works
    assert quote_identifier("userId") == "userId"  # capitals: PostgreSQL folds it, as with Flink
    assert quote_identifier("a b") == '"a b"'


def test_scan_query_orders_by_the_key_and_resumes_at_the_offset():
    from fluvial.table.connectors.jdbc import JdbcTableFactory

    class Env:
        def from_source(self, source, source_name):
            return source

    source = JdbcTableFactory().create_source(
        Env(),
        context(
            ("id",),
            **{
                "scan.partition.column": "id",
                "scan.partition.num": "2",
                "scan.partition.lower-bound": "1",
                "scan.partition.upper-bound": "4",
            },
        ),
    )
    assert source.create_splits(2) == [JdbcScanSplit("0", (1, 2)), JdbcScanSplit("1", (3, 4))]
    sql, parameters = source.query(JdbcScanSplit("1", (3, 4), offset=7), [False, True, False])
    assert sql == 'SELECT "id", "name"::text, "ts" FROM "users" WHERE "id" BETWEEN %s AND %s ORDER BY "id" OFFSET %s'
    assert parameters == (3, 4, 7)


def test_upsert_statements_and_the_reduced_buffer():
    options = JdbcTableOptions.of(context(("id",)))
    sink = UpsertJdbcSink.of(context(("id",)), options)
    assert sink.sql == (
        'INSERT INTO "users" ("id", "name", "ts") VALUES (?, ?, ?) ON CONFLICT ("id") '
        'DO UPDATE SET "name"=EXCLUDED."name", "ts"=EXCLUDED."ts"'
    )
    assert sink.delete.sql == 'DELETE FROM "users" WHERE "id" = ?'

    executed = []
    writer = UpsertJdbcWriter(sink, TaskInfo("job", "sink", 0, 1, 128))
    import fluvial.table.connectors.jdbc as module

    def record(session, statement_sink, rows):
        executed.append((statement_sink.sql.split()[0], rows))

    original = module.execute_statement
    module.execute_statement = record
    try:

        def row(kind, *values):
            r = Row(*values)
            r.set_row_kind(kind)
            return r

        writer._write(
            [
                row(RowKind.INSERT, 1, "a", None),
                row(RowKind.UPDATE_BEFORE, 1, "a", None),
                row(RowKind.UPDATE_AFTER, 1, "b", None),
                row(RowKind.INSERT, 2, "x", None),
                row(RowKind.DELETE, 2, "x", None),
                row(RowKind.DELETE, 3, "y", None),
                row(RowKind.INSERT, 3, "z", None),
                row(RowKind.INSERT, 4, "h", None),
                row(RowKind.UPDATE_BEFORE, 4, "h", None),  # its +U was filtered out (HAVING): the row goes
            ]
        )
    finally:
        module.execute_statement = original
        writer.close()
    assert executed == [("INSERT", [[1, "b", None], [3, "z", None]]), ("DELETE", [(2,), (4,)])]


def test_lookup_cache_options():
    from fluvial.table.connectors.lookup import LookupCacheSpec, lookup_cache_spec

    assert lookup_cache_spec({}, "jdbc") is None
    assert lookup_cache_spec(
        {
            "lookup.cache": "PARTIAL",
            "lookup.partial-cache.max-rows": "10",
            "lookup.partial-cache.expire-after-write": "1 min",
        },
        "jdbc",
    ) == LookupCacheSpec(10, 60_000, None, True)
    assert lookup_cache_spec({"lookup.cache.ttl": "10 s"}, "jdbc") == LookupCacheSpec(None, 10_000, None, True)
    with pytest.raises(ValidationException, match="set 'lookup.cache' = 'PARTIAL'"):
        lookup_cache_spec({"lookup.partial-cache.max-rows": "10"}, "jdbc")
    with pytest.raises(ValidationException, match="needs at least one of"):
        lookup_cache_spec({"lookup.cache": "PARTIAL"}, "jdbc")
    with pytest.raises(ValidationException, match="NONE or PARTIAL"):
        lookup_cache_spec({"lookup.cache": "FULL"}, "jdbc")


def test_partial_cache_evicts_the_least_recently_used_and_expires_entries():
    from fluvial.table.connectors.lookup import LookupCacheSpec, PartialCache

    now = [0.0]
    cache = PartialCache(LookupCacheSpec(2, 10_000, 4_000, cache_missing_key=False), clock=lambda: now[0])
    cache.put((1,), [[1, "a"]])
    cache.put((2,), [[2, "b"]])
    cache.put((3,), [])  # a missing key is not cached: cache-missing-key is false
    assert cache.get((1,)) == [[1, "a"]]  # 1 is now the most recently used
    cache.put((4,), [[4, "d"]])
    assert cache.get((2,)) is None and len(cache) == 2  # 2 went first
    now[0] = 3.0
    assert cache.get((1,)) == [[1, "a"]]
    now[0] = 6.5
    assert cache.get((4,)) is None  # not accessed for 4 s
    assert cache.get((1,)) == [[1, "a"]]
    now[0] = 10.0
    assert cache.get((1,)) is None  # written 10 s ago


def test_temporal_join_planning_errors():
    from fluvial.table import EnvironmentSettings, TableEnvironment

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.execute_sql(
        "CREATE TABLE o (k INT, ts TIMESTAMP(3), pt AS PROCTIME(), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen')"
    )
    t_env.execute_sql("CREATE TABLE gen (id INT, v STRING) WITH ('connector' = 'datagen')")
    t_env.execute_sql(
        f"CREATE TABLE dim (id INT, v STRING) WITH ('connector' = 'jdbc', 'url' = '{URL}', 'table-name' = 'd')"
    )
    join = "SELECT * FROM o JOIN {} FOR SYSTEM_TIME AS OF o.{} AS d ON {}"
    with pytest.raises(ValidationException, match="connector 'datagen'\\) is not a lookup source"):
        t_env.sql_query(join.format("gen", "pt", "o.k = d.id"))
    # as of an event time, the table must be a versioned one (a temporal join, not a lookup)
    with pytest.raises(ValidationException, match="needs a versioned table, but 'dim' has no primary key"):
        t_env.sql_query(join.format("dim", "ts", "o.k = d.id"))
    with pytest.raises(ValidationException, match="needs an equality between an input column and a column of 'dim'"):
        t_env.sql_query(join.format("dim", "pt", "o.k > d.id"))
    with pytest.raises(ValidationException, match="Cannot apply '=' to arguments of type '<INT> = <STRING>'"):
        t_env.sql_query(join.format("dim", "pt", "o.k = d.v"))
    explained = t_env.sql_query(join.format("dim", "pt", "o.k = d.id")).explain()
    assert "LookupJoin(table=[default_catalog.default_database.dim], joinType=[InnerJoin], lookup=[id=k]" in explained
