"""Interval and window joins: which joins the planner makes them, their bounds, windows, and errors."""

from __future__ import annotations

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment
from fluvial.table.errors import TableException
from fluvial.table.planner.interval_join import IntervalJoin
from fluvial.table.planner.logical import Join, WindowKind, WindowSpec
from fluvial.table.planner.window_join import WindowJoin
from fluvial.table.runtime.window_join import window_bounds
from fluvial.table.sql.statements import plan_query_text


@pytest.fixture
def t_env() -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    for name in ("a", "b"):
        t_env.execute_sql(
            f"CREATE TABLE {name} (k INT, v INT, ts TIMESTAMP(3), p AS PROCTIME(), WATERMARK FOR ts AS ts) "
            "WITH ('connector' = 'datagen', 'number-of-rows' = '1')"
        )
    return t_env


def _join(t_env: TableEnvironment, query: str) -> Join:
    node = plan_query_text(t_env, query)
    while not isinstance(node, Join):
        node = node.inputs[0]
    return node


@pytest.mark.parametrize(
    ("condition", "bounds"),
    [
        ("a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts + INTERVAL '2' SECOND", (-1000, 2000)),
        ("a.ts > b.ts AND a.ts < b.ts + INTERVAL '5' SECOND", (1, 4999)),
        ("b.ts >= a.ts - INTERVAL '3' SECOND AND b.ts <= a.ts", (0, 3000)),
        ("a.ts - INTERVAL '1' SECOND <= b.ts AND a.ts >= b.ts AND a.v > b.v", (0, 1000)),
    ],
)
def test_both_bounds_on_rowtimes_make_an_interval_join(t_env: TableEnvironment, condition: str, bounds) -> None:
    join = _join(t_env, f"SELECT * FROM a JOIN b ON a.k = b.k AND {condition}")
    assert isinstance(join, IntervalJoin)
    assert (join.lower, join.upper) == bounds
    assert join.changelog_mode.value == "[I]"


def test_one_bound_or_an_updating_input_stays_a_regular_join(t_env: TableEnvironment) -> None:
    one_sided = _join(t_env, "SELECT * FROM a JOIN b ON a.k = b.k AND a.ts > b.ts")
    assert type(one_sided) is Join and one_sided.condition is not None
    grouped = _join(
        t_env,
        "SELECT * FROM (SELECT k, MAX(ts) AS ts FROM a GROUP BY k) x JOIN b ON x.k = b.k "
        "AND x.ts BETWEEN b.ts AND b.ts + INTERVAL '1' SECOND",
    )
    assert type(grouped) is Join


def test_equal_windows_on_both_sides_make_a_window_join(t_env: TableEnvironment) -> None:
    tumble = "(SELECT * FROM TABLE(TUMBLE(TABLE {t}, DESCRIPTOR(ts), INTERVAL '5' SECOND)))"
    join = _join(
        t_env,
        f"SELECT * FROM {tumble.format(t='a')} l LEFT JOIN {tumble.format(t='b')} r ON l.k = r.k "
        "AND l.window_start = r.window_start AND l.window_end = r.window_end",
    )
    assert isinstance(join, WindowJoin) and join.join_type == "LEFT"
    assert join.window.kind is WindowKind.TUMBLE and join.window.size == 5000
    only_start = _join(
        t_env,
        f"SELECT * FROM {tumble.format(t='a')} l JOIN {tumble.format(t='b')} r ON l.window_start = r.window_start",
    )
    assert type(only_start) is Join


def test_different_windows_are_refused_with_a_position(t_env: TableEnvironment) -> None:
    with pytest.raises(TableException, match=r"line 1, column \d+: a window join needs the same window"):
        plan_query_text(
            t_env,
            "SELECT * FROM (SELECT * FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR(ts), INTERVAL '5' SECOND))) l JOIN "
            "(SELECT * FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND))) r "
            "ON l.window_start = r.window_start AND l.window_end = r.window_end",
        )


