"""The Table API end to end on fluvial's runtime: column operations, set operations, conversions to and from
DataStreams, statement sets, the filesystem connector both ways, batch mode, explain."""

from __future__ import annotations

import json

import pytest

from fluvial.common import Row, RowKind, Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.table import (
    DataTypes,
    EnvironmentSettings,
    Schema,
    StreamTableEnvironment,
    TableDescriptor,
    TableEnvironment,
    ValidationException,
)
from fluvial.table.expressions import col, concat, lit

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def t_env() -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    return env


def rows(table) -> list[tuple]:
    with table.execute().collect() as result:
        return [(r.get_row_kind().short_string(), *r) for r in result]


def people(t_env):
    return t_env.from_elements([(1, "ann", 30), (2, "bob", 25), (3, "cid", 30)], ["id", "name", "age"])


def test_add_rename_and_drop_columns(t_env):
    table = (
        people(t_env)
        .add_columns(concat(col("name"), lit("!")).alias("loud"))
        .rename_columns(col("age").alias("years"))
        .drop_columns(col("id"))
    )
    assert table.get_schema().get_field_names() == ["name", "years", "loud"]
    assert rows(table) == [("+I", "ann", 30, "ann!"), ("+I", "bob", 25, "bob!"), ("+I", "cid", 30, "cid!")]


def test_add_or_replace_columns_replaces_by_name(t_env):
    table = people(t_env).add_or_replace_columns((col("age") + 1).alias("age"))
    assert [r[3] for r in rows(table)] == [31, 26, 31]


def test_distinct_and_union_all(t_env):
    ages = people(t_env).select(col("age"))
    assert rows(ages.union_all(ages).distinct()) == [("+I", 30), ("+I", 25)]


def test_limit_keeps_the_first_rows(t_env):
    assert rows(people(t_env).limit(2)) == [("+I", 1, "ann", 30), ("+I", 2, "bob", 25)]


def test_group_by_emits_retractions(t_env):
    counted = people(t_env).group_by(col("age")).select(col("age"), col("id").count.alias("n"))
    assert rows(counted) == [("+I", 30, 1), ("+I", 25, 1), ("-U", 30, 1), ("+U", 30, 2)]


def test_string_select_list_and_sql_over_a_view(t_env):
    t_env.create_temporary_view("people", people(t_env))
    assert rows(t_env.from_path("people").select("name, age + 1 AS next")) == [
        ("+I", "ann", 31),
        ("+I", "bob", 26),
        ("+I", "cid", 31),
    ]
    assert rows(t_env.sql_query("SELECT name FROM people WHERE age < 30")) == [("+I", "bob")]


def test_datastream_conversions_keep_names_types_and_kinds():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)
    ds = env.from_collection(
        [("a", 1), ("b", 2), ("a", 3)], type_info=Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
    )
    table = t_env.from_data_stream(ds)
    assert [str(t) for t in table.get_schema().get_field_data_types()] == ["STRING", "INT"]
    inserts = t_env.to_data_stream(table.where(col("n") > 1)).execute_and_collect()
    assert [r.as_dict() for r in inserts] == [{"word": "b", "n": 2}, {"word": "a", "n": 3}]
    sums = table.group_by(col("word")).select(col("word"), col("n").sum.alias("total"))
    with pytest.raises(ValidationException, match="doesn't support consuming update changes"):
        t_env.to_data_stream(sums)
    changes = list(t_env.to_changelog_stream(sums).execute_and_collect())
    assert [(r.get_row_kind(), r["word"], r["total"]) for r in changes] == [
        (RowKind.INSERT, "a", 1),
        (RowKind.INSERT, "b", 2),
        (RowKind.UPDATE_BEFORE, "a", 1),
        (RowKind.UPDATE_AFTER, "a", 4),
    ]


