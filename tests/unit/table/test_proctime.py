"""Processing-time attributes: `pt AS PROCTIME()` in DDL and in a Schema, `col("pt").proctime` in
from_data_stream, and the operators planned over them — window TVFs, group windows, OVER frames — driven on the
operator harness's manual clock, so their results are exact. Each test plans a real query and harnesses the
operator its plan node translates to (with its input rows built in that node's input shape)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.common.typeinfo import Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.table import DataTypes, Schema, StreamTableEnvironment
from fluvial.table.errors import ValidationException
from fluvial.table.expressions import col, lit
from fluvial.table.planner.logical import OverAggregate, RelNode, WindowAggregate
from fluvial.table.planner.translate import Translator
from fluvial.table.window import Tumble
from fluvial.testing.harness import OperatorHarness

pytestmark = pytest.mark.timeout(30)

DDL = (
    "CREATE TABLE src (k STRING, v INT, pt AS PROCTIME()) "
    "WITH ('connector' = 'datagen', 'number-of-rows' = '1', 'fields.k.length' = '1')"
)


def t_env() -> StreamTableEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    t = StreamTableEnvironment.create(env)
    t.execute_sql(DDL)
    return t


def find(node: RelNode, kind: type) -> Any:
    while not isinstance(node, kind):
        node = node.inputs[0]
    return node


def harness_of(t: StreamTableEnvironment, node: RelNode) -> OperatorHarness:
    stream = Translator(t._env).translate(node)
    return OperatorHarness(stream._transformation.operator, "planned").open()


def feed(h: OperatorHarness, node: RelNode, **values: Any) -> None:
    """One input row of `node`: the given columns, and the proctime column's materialised (wall) value."""
    names = node.input.names
    row = [values.get(n, dt.datetime(2000, 1, 1, tzinfo=dt.UTC)) for n in names]
    h.process_element(_create_row(names, row, RowKind.INSERT))


def fields(rows: list[Row], *positions: int) -> list[tuple]:
    return [tuple(r[i] for i in positions) for r in rows]


def test_proctime_column_is_a_processing_time_attribute():
    t = t_env()
    described = {r[0]: r[1] for r in t.execute_sql("DESCRIBE src").collect()}
    assert described["pt"] == "TIMESTAMP_LTZ(3) *PROCTIME*"


def test_schema_column_by_expression_proctime():
    env = StreamExecutionEnvironment.get_execution_environment()
    t = StreamTableEnvironment.create(env)
    ds = env.from_collection([("a", 1)], type_info=Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()]))
    schema = Schema.new_builder().column("k", DataTypes.STRING()).column("v", DataTypes.INT())
    table = t.from_data_stream(ds, schema.column_by_expression("pt", "PROCTIME()").build())
    assert table._node.names == ["k", "v", "pt"]
    assert table._node.schema[2].type.time_attribute == "PROCTIME"


def test_from_data_stream_appends_a_proctime_field():
    env = StreamExecutionEnvironment.get_execution_environment()
    t = StreamTableEnvironment.create(env)
    ds = env.from_collection([("a", 1)], type_info=Types.ROW([Types.STRING(), Types.INT()]))
    table = t.from_data_stream(ds, col("k"), col("v"), col("pt").proctime)
    assert table._node.names == ["k", "v", "pt"]
    assert table._node.schema[2].type.time_attribute == "PROCTIME"
    windowed = table.window(Tumble.over(lit(10).seconds).on(col("pt")).alias("w"))
    result = windowed.group_by(col("w"), col("k")).select(
        col("k"), col("v").sum.alias("total"), col("w").end.alias("e"), col("w").proctime.alias("t")
    )
    assert result._node.schema[3].type.time_attribute == "PROCTIME"  # w.proctime: the window's time attribute
    node = find(result._node, WindowAggregate)
    h = harness_of(t, node)
    h.set_processing_time(1_000)
    for k, v in [("a", 1), ("b", 2), ("a", 3)]:
        feed(h, node, k=k, **{"$f1": v})
    assert h.take_values() == []
    h.set_processing_time(10_000)
    assert sorted(fields(h.take_values(), 0, 1)) == [("a", 4), ("b", 2)]


