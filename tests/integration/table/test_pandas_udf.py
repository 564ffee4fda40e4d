"""Vectorized (pandas) scalar UDFs in select, where and SQL, compared with PyFlink 2.3's output for the same
program (recorded below: no example PyFlink ships uses a scalar pandas udf), and their errors.

PyFlink's program was this file's `run` with `pyflink.` imports, at parallelism 1 (pandas 2.2 there; the
argument dtypes it shows are what its Arrow batches give: BIGINT with a NULL as float64, STRING as object)."""

from __future__ import annotations

import pandas as pd
import pytest

from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment
from fluvial.table.errors import ValidationException
from fluvial.table.expressions import col
from fluvial.table.udf import ScalarFunction, udf

pytestmark = pytest.mark.timeout(60)

PYFLINK_OUTPUT = [
    [
        "<Row('apple', 4.5, 'APPLE:float64:float64:object', 3)>",
        "<Row('fig', None, 'FIG:float64:float64:object', 5)>",
        "<Row('kiwi', 0.25, 'KIWI:float64:float64:object', 1)>",
        "<Row('pear', None, 'PEAR:float64:float64:object', None)>",
        "<Row('plum', -8.0, 'PLUM:float64:float64:object', 0)>",
    ],
    ["<Row('apple', 4)>", "<Row('fig', None)>"],
    ["<Row('plum', -7.0)>"],
]


@udf(result_type=DataTypes.DOUBLE(), func_type="pandas")
def weighted(price: pd.Series, qty: pd.Series) -> pd.Series:
    return price * qty


@udf(result_type=DataTypes.STRING(), func_type="pandas")
def describe(name: pd.Series, qty: pd.Series, price: pd.Series) -> pd.Series:
    return name.str.upper() + ":" + price.dtype.name + ":" + qty.dtype.name + ":" + name.dtype.name


class Clip(ScalarFunction):
    def eval(self, v):
        return v.clip(lower=0, upper=5)


def fruit(t_env: TableEnvironment):
    return t_env.from_elements(
        [("apple", 3, 1.5), ("pear", None, 2.0), ("fig", 7, None), ("kiwi", 1, 0.25), ("plum", -2, 4.0)],
        DataTypes.ROW(
            [
                DataTypes.FIELD("name", DataTypes.STRING()),
                DataTypes.FIELD("qty", DataTypes.BIGINT()),
                DataTypes.FIELD("price", DataTypes.DOUBLE()),
            ]
        ),
    )


def run() -> list[list[str]]:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    clip = udf(Clip(), result_type=DataTypes.BIGINT(), func_type="pandas")
    is_big = udf(lambda q: q > 2, result_type=DataTypes.BOOLEAN(), func_type="pandas")
    table = fruit(t_env)
    out = []
    r = table.select(
        col("name"),
        weighted(col("price"), col("qty")).alias("w"),
        describe(col("name"), col("qty"), col("price")).alias("d"),
        clip(col("qty")).alias("c"),
    )
    out.append(sorted(str(row) for row in r.execute().collect()))
    r = table.where(is_big(col("qty"))).select(
        col("name"), clip(weighted(col("price"), col("qty")).cast(DataTypes.BIGINT())).alias("c")
    )
    out.append(sorted(str(row) for row in r.execute().collect()))
    t_env.create_temporary_function("weighted", weighted)
    t_env.create_temporary_view("fruit", table)
    r = t_env.execute_sql(
        "SELECT name, weighted(price, CAST(qty AS DOUBLE)) + 1 AS w FROM fruit "
        "WHERE qty IS NOT NULL AND weighted(price, CAST(2 AS DOUBLE)) > 3"
    )
    out.append(sorted(str(row) for row in r.collect()))
    return out


def test_pandas_udfs_give_pyflinks_output():
    assert run() == PYFLINK_OUTPUT


def test_a_pandas_udf_is_called_once_per_buffer_not_per_row():
    """A rows-per-call count comes back with each row: the function saw Series longer than one row."""

    @udf(result_type=DataTypes.BIGINT(), func_type="pandas")
    def batch_size(v: pd.Series) -> pd.Series:
        return pd.Series([len(v)] * len(v))

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    table = t_env.from_elements([(i,) for i in range(200)], ["v"])
    sizes = [r[0] for r in table.select(batch_size(col("v"))).execute().collect()]
    assert len(sizes) == 200 and max(sizes) > 1


