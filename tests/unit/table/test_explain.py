"""explain's structure for representative queries, as Flink prints it (PyFlink 2.3's explain of the same
queries was the model): the sections, the node names of each tree from the top, Calcite's `$n` fields in the
Abstract Syntax Tree, the pushed projection and filter in the scan, Exchanges, the Sink, and the details."""

from __future__ import annotations

import json
import re

import pytest

from fluvial.table import EnvironmentSettings, ExplainDetail, TableEnvironment
from fluvial.table.expressions import col

pytestmark = pytest.mark.timeout(60)

SECTIONS = ("Abstract Syntax Tree", "Optimized Physical Plan", "Optimized Execution Plan", "fluvial JobGraph")


@pytest.fixture(scope="module")
def t_env(tmp_path_factory):
    path = tmp_path_factory.mktemp("fs")
    t = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t.execute_sql(
        f"CREATE TABLE fs (a INT, b STRING, c BIGINT) WITH ('connector' = 'filesystem', 'path' = '{path}', "
        "'format' = 'csv')"
    )
    t.execute_sql(
        "CREATE TABLE src (a INT, b STRING, c BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
        "WITH ('connector' = 'datagen', 'number-of-rows' = '10')"
    )
    t.execute_sql("CREATE TABLE src2 (k INT, v STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '10')")
    t.execute_sql("CREATE TABLE snk (a INT, b STRING) WITH ('connector' = 'blackhole')")
    t.execute_sql("CREATE TABLE snk2 (b STRING, n BIGINT) WITH ('connector' = 'print')")
    return t


def sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        match = re.fullmatch(r"== (.+) ==", line)
        if match:
            current = match.group(1)
            out[current] = []
        elif current is not None and line:
            out[current].append(line)
    return out


def nodes(lines: list[str]) -> list[str]:
    """Each tree line's node name, top first."""
    return [re.sub(r"^[ :|+-]*", "", line).split("(", 1)[0] for line in lines]


# query → (AST nodes, physical nodes); the execution plan has the physical plan's nodes
CASES = {
    "SELECT a, b FROM fs WHERE c > 10 AND b = 'x'": (
        ["LogicalProject", "LogicalFilter", "LogicalTableScan"],
        ["Calc", "TableSourceScan"],
    ),
    "SELECT a, b FROM src WHERE c > 10": (
        ["LogicalProject", "LogicalFilter", "LogicalWatermarkAssigner", "LogicalTableScan"],
        ["Calc", "WatermarkAssigner", "TableSourceScan"],
    ),
    "SELECT b, COUNT(*) AS n, SUM(c) AS s FROM fs GROUP BY b": (
        ["LogicalProject", "LogicalAggregate", "LogicalProject", "LogicalTableScan"],
        ["GroupAggregate", "Exchange", "TableSourceScan"],  # as Flink's: the renaming Calc is absorbed
    ),
    "SELECT window_start, window_end, b, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), "
    "INTERVAL '10' SECOND)) GROUP BY window_start, window_end, b": (
        [
            "LogicalProject",
            "LogicalProject",
            "LogicalAggregate",
            "LogicalTableFunctionScan",
            "LogicalProject",
            "LogicalWatermarkAssigner",
            "LogicalTableScan",
        ],
        ["Calc", "WindowAggregate", "Exchange", "WatermarkAssigner", "TableSourceScan"],
    ),
    "SELECT s.a, s2.v FROM src s JOIN src2 s2 ON s.a = s2.k WHERE s.c > 5": (
        [
            "LogicalProject",
            "LogicalFilter",
            "LogicalJoin",
            "LogicalWatermarkAssigner",
            "LogicalTableScan",
            "LogicalTableScan",
        ],
        ["Calc", "Join", "Exchange", "Calc", "WatermarkAssigner", "TableSourceScan", "Exchange", "TableSourceScan"],
    ),
    "SELECT * FROM (SELECT a, b, c, ROW_NUMBER() OVER (PARTITION BY b ORDER BY c DESC) AS rn FROM fs) WHERE rn <= 3": (
        ["LogicalProject", "LogicalFilter", "LogicalProject", "LogicalProject", "LogicalTableScan"],
        ["Rank", "Exchange", "TableSourceScan"],
    ),
    "SELECT a, b FROM (SELECT a, b, ts, ROW_NUMBER() OVER (PARTITION BY b ORDER BY ts ASC) AS rn FROM src) "
    "WHERE rn = 1": (
        None,
        ["Calc", "Deduplicate", "Exchange", "WatermarkAssigner", "TableSourceScan"],
    ),
    "SELECT a, b FROM fs UNION ALL SELECT k, v FROM src2": (
        ["LogicalUnion", "LogicalProject", "LogicalTableScan", "LogicalProject", "LogicalTableScan"],
        ["Union", "TableSourceScan", "TableSourceScan"],
    ),
    "SELECT a FROM src LIMIT 5": (
        ["LogicalSort", "LogicalProject", "LogicalWatermarkAssigner", "LogicalTableScan"],
        ["Limit", "Exchange", "Calc", "WatermarkAssigner", "TableSourceScan"],
    ),
    "INSERT INTO snk SELECT a, b FROM fs WHERE a > 1": (
        ["LogicalSink", "LogicalProject", "LogicalFilter", "LogicalTableScan"],
        ["Sink", "Calc", "TableSourceScan"],
    ),
}


