"""Split DISTINCT aggregation (`table.optimizer.distinct-agg.split.enabled`): the same final table as one level,
over inserts and over an updating input, with mini-batch too; the plan as Flink prints it; what stays one level;
the options' errors."""

from __future__ import annotations

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment, ValidationException

pytestmark = pytest.mark.timeout(60)

ROWS = [(f"k{i % 3}", None if i % 11 == 0 else i % 7, i) for i in range(60)]
QUERY = (
    "SELECT k, COUNT(DISTINCT b) AS db, SUM(DISTINCT b) AS sb, COUNT(*) AS c, SUM(v) AS sv, MAX(v) AS mv, "
    "MIN(DISTINCT b) AS nb FROM src GROUP BY k"
)
# an updating input: per k, the count of each b's rows, retracted and re-added as rows arrive
UPDATING = "SELECT k, COUNT(DISTINCT n) AS dn, SUM(n) AS sn FROM (SELECT k, b, COUNT(*) AS n FROM src GROUP BY k, b) GROUP BY k"


def environment(split: bool, **options: str) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "2")
    if split:
        t_env.get_config().set("table.optimizer.distinct-agg.split.enabled", "true")
        t_env.get_config().set("table.optimizer.distinct-agg.split.bucket-num", "4")
    for key, value in options.items():
        t_env.get_config().set(key, value)
    t_env.create_temporary_view("src", t_env.from_elements(ROWS, ["k", "b", "v"]))
    return t_env


def final_table(t_env: TableEnvironment, query: str) -> list[tuple]:
    table: dict = {}
    with t_env.sql_query(query).execute().collect() as rows:
        for row in rows:
            kind = row.get_row_kind().short_string()
            if kind in ("+I", "+U"):
                table[row[0]] = tuple(row)
            elif kind == "-D":
                table.pop(row[0], None)
    return sorted(table.values())


def test_split_ends_with_the_same_table_as_one_level():
    one_level = environment(False)
    expected = final_table(one_level, QUERY), final_table(one_level, UPDATING)
    split = environment(True)
    assert (final_table(split, QUERY), final_table(split, UPDATING)) == expected
    mini_batch = {
        "table.exec.mini-batch.enabled": "true",
        "table.exec.mini-batch.allow-latency": "50 ms",
        "table.exec.mini-batch.size": "7",
    }
    assert final_table(environment(True, **mini_batch), QUERY) == expected[0]


def physical(t_env: TableEnvironment, query: str) -> list[str]:
    text = t_env.explain_sql(query)
    return text.split("== Optimized Physical Plan ==\n", 1)[1].split("\n\n", 1)[0].splitlines()


def test_the_plan_shows_the_two_levels_and_the_bucketing_calc():
    plan = physical(environment(True), "SELECT k, COUNT(DISTINCT b) AS db, COUNT(*) AS c FROM src GROUP BY k")
    assert plan[:5] == [
        "GroupAggregate(groupBy=[k], partialFinalType=[FINAL], select=[k, SUM0($p0) AS db, SUM0($p1) AS c])",
        "+- Exchange(distribution=[hash[k]])",
        "   +- GroupAggregate(groupBy=[k, $f2], partialFinalType=[PARTIAL], select=[k, $f2, COUNT(DISTINCT $f1) "
        "AS $p0, COUNT(*) AS $p1])",
        "      +- Exchange(distribution=[hash[k, $f2]])",
        "         +- Calc(select=[k, $f1, MOD(HASH_CODE($f1), 4) AS $f2])",
    ]


def test_what_stays_one_level():
    t_env = environment(True)
    for query in (
        "SELECT k, COUNT(DISTINCT b), AVG(v) FROM src GROUP BY k",  # AVG is not split (Flink's Expand is needed)
        "SELECT k, COUNT(DISTINCT b), COUNT(DISTINCT v) FROM src GROUP BY k",  # two distinct columns
        "SELECT k, SUM(v) FROM src GROUP BY k",  # nothing distinct
    ):
        assert "partialFinalType" not in "\n".join(physical(t_env, query)), query
    batch = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    batch.get_config().set("table.optimizer.distinct-agg.split.enabled", "true")
    batch.create_temporary_view("src", batch.from_elements(ROWS, ["k", "b", "v"]))
    assert "partialFinalType" not in "\n".join(physical(batch, QUERY))


def test_bad_option_values_are_refused():
    config = TableEnvironment.create(EnvironmentSettings.in_streaming_mode()).get_config()
    with pytest.raises(ValidationException, match="use true or false"):
        config.set("table.optimizer.distinct-agg.split.enabled", "yes")
    with pytest.raises(ValidationException, match="above 0"):
        config.set("table.optimizer.distinct-agg.split.bucket-num", "0")
