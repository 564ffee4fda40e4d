"""The Table API's Session group windows, Over windows and streaming order_by on fluvial's runtime, against
what PyFlink 2.3 gives for the same queries in SQL (the differential suite's `session_partition_by`,
`over_rows_bounded_sum`, `over_range_interval_sum` and `order_by_rowtime`), plus the plans Flink refuses."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from fluvial.table import EnvironmentSettings, TableEnvironment, ValidationException
from fluvial.table.expressions import CURRENT_ROW, UNBOUNDED_RANGE, col, lit, row_interval
from fluvial.table.window import Over, Session

from .differential.cases import TABLES
from .differential.normalize import normalize_row

pytestmark = pytest.mark.timeout(60)

EXPECTED = json.loads((Path(__file__).parent / "differential" / "expected.json").read_text())


@pytest.fixture
def t_env(tmp_path: Path) -> TableEnvironment:
    ddl, file_name, content = TABLES["orders"]
    (tmp_path / file_name).write_text(content)
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    env.execute_sql(ddl.replace("{dir}", str(tmp_path)))
    return env


def changes(table) -> Counter:
    with table.execute().collect() as rows:
        return Counter(json.dumps([r.get_row_kind().short_string(), *normalize_row(list(r))]) for r in rows)


def expected(case_id: str) -> Counter:
    return Counter(json.dumps(r) for r in EXPECTED[case_id]["rows"])


def test_session_group_window_per_key_equals_flinks_session_tvf(t_env):
    orders = t_env.from_path("orders")
    table = (
        orders.window(Session.with_gap(lit(3).seconds).on(col("ts")).alias("w"))
        .group_by(col("customer"), col("w"))
        .select(col("customer"), col("w").start, col("w").end, col("id").count, col("amount").sum)
    )
    assert changes(table) == expected("session_partition_by")


def test_over_window_rows_frame_equals_flinks_sql(t_env):
    orders = t_env.from_path("orders")
    window = Over.partition_by(col("customer")).order_by(col("ts")).preceding(row_interval(1)).alias("w")
    table = orders.over_window(window).select(col("id"), col("customer"), col("amount").sum.over(col("w")))
    assert changes(table) == expected("over_rows_bounded_sum")


def test_over_window_range_frame_equals_flinks_sql(t_env):
    orders = t_env.from_path("orders")
    window = Over.partition_by(col("category")).order_by(col("ts")).preceding(lit(5).seconds).alias("w")
    table = orders.over_window(window).select(col("id"), col("category"), col("qty").sum.over(col("w")))
    assert changes(table) == expected("over_range_interval_sum")


def test_over_window_unbounded_range_is_the_default_frame(t_env):
    orders = t_env.from_path("orders")
    window = Over.partition_by(col("category")).order_by(col("ts")).alias("w")
    unbounded = Over.partition_by(col("category")).order_by(col("ts")).preceding(UNBOUNDED_RANGE).alias("w")
    select = (col("id"), col("id").count.over(col("w")), col("qty").max.over(col("w")))
    assert changes(orders.over_window(window).select(*select)) == changes(orders.over_window(unbounded).select(*select))


def test_over_window_refuses_what_flink_refuses(t_env):
    orders = t_env.from_path("orders")
    by_id = Over.order_by(col("id")).preceding(row_interval(2)).alias("w")
    with pytest.raises(ValidationException, match="time attribute"):
        orders.over_window(by_id).select(col("qty").sum.over(col("w")))
    following = Over.order_by(col("ts")).preceding(row_interval(2)).following(row_interval(1)).alias("w")
    with pytest.raises(ValidationException, match="current row"):
        orders.over_window(following).select(col("qty").sum.over(col("w")))
    window = Over.order_by(col("ts")).preceding(CURRENT_ROW).alias("w")
    with pytest.raises(ValidationException, match="'v' is not defined"):
        orders.over_window(window).select(col("qty").sum.over(col("v")))


def test_order_by_a_time_attribute_equals_flinks_temporal_sort(t_env):
    orders = t_env.from_path("orders")
    with orders.select(col("id"), col("customer"), col("ts")).order_by(col("ts").asc).execute().collect() as rows:
        changelog = [[r.get_row_kind().short_string(), *normalize_row(list(r))] for r in rows]
    assert changelog == EXPECTED["order_by_rowtime"]["rows"]
    with pytest.raises(ValidationException, match="non-time-attribute"):
        orders.order_by(col("amount"))
    with pytest.raises(ValidationException, match="descending"):
        orders.order_by(col("ts").desc)
