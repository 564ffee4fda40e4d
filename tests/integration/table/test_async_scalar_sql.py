"""Async scalar functions in a job: SQL (SELECT and WHERE, with the table.exec.async-scalar.* options SET) and
the Table API (select, where), the later rows' calls completing first, the results in input order."""

from __future__ import annotations

import asyncio

import pytest

from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment
from fluvial.table.expressions import col
from fluvial.table.udf import AsyncScalarFunction, udf

pytestmark = pytest.mark.timeout(60)

ROWS = [(i, f"user{i}") for i in range(12)]


class Lookup(AsyncScalarFunction):
    """A later row answers sooner, so calls complete out of input order."""

    def open(self, function_context):
        self.prefix = "db:"

    async def eval(self, user_id, name):
        await asyncio.sleep((len(ROWS) - user_id) * 0.004)
        return f"{self.prefix}{name}"


@udf(result_type=DataTypes.BOOLEAN())
async def is_even(n):
    await asyncio.sleep(0.001 * (n % 3))
    return n % 2 == 0


def test_sql_and_table_api_async_calls_keep_input_order():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.create_temporary_function("lookup", udf(Lookup(), result_type=DataTypes.STRING()))
    t_env.create_temporary_function("is_even", is_even)
    t_env.create_temporary_view("users", t_env.from_elements(ROWS, ["id", "name"]))
    t_env.execute_sql("SET 'table.exec.async-scalar.max-concurrent-operations' = '4'")
    t_env.execute_sql("SET 'table.exec.async-scalar.timeout' = '30 s'")
    t_env.execute_sql("SET 'table.exec.async-scalar.retry-strategy' = 'NO_RETRY'")

    sql = "SELECT id, UPPER(lookup(id, name)) AS info FROM users WHERE is_even(id) AND id > 0"
    with t_env.execute_sql(sql).collect() as results:
        assert [tuple(r) for r in results] == [(i, f"DB:USER{i}") for i in range(2, 12, 2)]

    users = t_env.from_path("users")
    table = users.where(is_even(col("id"))).select(col("id"), udf(Lookup(), result_type="STRING")(col("id"), "x"))
    with table.execute().collect() as results:
        assert [tuple(r) for r in results] == [(i, "db:x") for i in range(0, 12, 2)]
