"""A table becomes a DataStream and back (PyFlink's mixing_use_of_datastream_and_table example, with a
sequence instead of random data so its output is known): datagen rows, a UDF, to_data_stream, a map,
from_data_stream, the print connector."""

from fluvial.common import Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.table import DataTypes, Schema, StreamTableEnvironment, TableDescriptor
from fluvial.table.udf import udf


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(stream_execution_environment=env)
    source = (
        TableDescriptor.for_connector("datagen")
        .schema(Schema.new_builder().column("id", DataTypes.BIGINT()).column("data", DataTypes.STRING()).build())
        .option("fields.id.kind", "sequence")
        .option("fields.id.start", "1")
        .option("fields.id.end", "5")
        .option("fields.data.kind", "sequence")
        .option("fields.data.start", "100")
        .option("fields.data.end", "104")
        .build()
    )
    t_env.create_temporary_table("source", source)
    t_env.create_temporary_table(
        "sink",
        TableDescriptor.for_connector("print")
        .schema(Schema.new_builder().column("a", DataTypes.BIGINT()).build())
        .build(),
    )

    @udf(result_type=DataTypes.BIGINT())
    def length(data):
        return len(data)

    table = t_env.from_path("source")
    table = table.select(table.id, length(table.data))
    ds = t_env.to_data_stream(table).map(lambda row: row[0] + row[1], output_type=Types.LONG())
    t_env.from_data_stream(ds, Schema.new_builder().column("f0", DataTypes.BIGINT()).build()).execute_insert(
        "sink"
    ).wait()


if __name__ == "__main__":
    main()
