"""Event-time windows of the Table API over a DataStream with a watermark: the group windows `tumble` (5 s
windows), `slide` (5 s every 2 s) and `session` (5 s gap), an `over` window (each row with the highest price
of its name's last three rows), and `pandas` (5 s windows averaged by a vectorized udaf) — PyFlink's table
windowing/tumble_window, sliding_window, session_window, over_window and pandas/pandas_udaf examples."""

import sys

from fluvial.common import Types
from fluvial.common.time import Instant
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.table import DataTypes, Schema, StreamTableEnvironment, TableDescriptor
from fluvial.table.expressions import CURRENT_ROW, col, lit, row_interval
from fluvial.table.udf import udaf
from fluvial.table.window import Over, Session, Slide, Tumble

SALES = [
    (1000, "Alice", 110.1),
    (4000, "Bob", 30.2),
    (3000, "Alice", 20.0),
    (2000, "Bob", 53.1),
    (5000, "Alice", 13.1),
    (3000, "Bob", 3.1),
    (7000, "Bob", 16.1),
    (10000, "Alice", 20.1),
]
# the session example's rows (PyFlink's session_window example has these six)
SESSION_SALES = [
    (1000, "Alice", 110.1),
    (4000, "Bob", 30.2),
    (3000, "Alice", 20.0),
    (2000, "Bob", 53.1),
    (8000, "Bob", 16.1),
    (10000, "Alice", 20.1),
]


def main(kind):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(stream_execution_environment=env)
    ds = env.from_collection(
        [
            (Instant.of_epoch_milli(ms), name, price)
            for ms, name, price in (SESSION_SALES if kind == "session" else SALES)
        ],
        type_info=Types.ROW([Types.INSTANT(), Types.STRING(), Types.FLOAT()]),
    )
    schema = (
        Schema.new_builder()
        .column_by_expression("ts", "CAST(f0 AS TIMESTAMP(3))")
        .column("f1", DataTypes.STRING())
        .column("f2", DataTypes.FLOAT())
        .watermark("ts", "ts - INTERVAL '3' SECOND")
        .build()
    )
    table = t_env.from_data_stream(ds, schema).alias("ts", "name", "price")
    sink_schema = Schema.new_builder().column("name", DataTypes.STRING()).column("total_price", DataTypes.FLOAT())
    if kind != "over":
        sink_schema = sink_schema.column("w_start", DataTypes.TIMESTAMP_LTZ()).column(
            "w_end", DataTypes.TIMESTAMP_LTZ()
        )
    t_env.create_temporary_table("sink", TableDescriptor.for_connector("print").schema(sink_schema.build()).build())
    if kind == "over":
        over = Over.partition_by(col("name")).order_by(col("ts")).preceding(row_interval(2)).following(CURRENT_ROW)
        table.over_window(over.alias("w")).select(col("name"), col("price").max.over(col("w"))).execute_insert(
            "sink"
        ).wait()
        return
    price = col("price").sum
    if kind == "pandas":

        @udaf(result_type=DataTypes.FLOAT(), func_type="pandas")
        def mean_udaf(v):
            return v.mean()

        price = mean_udaf(col("price"))
    if kind in ("tumble", "pandas"):
        window = Tumble.over(lit(5).seconds).on(col("ts")).alias("w")
    elif kind == "session":
        window = Session.with_gap(lit(5).seconds).on(col("ts")).alias("w")
    else:
        window = Slide.over(lit(5).seconds).every(lit(2).seconds).on(col("ts")).alias("w")
    table.window(window).group_by(col("name"), col("w")).select(
        col("name"), price, col("w").start, col("w").end
    ).execute_insert("sink").wait()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tumble")
