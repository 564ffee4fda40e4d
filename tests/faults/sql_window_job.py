"""A SQL window aggregation for the fault tests, run as its own process so a test can SIGKILL it mid-run and
run it again from a retained checkpoint.

    python sql_window_job.py CHECKPOINT_DIR OUTPUT_DIR N window|join [RESTORE_PATH]

`window`: datagen ids 1..N (a replayable sequence, throttled) with event time `id * 10` ms and a watermark on
it → TUMBLE(1 s) → COUNT(*), SUM(id) per window → the filesystem connector (csv, exactly once).
`join`: two such sequences, the second at a different rate, joined on id (a regular join: both sides' rows
in keyed state) → `id,id * 2` per id → the filesystem connector.
At parallelism 2 the TaskManagers are processes of their own. Checkpoints every 50 ms, two retained. When the
job finishes, `OUTPUT_DIR.done` is written.
"""

from __future__ import annotations

import sys

from fluvial.common import Configuration
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.table import StreamTableEnvironment


def main(checkpoint_dir: str, output_dir: str, n: int, query: str, restore_path: str | None = None) -> None:
    configuration = Configuration()
    if restore_path:
        configuration.set_string("execution.savepoint.path", restore_path)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(50)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_dir))
    config.set_num_retained(2)
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(f"""CREATE TABLE ids (
        id BIGINT,
        ts AS TO_TIMESTAMP_LTZ(id * 10, 3),
        WATERMARK FOR ts AS ts
    ) WITH ('connector' = 'datagen', 'rows-per-second' = '1000', 'fields.id.kind' = 'sequence',
            'fields.id.start' = '1', 'fields.id.end' = '{n}')""")
    if query == "window":
        t_env.execute_sql(f"""CREATE TABLE windows (window_start TIMESTAMP(3), c BIGINT, s BIGINT)
            WITH ('connector' = 'filesystem', 'path' = '{output_dir}', 'format' = 'csv')""")
        t_env.execute_sql("""INSERT INTO windows
            SELECT window_start, COUNT(*), SUM(id)
            FROM TABLE(TUMBLE(TABLE ids, DESCRIPTOR(ts), INTERVAL '1' SECOND))
            GROUP BY window_start, window_end""").wait()
    else:
        t_env.execute_sql(f"""CREATE TABLE doubled (id BIGINT, twice BIGINT) WITH ('connector' = 'datagen',
            'rows-per-second' = '700', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1',
            'fields.id.end' = '{n}', 'fields.twice.kind' = 'sequence', 'fields.twice.start' = '1',
            'fields.twice.end' = '{n}')""")
        t_env.execute_sql(f"""CREATE TABLE pairs (id BIGINT, twice BIGINT)
            WITH ('connector' = 'filesystem', 'path' = '{output_dir}', 'format' = 'csv')""")
        t_env.execute_sql("INSERT INTO pairs SELECT i.id, d.twice * 2 FROM ids i JOIN doubled d ON i.id = d.id").wait()
    with open(output_dir.rstrip("/") + ".done", "w") as done:
        done.write("finished\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
