"""Pull one field out of JSON documents with `json_value` and print id and country (PyFlink's table
process_json_data example)."""

from fluvial.table import DataTypes, EnvironmentSettings, Schema, TableDescriptor, TableEnvironment
from fluvial.table.expressions import col

DOCUMENTS = [
    (1, '{"name": "Flink", "tel": 123, "addr": {"country": "Germany", "city": "Berlin"}}'),
    (2, '{"name": "hello", "tel": 135, "addr": {"country": "China", "city": "Shanghai"}}'),
    (3, '{"name": "world", "tel": 124, "addr": {"country": "USA", "city": "NewYork"}}'),
    (4, '{"name": "PyFlink", "tel": 32, "addr": {"country": "China", "city": "Hangzhou"}}'),
]


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    table = t_env.from_elements(elements=DOCUMENTS, schema=["id", "data"])
    sink = (
        TableDescriptor.for_connector("print")
        .schema(Schema.new_builder().column("id", DataTypes.BIGINT()).column("data", DataTypes.STRING()).build())
        .build()
    )
    t_env.create_temporary_table("sink", sink)
    table.select(col("id"), col("data").json_value("$.addr.country", DataTypes.STRING())).execute_insert("sink").wait()


if __name__ == "__main__":
    main()
