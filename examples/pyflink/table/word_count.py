"""Word count with the Table API: a table function splits lines into words, a GROUP BY counts them, and the
print connector writes the changelog (PyFlink's table word_count example, default input)."""

from fluvial.common import Row
from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment
from fluvial.table.expressions import col, lit
from fluvial.table.udf import udtf

LINES = [
    "To be, or not to be,--that is the question:--",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune",
    "Or to take arms against a sea of troubles,",
]


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.new_instance().in_streaming_mode().build())
    t_env.get_config().get_configuration().set_string("parallelism.default", "1")
    lines = t_env.from_elements(
        [(line,) for line in LINES], DataTypes.ROW([DataTypes.FIELD("line", DataTypes.STRING())])
    )
    t_env.execute_sql("CREATE TABLE sink (word STRING, `count` BIGINT) WITH ('connector' = 'print')")

    @udtf(result_types=[DataTypes.STRING()])
    def split(line: Row):
        yield from line[0].split()

    lines.flat_map(split).alias("word").group_by(col("word")).select(col("word"), lit(1).count).execute_insert(
        "sink"
    ).wait()


if __name__ == "__main__":
    main()
