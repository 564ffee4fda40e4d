"""A query over a source that takes its filters and columns (filesystem csv/json) gives what the query means
over the rows (computed here in Python), and what it gives with predicate push-down switched off."""

from __future__ import annotations

import json

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment

pytestmark = pytest.mark.timeout(120)

ROWS = [(1, "x", 5), (2, "y", 20), (3, "x", 30), (4, None, 40), (5, "z", None), (6, "y", 60), (7, "x", 12)]


def _sum(values: list) -> object:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _grouped() -> list[tuple]:
    kept = [r for r in ROWS if r[0] != 2]
    keys = {r[1] for r in kept}
    return [(k, sum(1 for r in kept if r[1] == k), _sum([r[2] for r in kept if r[1] == k])) for k in keys]


# query → its rows; d is the computed column c * 2
QUERIES = {
    "SELECT b, a FROM t WHERE c > 10 AND b IS NOT NULL": [
        (b, a) for a, b, c in ROWS if c is not None and c > 10 and b is not None
    ],
    "SELECT b, COUNT(*) AS n, SUM(c) AS s FROM t WHERE a <> 2 GROUP BY b": _grouped(),
    "SELECT a, d FROM t WHERE d >= 40 OR b = 'x'": [
        (a, None if c is None else c * 2) for a, b, c in ROWS if (c is not None and c * 2 >= 40) or b == "x"
    ],
}


def _sorted(rows: list) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


def _rows(t_env: TableEnvironment, query: str) -> list[tuple]:
    with t_env.execute_sql(query).collect() as rows:
        return _sorted(list(rows))


def test_pushed_filters_and_projections_give_the_rows_the_query_means(tmp_path) -> None:
    csv_dir, json_dir = tmp_path / "csv", tmp_path / "json"
    csv_dir.mkdir()
    json_dir.mkdir()
    (csv_dir / "part-0.csv").write_text("".join(f"{a},{b or ''},{'' if c is None else c}\n" for a, b, c in ROWS))
    (json_dir / "part-0.json").write_text("".join(json.dumps({"a": a, "b": b, "c": c}) + "\n" for a, b, c in ROWS))
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    for name, fmt, path in (("t", "csv", csv_dir), ("tj", "json", json_dir)):
        null = ", 'csv.null-literal' = ''" if fmt == "csv" else ""
        t_env.execute_sql(
            f"CREATE TABLE {name} (a INT, b STRING, c BIGINT, d AS c * 2) WITH ('connector' = 'filesystem', "
            f"'path' = '{path}', 'format' = '{fmt}'{null})"
        )
    first = list(QUERIES)[0]
    for query in [*QUERIES, first.replace("FROM t", "FROM tj")]:
        assert "filter=[" in t_env.explain_sql(query)  # the filter did reach the source
        assert _rows(t_env, query) == _sorted(QUERIES[query.replace("FROM tj", "FROM t")]), query
    # the same, the filter left in a Calc after the source
    t_env.get_config().set("table.optimizer.source.predicate-pushdown-enabled", "false")
    assert "filter=[" not in t_env.explain_sql(first)
    assert _rows(t_env, first) == _sorted(QUERIES[first])