def test_statement_set_writes_two_filesystem_sinks_in_one_job(t_env, tmp_path):
    for name, fmt in (("as_csv", "csv"), ("as_json", "json")):
        t_env.create_temporary_table(
            name,
            TableDescriptor.for_connector("filesystem")
            .schema(Schema.new_builder().column("id", DataTypes.BIGINT()).column("name", DataTypes.STRING()).build())
            .option("path", str(tmp_path / name))
            .format(fmt)
            .build(),
        )
    statements = t_env.create_statement_set()
    statements.add_insert("as_csv", people(t_env).select(col("id"), col("name")))
    statements.add_insert_sql(f"INSERT INTO as_json SELECT id, UPPER(name) FROM {people(t_env)} WHERE age = 30")
    statements.execute().wait()
    csv_lines = sorted(
        line
        for f in (tmp_path / "as_csv").iterdir()
        if not f.name.startswith(".")
        for line in f.read_text().splitlines()
    )
    assert csv_lines == ["1,ann", "2,bob", "3,cid"]
    json_rows = sorted(
        (
            json.loads(line)
            for f in (tmp_path / "as_json").iterdir()
            if not f.name.startswith(".")
            for line in f.read_text().splitlines()
        ),
        key=lambda r: r["id"],
    )
    assert json_rows == [{"id": 1, "name": "ANN"}, {"id": 3, "name": "CID"}]
    t_env.execute_sql(
        f"CREATE TABLE back (id BIGINT, name STRING) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path / 'as_json'}', 'format' = 'json')"
    )
    assert sorted(r[1:] for r in rows(t_env.sql_query("SELECT * FROM back"))) == [(1, "ANN"), (3, "CID")]


def test_the_filesystem_sink_refuses_an_updating_query(t_env, tmp_path):
    t_env.execute_sql(
        f"CREATE TABLE out (age BIGINT, n BIGINT) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path}', 'format' = 'csv')"
    )
    counted = people(t_env).group_by(col("age")).select(col("age"), lit(1).count)
    with pytest.raises(ValidationException, match="doesn't support consuming update and delete changes"):
        counted.execute_insert("out")


def test_insert_with_a_column_count_mismatch_is_refused(t_env):
    t_env.execute_sql("CREATE TABLE out (a BIGINT) WITH ('connector' = 'blackhole')")
    with pytest.raises(ValidationException, match="Different number of columns"):
        t_env.execute_sql(f"INSERT INTO out SELECT id, name FROM {people(t_env)}")


def test_batch_mode_returns_the_final_table():
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    counted = people(t_env).group_by(col("age")).select(col("age"), col("id").count.alias("n"))
    with counted.execute().collect() as result:
        assert sorted(tuple(r) for r in result) == [(25, 1), (30, 2)]


def test_ddl_prints_ok_and_describe_lists_columns(t_env, capsys):
    t_env.execute_sql(
        "CREATE TABLE g (a INT NOT NULL, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen')"
    ).print()
    described = [tuple(r)[:3] for r in t_env.execute_sql("DESCRIBE g").collect()]
    assert described == [("a", "INT", False), ("ts", "TIMESTAMP(3) *ROWTIME*", True)]
    assert capsys.readouterr().out == "OK\n"


def test_explain_shows_the_plan(t_env):
    plan = people(t_env).group_by(col("age")).select(col("age"), lit(1).count).explain()
    assert "== Optimized Physical Plan ==" in plan and "GroupAggregate(groupBy=[age]" in plan


def test_datagen_sequence_is_bounded(t_env):
    t_env.execute_sql(
        "CREATE TABLE seq (n BIGINT) WITH ('connector' = 'datagen', 'fields.n.kind' = 'sequence', "
        "'fields.n.start' = '5', 'fields.n.end' = '9', 'scan.parallelism' = '1')"
    )
    assert [r[1] for r in rows(t_env.from_path("seq"))] == [5, 6, 7, 8, 9]


def test_collected_rows_are_positional_rows_with_their_kind(t_env):
    with people(t_env).select(col("name")).execute().collect() as result:
        first = next(result)
    assert first == Row("ann") and first.get_row_kind() is RowKind.INSERT
