"""User-defined aggregates on fluvial's runtime, at PyFlink's paths: `udaf` (AggregateFunction) in SQL GROUP BY,
in window aggregations and in the Table API's `group_by().select()` and `aggregate`; `udtaf`
(TableAggregateFunction) in `flat_aggregate`; `map` with a scalar udf; and the retract/merge methods Flink
requires. Expected values are worked out by hand from the input rows."""

from __future__ import annotations

import pytest

from fluvial.common import Row
from fluvial.table import (
    AggregateFunction,
    DataTypes,
    EnvironmentSettings,
    TableAggregateFunction,
    TableEnvironment,
    ValidationException,
)
from fluvial.table.expressions import col
from fluvial.table.udf import udaf, udf, udtaf

pytestmark = pytest.mark.timeout(60)


class WeightedAvg(AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def accumulate(self, accumulator, value, weight):
        accumulator[0] += value * weight
        accumulator[1] += weight

    def retract(self, accumulator, value, weight):
        accumulator[0] -= value * weight
        accumulator[1] -= weight

    def merge(self, accumulator, accumulators):
        for other in accumulators:
            accumulator[0] += other[0]
            accumulator[1] += other[1]

    def get_value(self, accumulator):
        return None if accumulator[1] == 0 else accumulator[0] // accumulator[1]

    def get_result_type(self):
        return DataTypes.BIGINT()


class NoRetract(AggregateFunction):
    def create_accumulator(self):
        return [0]

    def accumulate(self, accumulator, value):
        accumulator[0] += 1

    def get_value(self, accumulator):
        return accumulator[0]


class MinMax(AggregateFunction):
    def create_accumulator(self):
        return [None, None]

    def accumulate(self, accumulator, value):
        accumulator[0] = value if accumulator[0] is None else min(accumulator[0], value)
        accumulator[1] = value if accumulator[1] is None else max(accumulator[1], value)

    def get_value(self, accumulator):
        return Row(accumulator[0], accumulator[1])

    def get_result_type(self):
        return DataTypes.ROW([DataTypes.FIELD("lo", DataTypes.BIGINT()), DataTypes.FIELD("hi", DataTypes.BIGINT())])


class Top2(TableAggregateFunction):
    def create_accumulator(self):
        return [None, None]

    def accumulate(self, accumulator, value):
        if accumulator[0] is None or value > accumulator[0]:
            accumulator[1] = accumulator[0]
            accumulator[0] = value
        elif accumulator[1] is None or value > accumulator[1]:
            accumulator[1] = value

    def emit_value(self, accumulator):
        yield Row(accumulator[0], 1)
        if accumulator[1] is not None:
            yield Row(accumulator[1], 2)

    def get_result_type(self):
        return DataTypes.ROW([DataTypes.FIELD("v", DataTypes.BIGINT()), DataTypes.FIELD("rank", DataTypes.INT())])


ROWS = [(1, "a", 10, 1), (2, "a", 20, 3), (3, "b", 5, 2), (4, "a", 15, 1)]


@pytest.fixture
def t_env() -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    env.create_temporary_view("t", env.from_elements(ROWS, ["id", "k", "v", "w"]))
    return env


@pytest.fixture
def events(t_env: TableEnvironment, tmp_path) -> None:
    """Table `e`: three rows of key a with an event-time watermark (0 s, 1 s, 7 s)."""
    (tmp_path / "e.csv").write_text(
        "a,10,1,2024-01-01 00:00:00.000\na,20,3,2024-01-01 00:00:01.000\na,30,1,2024-01-01 00:00:07.000\n"
    )
    t_env.execute_sql(
        "CREATE TABLE e (k STRING, v INT, w INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
        f"WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/e.csv', 'format' = 'csv')"
    )


def changes(table) -> list[tuple]:
    with table.execute().collect() as rows:
        return [(r.get_row_kind().short_string(), *r) for r in rows]


def test_udaf_in_sql_group_by_emits_flinks_changelog(t_env):
    t_env.create_temporary_function("wavg", udaf(WeightedAvg()))
    assert changes(t_env.sql_query("SELECT k, wavg(v, w) AS a FROM t GROUP BY k")) == [
        ("+I", "a", 10),
        ("-U", "a", 10),
        ("+U", "a", 17),  # (10 + 60) // 4
        ("+I", "b", 5),  # then (70 + 15) // 5 is 17 again: an unchanged result emits nothing, as in Flink
    ]


def test_udaf_over_an_updating_input_retracts(t_env):
    t_env.create_temporary_function("wavg", udaf(WeightedAvg()))
    query = "SELECT wavg(c, 1) FROM (SELECT k, COUNT(*) AS c FROM t GROUP BY k)"
    final = changes(t_env.sql_query(query))[-1]
    assert final == ("+U", 2)  # counts 3 and 1 → (3 + 1) // 2


def test_udaf_without_retract_over_an_updating_input_is_refused(t_env):
    t_env.create_temporary_function("n", udaf(NoRetract(), result_type=DataTypes.BIGINT()))
    with pytest.raises(ValidationException, match="must implement retract"):
        t_env.sql_query("SELECT n(c) FROM (SELECT k, COUNT(*) AS c FROM t GROUP BY k)")


def test_udaf_in_a_tumbling_and_a_session_window(t_env, events):
    t_env.create_temporary_function("wavg", udaf(WeightedAvg()))
    tumble = "SELECT window_start, wavg(v, w) FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end"
    assert sorted(r[2] for r in changes(t_env.sql_query(tumble))) == [17, 30]
    session = "SELECT k, window_end, wavg(v, w) FROM TABLE(SESSION(TABLE e PARTITION BY k, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY k, window_start, window_end"
    assert sorted(r[3] for r in changes(t_env.sql_query(session))) == [17, 30]
    t_env.create_temporary_function("n", udaf(NoRetract(), result_type=DataTypes.BIGINT()))
    with pytest.raises(ValidationException, match="must implement merge"):
        t_env.sql_query(session.replace("wavg(v, w)", "n(v)"))


def test_table_api_group_by_select_and_aggregate_with_a_row_result(t_env):
    t = t_env.from_path("t")
    wavg = udaf(WeightedAvg())
    assert changes(t.group_by(col("k")).select(col("k"), wavg(col("v"), col("w")).alias("a")))[-2] == ("+U", "a", 17)
    minmax = udaf(MinMax())
    aggregated = t.group_by(col("k")).aggregate(minmax(col("v")).alias("x", "y")).select(col("*"))
    assert aggregated.get_schema().get_field_names() == ["k", "x", "y"]
    # the fourth row (a, 15) changes neither bound of a: nothing is emitted for it
    assert changes(aggregated) == [("+I", "a", 10, 10), ("-U", "a", 10, 10), ("+U", "a", 10, 20), ("+I", "b", 5, 5)]
    assert changes(t.aggregate(minmax(col("v"))).select(col("lo"), col("hi")))[-1] == ("+U", 5, 20)


def test_udtaf_flat_aggregate_retracts_the_groups_previous_rows(t_env):
    t = t_env.from_path("t")
    top2 = udtaf(Top2())
    assert changes(t.group_by(col("k")).flat_aggregate(top2(col("v"))).select(col("k"), col("v"), col("rank"))) == [
        ("+I", "a", 10, 1),
        ("-D", "a", 10, 1),
        ("+I", "a", 20, 1),
        ("+I", "a", 10, 2),
        ("+I", "b", 5, 1),
        ("-D", "a", 20, 1),
        ("-D", "a", 10, 2),
        ("+I", "a", 20, 1),
        ("+I", "a", 15, 2),
    ]


def test_map_with_a_row_result_and_with_the_whole_row(t_env):
    t = t_env.from_path("t")
    pair = DataTypes.ROW([DataTypes.FIELD("d", DataTypes.BIGINT()), DataTypes.FIELD("u", DataTypes.STRING())])
    double = udf(lambda i, k: Row(i * 2, k.upper()), result_type=pair)
    assert [r[1:] for r in changes(t.map(double(col("id"), col("k"))))] == [(2, "A"), (4, "A"), (6, "B"), (8, "A")]
    total = udf(lambda row: row.v + row.id, result_type=DataTypes.BIGINT())
    mapped = t.map(total).alias("s")
    assert mapped.get_schema().get_field_names() == ["s"]
    assert [r[1] for r in changes(mapped)] == [11, 22, 8, 19]


def test_pandas_udaf_runs_once_per_window_with_series(t_env, events):
    sizes = []

    def weighted_mean(v, w):
        sizes.append(len(v))  # runs in this process: the local executor calls it in the task's thread
        return float((v * w).sum() / w.sum())

    t_env.create_temporary_function("wmean", udaf(weighted_mean, result_type=DataTypes.DOUBLE(), func_type="pandas"))
    tumble = (
        "SELECT window_start, wmean(v, w) FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '5' SECOND)) "
        "GROUP BY window_start, window_end"
    )
    assert sorted(r[2] for r in changes(t_env.sql_query(tumble))) == [17.5, 30.0]
    assert sorted(sizes) == [1, 2]
    with pytest.raises(ValidationException, match="window aggregation or an OVER window only"):
        t_env.sql_query("SELECT k, wmean(v, w) FROM e GROUP BY k")


def test_udafs_in_over_windows_general_and_pandas(t_env, events):
    t_env.create_temporary_function("wavg", udaf(WeightedAvg()))
    t_env.create_temporary_function("vmax", udaf(lambda v: v.max(), result_type=DataTypes.INT(), func_type="pandas"))
    frame = "OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"
    query = f"SELECT v, wavg(v, w) {frame}, vmax(v) {frame} FROM e"
    assert [r[1:] for r in changes(t_env.sql_query(query))] == [(10, 10, 10), (20, 17, 20), (30, 22, 30)]
    t_env.create_temporary_function("n", udaf(NoRetract(), result_type=DataTypes.BIGINT()))
    with pytest.raises(ValidationException, match="must implement retract"):
        t_env.sql_query(f"SELECT n(v) {frame} FROM e")


class CountAndSum(AggregateFunction):
    """PyFlink's basic_operations example: called with no arguments, so `accumulate` gets one Row of every column."""

    def create_accumulator(self):
        return Row(0, 0)

    def accumulate(self, accumulator, row):
        accumulator[0] += 1
        accumulator[1] += row.v * row.w

    def retract(self, accumulator, row):
        accumulator[0] -= 1
        accumulator[1] -= row.v * row.w

    def get_value(self, accumulator):
        return Row(accumulator[0], accumulator[1])

    def get_result_type(self):
        return DataTypes.ROW([DataTypes.FIELD("cnt", DataTypes.BIGINT()), DataTypes.FIELD("s", DataTypes.BIGINT())])


class LargestWeight(TableAggregateFunction):
    def create_accumulator(self):
        return [None]

    def accumulate(self, accumulator, row):
        if accumulator[0] is None or row.w > accumulator[0]:
            accumulator[0] = row.w

    def emit_value(self, accumulator):
        yield Row(accumulator[0])

    def get_result_type(self):
        return DataTypes.ROW([DataTypes.FIELD("top", DataTypes.BIGINT())])


def test_aggregate_and_flat_aggregate_of_a_function_called_with_no_arguments_pass_it_the_whole_row(t_env):
    t = t_env.from_path("t")
    aggregated = t.group_by(col("k")).aggregate(udaf(CountAndSum()).alias("cnt", "s")).select(col("*"))
    final = {r[1]: r[2:] for r in changes(aggregated) if r[0] in ("+I", "+U")}
    expected = {}
    for _, k, v, w in ROWS:
        count, total = expected.get(k, (0, 0))
        expected[k] = (count + 1, total + v * w)
    assert final == expected
    tops = changes(t.group_by(col("k")).flat_aggregate(udtaf(LargestWeight())).select(col("k"), col("top")))
    assert {r[1]: r[2] for r in tops if r[0] == "+I"} == {
        k: max(w for _, kk, _, w in ROWS if kk == k) for k in expected
    }