def test_a_result_of_the_wrong_length_is_an_error():
    shorter = udf(lambda v: v.head(1), result_type=DataTypes.BIGINT(), func_type="pandas")
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    table = t_env.from_elements([(1,), (2,), (3,)], ["v"])
    with pytest.raises(Exception, match="is not equal to the input length"):
        list(table.select(shorter(col("v"))).execute().collect())


def test_func_type_is_checked():
    with pytest.raises(ValueError, match="'general' or 'pandas'"):
        udf(lambda v: v, result_type=DataTypes.BIGINT(), func_type="arrow")


def test_map_with_a_pandas_udf_takes_and_gives_a_dataframe():
    """PyFlink's documented pandas `map`; its output on PyFlink 2.3 was [Row(2, 'HiHi'), Row(3, 'HelloHello')]."""
    row = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT()), DataTypes.FIELD("data", DataTypes.STRING())])

    @udf(result_type=row, func_type="pandas")
    def pandas_func(x: pd.DataFrame) -> pd.DataFrame:
        return pd.concat([x.id + 1, x.data * 2], axis=1)

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    table = t_env.from_elements([(1, "Hi"), (2, "Hello")], ["id", "data"])
    mapped = table.map(pandas_func)
    assert mapped.get_schema().get_field_names() == ["id", "data"]
    assert sorted(str(r) for r in mapped.execute().collect()) == ["<Row(2, 'HiHi')>", "<Row(3, 'HelloHello')>"]


# PyFlink 2.3's output of the same join program (its SplitPythonConditionFromJoinRule: an inner join's pandas
# condition filters the joined rows after the join; an outer join's is "Cannot generate a valid execution plan")
PYFLINK_JOIN_OUTPUT = [
    ["<Row(1, 5)>", "<Row(3, 2)>"],
    ["<Row(1, 5)>", "<Row(3, 2)>", "<Row(5, 2)>", "<Row(5, 8)>"],
]


@udf(result_type=DataTypes.BOOLEAN(), func_type="pandas")
def over_limit(amount: pd.Series, limit: pd.Series) -> pd.Series:
    if not (isinstance(amount, pd.Series) and isinstance(limit, pd.Series)):
        raise TypeError("a pandas udf gets one Series per argument")
    return amount > limit


def test_a_pandas_udf_in_an_inner_join_condition_filters_the_joined_rows_as_pyflink():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    orders = t_env.from_elements(
        [(1, "a", 10), (2, "a", 3), (3, "b", 7), (4, "c", 1), (5, "b", 9)], ["id", "k", "amount"]
    )
    limits = t_env.from_elements([("a", 5), ("b", 8), ("b", 2), ("c", None)], ["k2", "lim"])
    t_env.create_temporary_view("orders", orders)
    t_env.create_temporary_view("limits", limits)
    t_env.create_temporary_function("over_limit", over_limit)
    query = "SELECT o.id, l.lim FROM orders o JOIN limits l ON o.k = l.k2 AND over_limit(o.amount, l.lim) AND o.id <> 5"
    plan = t_env.explain_sql(query)
    join_line = next(line for line in plan.splitlines() if "Join(joinType=[InnerJoin]" in line)
    assert "Calc(where=[over_limit(amount, lim)])" in plan and "over_limit" not in join_line
    outputs = []
    for result in (
        t_env.execute_sql(query),
        orders.join(limits, (col("k") == col("k2")) & over_limit(col("amount"), col("lim")))
        .select(col("id"), col("lim"))
        .execute(),
    ):
        with result.collect() as rows:
            outputs.append(sorted(str(r) for r in rows))
    assert outputs == PYFLINK_JOIN_OUTPUT
    with pytest.raises(
        ValidationException, match=r"column 49: a pandas \(vectorized\) function in the condition of a LEFT"
    ):
        t_env.execute_sql("SELECT o.id FROM orders o LEFT JOIN limits l ON o.k = l.k2 AND over_limit(o.amount, l.lim)")
