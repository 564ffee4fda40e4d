"""One job, two sinks: a statement set holds an SQL INSERT and a Table API insert filtered by a Python UDF
(PyFlink's table multi_sink example)."""

from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment
from fluvial.table.udf import udf


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.new_instance().in_streaming_mode().build())
    table = t_env.from_elements(
        elements=[(1, "Hello"), (2, "World"), (3, "Flink"), (4, "PyFlink")], schema=["id", "data"]
    )
    for name in ("first_sink", "second_sink"):
        t_env.execute_sql(f"CREATE TABLE {name} (id BIGINT, data VARCHAR) WITH ('connector' = 'print')")

    @udf(result_type=DataTypes.BOOLEAN())
    def mentions_flink(data):
        return "Flink" in data

    statements = t_env.create_statement_set()
    statements.add_insert_sql(f"INSERT INTO first_sink SELECT * FROM {table} WHERE id <= 3")
    statements.add_insert("second_sink", table.where(mentions_flink(table.data)))
    statements.execute().wait()


if __name__ == "__main__":
    main()
