"""Async scalar functions in SQL (PyFlink's table async_scalar_function example): an AsyncScalarFunction class
standing in for a database lookup with a cache, and a udf on an `async def` function standing in for a REST
call, each called on ten random datagen rows; their calls wait concurrently and the rows print in input order."""

import asyncio
import random

from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment
from fluvial.table.udf import AsyncScalarFunction, udf


class UserLookup(AsyncScalarFunction):
    """A lookup by key: each key's value is fetched once (a pretend 100 ms query), then answered from a cache."""

    def open(self, function_context):
        self.cache = {}

    async def eval(self, key: str) -> str:
        if key not in self.cache:
            await asyncio.sleep(0.1)
            self.cache[key] = f"db_value_for_{key}"
        return self.cache[key]

    def close(self):
        self.cache.clear()


@udf(result_type=DataTypes.STRING())
async def product_price(product_id: str) -> str:
    await asyncio.sleep(0.05)  # a pretend API call
    return f"Product {product_id}: ${random.randint(10, 1000)}"


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.create_temporary_function("async_db_lookup", udf(UserLookup(), result_type=DataTypes.STRING()))
    t_env.create_temporary_function("async_api_call", product_price)
    t_env.execute_sql(
        """
        CREATE TABLE source_table (user_id STRING, product_id STRING, score INT) WITH (
            'connector' = 'datagen',
            'number-of-rows' = '10',
            'fields.user_id.length' = '1',
            'fields.product_id.length' = '1',
            'fields.score.min' = '50',
            'fields.score.max' = '100'
        )
        """
    )
    print("Created source table with datagen connector\n")

    print("Example Query 1: Using async_db_lookup")
    t_env.sql_query("SELECT user_id, async_db_lookup(user_id) AS user_info FROM source_table").execute().print()

    print("Example Query 2: Using async_api_call")
    t_env.sql_query("SELECT product_id, async_api_call(product_id) AS product_info FROM source_table").execute().print()


if __name__ == "__main__":
    main()
