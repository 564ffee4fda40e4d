"""The JDBC sink: records/s written into PostgreSQL by a job, against a bare psycopg2 loop writing the same rows
in the same run.

    python -m bench.jdbc_sink [--rows 200000] [--repeat 3]

Rows (k INT, v TEXT) from a NumberSequenceSource, mapped to Rows as a PyFlink user writes it, into
`JdbcSink.sink` (INSERT, batches of 5,000, at least once) and `JdbcSink.exactly_once_sink` (one prepared
transaction per checkpoint, every 1 s). The baselines: the same INSERT through `cursor.executemany` in batches of
5,000 with a commit each (the bare loop the issue names), and through `psycopg2.extras.execute_batch` (what the
sink uses: many statements per round trip). Each side writes into a freshly truncated table.
"""

from __future__ import annotations

import argparse

from bench.harness import best_of
from fluvial.common import Configuration, Row, Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExactlyOnceOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from services.postgres import start_postgres

ROW = Types.ROW_NAMED(["k", "v"], [Types.INT(), Types.STRING()])
BATCH = 5000


def to_row(n: int) -> Row:
    return Row(n, f"value {n}")


def truncate(server, table: str) -> None:
    connection = server.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {table} (k INT, v TEXT)")
        cursor.execute(f"TRUNCATE {table}")
    connection.close()


def count(server, table: str) -> int:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        (rows,) = cursor.fetchone()
    connection.close()
    return rows


def job(server, table: str, rows: int, exactly_once: bool) -> None:
    truncate(server, table)
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    options = JdbcConnectionOptions(server.jdbc_url, user_name="postgres")
    statement = f"INSERT INTO {table} (k, v) VALUES (?, ?)"
    if exactly_once:
        env.enable_checkpointing(1000)
        sink = JdbcSink.exactly_once_sink(
            statement,
            ROW,
            options,
            JdbcExecutionOptions.builder().with_batch_size(BATCH).with_max_retries(0).build(),
            JdbcExactlyOnceOptions.builder().with_transaction_id_prefix("bench").build(),
        )
    else:
        sink = JdbcSink.sink(statement, ROW, options, JdbcExecutionOptions.builder().with_batch_size(BATCH).build())
    env.from_source(NumberSequenceSource(1, rows), source_name="numbers").map(to_row, output_type=ROW).add_sink(sink)
    env.execute("jdbc bench")
    assert count(server, table) == rows


def bare(server, table: str, rows: int, batch_call: bool) -> None:
    import psycopg2.extras

    truncate(server, table)
    connection = server.connect()
    statement = f"INSERT INTO {table} (k, v) VALUES (%s, %s)"
    with connection.cursor() as cursor:
        for start in range(1, rows + 1, BATCH):
            values = [(n, f"value {n}") for n in range(start, min(start + BATCH, rows + 1))]
            if batch_call:
                psycopg2.extras.execute_batch(cursor, statement, values, page_size=500)
            else:
                cursor.executemany(statement, values)
            connection.commit()
    connection.close()
    assert count(server, table) == rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    server = start_postgres()
    try:
        n = args.rows
        runs = [
            best_of("JdbcSink.sink", n, lambda: job(server, "bench_jdbc", n, False), args.repeat),
            best_of("exactly_once_sink", n, lambda: job(server, "bench_jdbc", n, True), args.repeat),
            best_of("bare executemany", n, lambda: bare(server, "bench_jdbc", n, False), args.repeat),
            best_of("bare execute_batch", n, lambda: bare(server, "bench_jdbc", n, True), args.repeat),
        ]
        print(f"JDBC sink, {n:,} rows into PostgreSQL")
        executemany, execute_batch = runs[2].rate, runs[3].rate
        for run in runs:
            print(
                f"  {run.name:<20} {run.rate:>12,.0f} records/s  ({run.seconds:.3f} s)  "
                f"{run.rate / executemany:5.2f}x executemany  {run.rate / execute_batch:5.2f}x execute_batch"
            )
    finally:
        server.close()


if __name__ == "__main__":
    main()