@pytest.mark.parametrize(
    "window, fired",
    [
        (
            "TUMBLE(TABLE src, DESCRIPTOR(pt), INTERVAL '10' SECOND)",
            [("a", 0, 10_000, 2), ("a", 10_000, 20_000, 1)],
        ),
        (
            "HOP(TABLE src, DESCRIPTOR(pt), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
            [("a", -5_000, 5_000, 1), ("a", 0, 10_000, 2), ("a", 5_000, 15_000, 2), ("a", 10_000, 20_000, 1)],
        ),
        (
            "CUMULATE(TABLE src, DESCRIPTOR(pt), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
            [("a", 0, 5_000, 1), ("a", 0, 10_000, 2), ("a", 10_000, 15_000, 1), ("a", 10_000, 20_000, 1)],
        ),
        (
            "SESSION(TABLE src PARTITION BY k, DESCRIPTOR(pt), INTERVAL '5' SECOND)",
            [("a", 1_000, 6_000, 1), ("a", 7_000, 12_000, 1), ("a", 12_000, 17_000, 1)],  # closed at 11 999 ms
        ),
    ],
)
def test_window_tvfs_over_proctime_fire_on_the_operator_clock(window: str, fired: list[tuple]):
    t = t_env()
    query = (
        f"SELECT k, window_start, window_end, COUNT(*) AS c FROM TABLE({window}) GROUP BY k, window_start, window_end"
    )
    node = find(t.sql_query(query)._node, WindowAggregate)
    h = harness_of(t, node)
    for now in (1_000, 7_000, 12_000):  # the rows' own pt values (wall time) play no part
        h.set_processing_time(now)
        feed(h, node, k="a")
    h.set_processing_time(30_000)
    out = [(r[0], millis(r[2]), millis(r[3]), r[1]) for r in h.take_values()]
    assert sorted(out) == sorted(fired)


def test_proctime_window_state_survives_a_snapshot_and_restore():
    t = t_env()
    query = "SELECT k, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(pt), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end"
    node = find(t.sql_query(query)._node, WindowAggregate)
    h = harness_of(t, node)
    h.set_processing_time(1_000)
    feed(h, node, k="a")
    feed(h, node, k="a")
    snapshot = h.snapshot()
    h.close()
    restored = Translator(t._env).translate(node)
    h2 = OperatorHarness(restored._transformation.operator, "planned")
    h2.open([snapshot])
    h2.set_processing_time(2_000)
    feed(h2, node, k="a")
    h2.set_processing_time(10_000)
    assert fields(h2.take_values(), 0, 1) == [("a", 3)]