@pytest.mark.parametrize("query", list(CASES), ids=[q[:40] for q in CASES])
def test_explain_sections_and_trees(t_env, query: str) -> None:
    ast, physical = CASES[query]
    parts = sections(t_env.explain_sql(query))
    assert list(parts) == list(SECTIONS)
    if ast is not None:
        assert nodes(parts["Abstract Syntax Tree"]) == ast
    assert nodes(parts["Optimized Physical Plan"]) == physical
    assert nodes(parts["Optimized Execution Plan"]) == physical
    assert parts["fluvial JobGraph"]  # the JobGraph with its chain verdicts is kept after Flink's sections


def test_field_syntax_pushed_scan_and_infix_execution_plan(t_env) -> None:
    parts = sections(t_env.explain_sql("SELECT a, b FROM fs WHERE c > 10 AND b = 'x'"))
    assert parts["Abstract Syntax Tree"][:2] == [
        "LogicalProject(a=[$0], b=[$1])",
        "+- LogicalFilter(condition=[AND(>($2, 10), =($1, 'x'))])",
    ]
    assert parts["Optimized Physical Plan"] == [  # PyFlink 2.3's, but for the CAST Flink adds to b
        "Calc(select=[a, b], where=[AND(>(c, 10), =(b, 'x'))])",
        "+- TableSourceScan(table=[[default_catalog, default_database, fs, filter=[and(>(c, 10), =(b, 'x'))]]], "
        "fields=[a, b, c])",
    ]
    insert = sections(t_env.explain_sql("INSERT INTO snk SELECT a, b FROM fs WHERE a > 1"))
    assert insert["Optimized Physical Plan"] == [
        "Sink(table=[default_catalog.default_database.snk], fields=[a, b])",
        "+- Calc(select=[a, b], where=[>(a, 1)])",
        "   +- TableSourceScan(table=[[default_catalog, default_database, fs, filter=[>(a, 1)], project=[a, b], "
        "metadata=[]]], fields=[a, b])",
    ]
    datagen = sections(t_env.explain_sql("SELECT a, b FROM src WHERE c > 10"))
    assert datagen["Optimized Physical Plan"][0] == "Calc(select=[a, b], where=[>(c, 10)])"
    assert datagen["Optimized Execution Plan"][0] == "Calc(select=[a, b], where=[(c > 10)])"
    assert (
        datagen["Optimized Execution Plan"][1]
        == "+- WatermarkAssigner(rowtime=[ts], watermark=[(ts - 1000:INTERVAL SECOND)])"
    )
    grouped = sections(t_env.explain_sql("SELECT b, COUNT(*) AS n FROM fs GROUP BY b"))
    assert "Exchange(distribution=[hash[b]])" in grouped["Optimized Physical Plan"][1]
    assert "LogicalAggregate(group=[{0}], EXPR$0=[COUNT()])" in grouped["Abstract Syntax Tree"][1]


def test_changelog_mode_detail_and_the_explain_statement(t_env) -> None:
    text = t_env.explain_sql("INSERT INTO snk2 SELECT b, COUNT(*) FROM fs GROUP BY b", ExplainDetail.CHANGELOG_MODE)
    physical = sections(text)["Optimized Physical Plan"]
    modes = [re.search(r"changelogMode=\[([A-Z,]+)\]", line).group(1) for line in physical]
    assert nodes(physical) == ["Sink", "GroupAggregate", "Exchange", "TableSourceScan"]
    assert modes == ["NONE", "I,UB,UA", "I", "I"]
    assert "changelogMode" not in "\n".join(sections(text)["Optimized Execution Plan"])
    result = t_env.execute_sql("EXPLAIN CHANGELOG_MODE, ESTIMATED_COST SELECT b, COUNT(*) FROM fs GROUP BY b")
    with result.collect() as rows:
        plan = next(iter(rows))[0]
    assert "changelogMode=[I,UB,UA]" in plan and "cumulative cost = {" in plan
    with t_env.execute_sql("EXPLAIN PLAN FOR SELECT a FROM fs").collect() as rows:
        assert "changelogMode" not in next(iter(rows))[0]