def test_window_bounds_of_each_kind() -> None:
    assert window_bounds(WindowSpec(WindowKind.TUMBLE, 0, 5000), 7200) == [(5000, 10000)]
    assert window_bounds(WindowSpec(WindowKind.HOP, 0, 4000, 2000), 5000) == [(4000, 8000), (2000, 6000)]
    assert window_bounds(WindowSpec(WindowKind.CUMULATE, 0, 6000, 2000), 3000) == [(0, 4000), (0, 6000)]
    assert window_bounds(WindowSpec(WindowKind.TUMBLE, 0, 5000, 0, 1000), 500) == [(-4000, 1000)]


def test_a_window_table_keeps_rowtime_and_adds_window_time(t_env: TableEnvironment) -> None:
    table = t_env.sql_query("SELECT * FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR(ts), INTERVAL '1' MINUTE))")
    text = str(table.get_resolved_schema())
    assert "`ts` TIMESTAMP(3) *ROWTIME*" in text and "`window_time` TIMESTAMP(3) NOT NULL *ROWTIME*" in text


def test_a_comma_join_takes_its_where_as_condition(t_env: TableEnvironment) -> None:
    join = _join(t_env, "SELECT * FROM a, b WHERE a.k = b.k AND a.v > 3")
    assert (join.left_keys, join.right_keys) == ((0,), (0,)) and join.condition is not None
    with pytest.raises(TableException, match=r"line 1, column 20: a streaming join needs a condition"):
        plan_query_text(t_env, "SELECT * FROM a x, b y")


@pytest.mark.timeout(60)
def test_a_window_over_an_interval_join_counts_its_rows(tmp_path) -> None:
    """The join emits rows older than its input watermark; it holds its output watermark back by its bound so
    the window after it still counts them."""
    (tmp_path / "e.csv").write_text(
        "1,2024-01-01 00:00:01.000\n1,2024-01-01 00:00:02.000\n1,2024-01-01 00:00:09.000\n1,2024-01-01 00:00:12.000\n"
    )
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql(
        "CREATE TABLE e (k INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path / 'e.csv'}', 'format' = 'csv')"
    )
    joined = t_env.sql_query(
        "SELECT a.k, a.ts FROM e a JOIN e b ON a.k = b.k AND a.ts BETWEEN b.ts AND b.ts + INTERVAL '5' SECOND"
    )
    t_env.create_temporary_view("j", joined)
    assert t_env.sql_query("SELECT * FROM j").get_resolved_schema().get_column_names() == ["k", "ts"]
    windows = t_env.sql_query(
        "SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE j, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
        "GROUP BY window_start, window_end"
    )
    with windows.execute().collect() as rows:
        counts = sorted((str(r[0]), r[1]) for r in rows)
    assert counts == [("2024-01-01 00:00:00", 4), ("2024-01-01 00:00:10", 2)]


def test_processing_time_bounds_plan_a_processing_time_interval_join(t_env: TableEnvironment) -> None:
    join = _join(t_env, "SELECT a.v, b.v FROM a JOIN b ON a.k = b.k AND a.p BETWEEN b.p - INTERVAL '1' SECOND AND b.p")
    assert isinstance(join, IntervalJoin) and join.proctime and (join.lower, join.upper) == (-1000, 0)
    assert "isRowTime=false" in join.explain_terms()
    mixed = _join(t_env, "SELECT * FROM a JOIN b ON a.k = b.k AND a.p BETWEEN b.ts AND b.ts")
    assert type(mixed) is Join  # a processing time bounded by a rowtime stays a regular join


def test_processing_time_windows_are_a_table_but_not_a_window_join(t_env: TableEnvironment) -> None:
    from fluvial.table.planner.window_join import WindowAssign

    tumble = "(SELECT * FROM TABLE(TUMBLE(TABLE {t}, DESCRIPTOR(p), INTERVAL '5' SECOND)))"
    node = plan_query_text(t_env, f"SELECT k, window_start, window_time FROM {tumble.format(t='a')}")
    while not isinstance(node, WindowAssign):
        node = node.inputs[0]
    assert [c.type.time_attribute for c in node.schema] == [None] * len(node.schema)  # materialized, as Flink's
    with pytest.raises(TableException, match=r"column \d+: Processing time Window Join is not supported yet"):
        plan_query_text(
            t_env,
            f"SELECT * FROM {tumble.format(t='a')} l JOIN {tumble.format(t='b')} r ON l.k = r.k "
            "AND l.window_start = r.window_start AND l.window_end = r.window_end",
        )