def millis(value: dt.datetime) -> int:
    return int((value.replace(tzinfo=None) - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


def over_query(frame: str) -> str:
    return f"SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY pt {frame}) AS total FROM src"


@pytest.mark.parametrize(
    "frame, totals",
    [
        ("ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", [1, 3, 7, 15]),
        ("RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", [3, 3, 7, 15]),
        ("ROWS BETWEEN 1 PRECEDING AND CURRENT ROW", [1, 3, 6, 12]),
        ("RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW", [3, 3, 7, 12]),
    ],
)
def test_over_frames_by_proctime(frame: str, totals: list[int]):
    """Rows 1 and 2 arrive in the same millisecond (peers in a RANGE frame), 4 a second later, 8 at 3.5 s (a
    2-second RANGE frame then holds 4 and 8 only)."""
    t = t_env()
    node = find(t.sql_query(over_query(frame))._node, OverAggregate)
    h = harness_of(t, node)
    h.set_processing_time(1_000)
    feed(h, node, k="a", v=1, **{"$f3": 1})
    feed(h, node, k="a", v=2, **{"$f3": 2})
    h.set_processing_time(2_000)
    feed(h, node, k="a", v=4, **{"$f3": 4})
    h.set_processing_time(3_500)
    feed(h, node, k="a", v=8, **{"$f3": 8})
    h.set_processing_time(4_000)
    assert fields(h.take_values(), 1, 4) == list(zip([1, 2, 4, 8], totals))


def test_an_ordinary_timestamp_still_cannot_order_an_over_window():
    t = StreamTableEnvironment.create(StreamExecutionEnvironment.get_execution_environment())
    t.execute_sql("CREATE TABLE plain (k STRING, ts TIMESTAMP(3)) WITH ('connector' = 'datagen')")
    with pytest.raises(ValidationException, match="PROCTIME"):
        t.sql_query("SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY ts) FROM plain")


def test_a_proctime_window_table_without_its_aggregation_materializes_its_times():
    t = t_env()  # as Flink 2.3: the rows' windows are fixed by their arrival; no time attribute is left
    table = t.sql_query(
        "SELECT k, pt, window_start, window_time FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(pt), INTERVAL '10' SECOND))"
    )
    assert [c.type.time_attribute for c in table._node.schema] == [None] * 4


@pytest.mark.parametrize(
    "order, changes",
    [
        ("pt", [("+I", "a", 1), ("+I", "b", 3)]),  # the first row to arrive, inserts only
        ("pt DESC", [("+I", "a", 1), ("-U", "a", 1), ("+U", "a", 2), ("+I", "b", 3)]),  # each row replaces
    ],
)
def test_deduplication_by_proctime_keeps_the_first_or_last_arrival(order: str, changes: list[tuple]):
    from fluvial.table.planner.logical import ChangelogMode, Deduplicate

    t = t_env()
    query = (
        f"SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY {order}) AS rn FROM src) WHERE rn = 1"
    )
    node = find(t.sql_query(query)._node, Deduplicate)
    assert (node.changelog_mode is ChangelogMode.INSERT_ONLY) == (order == "pt")
    h = harness_of(t, node)
    for k, v in [("a", 1), ("a", 2), ("b", 3)]:
        feed(h, node, k=k, v=v)
    assert [(r.get_row_kind().short_string(), r[0], r[1]) for r in h.take_values()] == changes


def test_table_api_over_window_by_proctime():
    from fluvial.table.expressions import row_interval
    from fluvial.table.window import Over

    env = StreamExecutionEnvironment.get_execution_environment()
    t = StreamTableEnvironment.create(env)
    ds = env.from_collection([("a", 1)], type_info=Types.ROW([Types.STRING(), Types.INT()]))
    table = t.from_data_stream(ds, col("k"), col("v"), col("pt").proctime)
    window = Over.partition_by(col("k")).order_by(col("pt")).preceding(row_interval(1)).alias("w")
    result = table.over_window(window).select(col("k"), col("v"), col("v").sum.over(col("w")))
    node = find(result._node, OverAggregate)
    h = harness_of(t, node)
    for now, v in [(1_000, 1), (1_000, 2), (2_000, 4)]:
        h.set_processing_time(now)
        feed(h, node, k="a", v=v, **{n: v for n in node.input.names if n.startswith("$")})
    h.set_processing_time(3_000)
    assert [r[-1] for r in h.take_values()] == [1, 3, 6]


def test_order_by_proctime_emits_each_millisecond_sorted_by_the_other_columns():
    from fluvial.table.planner.logical import TemporalSort

    t = t_env()
    node = find(t.sql_query("SELECT k, v, pt FROM src ORDER BY pt, v DESC")._node, TemporalSort)
    h = harness_of(t, node)
    h.set_processing_time(1_000)
    for v in (1, 3, 2):
        feed(h, node, k="a", v=v)
    h.set_processing_time(1_001)
    feed(h, node, k="a", v=9)
    assert [r[1] for r in h.take_values()] == [3, 2, 1]
    h.set_processing_time(1_002)
    assert [r[1] for r in h.take_values()] == [9]