def test_estimated_cost_json_plan_table_api_and_statement_set(t_env) -> None:
    text = t_env.explain_sql("SELECT a, b FROM src WHERE c > 10", ExplainDetail.ESTIMATED_COST)
    physical = sections(text)["Optimized Physical Plan"]
    assert physical[-1].endswith(
        ": rowcount = 1.0E8, cumulative cost = {1.0E8 rows, 1.0E8 cpu, 3.6E9 io, 0.0 network, 0.0 memory}"
    )
    assert physical[0].startswith("Calc(select=[a, b], where=[>(c, 10)]): rowcount = 5.0E7")
    plan = t_env.explain_sql("SELECT a FROM fs", ExplainDetail.JSON_EXECUTION_PLAN)
    json_text = plan.split("== Physical Execution Plan ==\n", 1)[1].split("\n\n== fluvial JobGraph ==")[0]
    assert [n["pact"] for n in json.loads(json_text)["nodes"]][0] == "Data Source"
    table_text = t_env.from_path("fs").where(col("a") > 1).select(col("a"), col("b")).explain()
    assert sections(table_text)["Optimized Physical Plan"] == [  # PyFlink 2.3's
        "Calc(select=[a, b], where=[>(a, 1)])",
        "+- TableSourceScan(table=[[default_catalog, default_database, fs, filter=[>(a, 1)], project=[a, b], "
        "metadata=[]]], fields=[a, b])",
    ]
    statements = t_env.create_statement_set()
    statements.add_insert_sql("INSERT INTO snk SELECT a, b FROM fs")
    statements.add_insert_sql("INSERT INTO snk2 SELECT b, c FROM fs")
    both = sections(statements.explain())
    assert [n for n in nodes(both["Optimized Physical Plan"]) if n == "Sink"] == ["Sink", "Sink"]


def test_plan_advice_numbers_the_nodes_it_advises_and_lists_its_advice_after_the_physical_plan(t_env):
    """PyFlink 2.3's shape: the physical plan's header says "With Advice", an advised node's first term is its
    number, and the advice follows the plan ("No available advice..." when there is none)."""
    advised = t_env.explain_sql("SELECT a, COUNT(*) FROM fs GROUP BY a", ExplainDetail.PLAN_ADVICE)
    plan = sections(advised)["Optimized Physical Plan With Advice"]
    assert plan[0].startswith("GroupAggregate(advice=[1], groupBy=[a], ")
    assert plan[-1].startswith("advice[1]: [ADVICE] ") and "'table.exec.mini-batch.enabled'" in plan[-1]
    quiet = sections(t_env.explain_sql("SELECT a FROM fs WHERE a > 1", ExplainDetail.PLAN_ADVICE))
    assert quiet["Optimized Physical Plan With Advice"][-1] == "No available advice..."
    t_env.get_config().set("table.exec.mini-batch.enabled", "true")
    t_env.get_config().set("table.exec.mini-batch.allow-latency", "1 s")
    t_env.get_config().set("table.exec.mini-batch.size", "100")
    try:  # two phases already: nothing to advise
        batched = sections(t_env.explain_sql("SELECT a, COUNT(*) FROM fs GROUP BY a", ExplainDetail.PLAN_ADVICE))
    finally:
        t_env.get_config().set("table.exec.mini-batch.enabled", "false")
    assert batched["Optimized Physical Plan With Advice"][-1] == "No available advice..."
    assert "Optimized Physical Plan" not in sections(advised)


def test_top_n_prints_flinks_rank_strategy(t_env):
    """Over inserts only the top N are kept (AppendFastStrategy); over an aggregation every row (RetractStrategy)."""
    ranked = "ROW_NUMBER() OVER (PARTITION BY b ORDER BY c DESC) AS rn"
    appending = t_env.explain_sql(f"SELECT * FROM (SELECT a, b, c, {ranked} FROM fs) WHERE rn <= 3")
    assert "Rank(strategy=[AppendFastStrategy], rankType=[ROW_NUMBER], rankRange=[rankStart=1, rankEnd=3]" in appending
    aggregated = f"SELECT a, b, c FROM (SELECT a, b, c, {ranked} FROM (SELECT a, b, SUM(c) AS c FROM fs GROUP BY a, b))"
    text = t_env.explain_sql(aggregated + " WHERE rn <= 2")
    assert (
        "Rank(strategy=[RetractStrategy], rankType=[ROW_NUMBER], rankRange=[rankStart=1, rankEnd=2], "
        "partitionBy=[b], orderBy=[c DESC], select=[a, b, c])"
    ) in text
