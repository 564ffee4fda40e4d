"""Mirror a PostgreSQL table into another, exactly once: change capture (PostgresSource) → JdbcSink.

    make services                             # prints: export FLUVIAL_POSTGRES=127.0.0.1:PORT
    export FLUVIAL_POSTGRES=127.0.0.1:PORT    # in another shell
    python examples/postgres_mirror.py [--seconds 5]

The example creates `orders` (with a few rows) and `orders_copy`, then runs the job: the snapshot of `orders` and
every change after it become upserts into `orders_copy` — a delete sets `deleted` (the JDBC sink runs one
statement for every record, as in Flink, so the statement says what a change does). While the job runs, the
example changes `orders`; after `--seconds` it cancels the job and prints the copy. A real job runs until
cancelled and restores from its checkpoint; this example drops its replication slot first, so every run
starts with a fresh snapshot.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from fluvial.common import RowKind, Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExactlyOnceOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from fluvial.datastream.connectors.postgres import PostgresSource

SLOT = "orders_mirror"
PREFIX = "orders_mirror"  # the sink's prepared transactions: a cancelled run may leave its last one prepared
COPY = Types.ROW_NAMED(["id", "item", "qty", "deleted"], [Types.INT(), Types.STRING(), Types.INT(), Types.BOOLEAN()])


def setup(connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (SLOT,)
        )
        cursor.execute("SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, %s)", (PREFIX,))
        for (gid,) in cursor.fetchall():  # it holds locks on orders_copy: roll it back before dropping the table
            cursor.execute(f"ROLLBACK PREPARED '{gid}'")
        cursor.execute("DROP TABLE IF EXISTS orders, orders_copy")
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, item TEXT NOT NULL, qty INT NOT NULL)")
        cursor.execute("ALTER TABLE orders REPLICA IDENTITY FULL")  # -U and -D rows carry every column
        cursor.execute("CREATE TABLE orders_copy (id INT PRIMARY KEY, item TEXT, qty INT, deleted BOOLEAN)")
        cursor.execute("INSERT INTO orders VALUES (1, 'apples', 3), (2, 'pears', 1), (3, 'plums', 12)")


def change(connection) -> None:
    """Once the snapshot reached the copy (committed with a checkpoint), change the table."""
    connection.autocommit = True
    with connection.cursor() as cursor:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            cursor.execute("SELECT count(*) FROM orders_copy")
            if cursor.fetchone()[0] >= 3:
                break
            time.sleep(0.05)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE orders SET qty = 5 WHERE id = 1")
        cursor.execute("DELETE FROM orders WHERE id = 2")
        cursor.execute("INSERT INTO orders VALUES (4, 'figs', 7)")


def as_copy(row):
    deleted = row.get_row_kind() is RowKind.DELETE
    return row["id"], row["item"], row["qty"], deleted


def main() -> int:
    parser = argparse.ArgumentParser(description="mirror a PostgreSQL table through fluvial")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    address = os.environ.get("FLUVIAL_POSTGRES")
    if not address:
        print("set FLUVIAL_POSTGRES=host:port (make services prints it)", file=sys.stderr)
        return 2
    host, port = address.rsplit(":", 1)

    import psycopg2

    connection = psycopg2.connect(host=host, port=int(port), dbname="postgres", user="postgres")
    connection.autocommit = True
    setup(connection)

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(500)
    source = (
        PostgresSource.builder()
        .hostname(host)
        .port(int(port))
        .database("postgres")
        .username("postgres")
        .table_list("public.orders")
        .slot_name(SLOT)
        .build()
    )
    sink = JdbcSink.exactly_once_sink(
        "INSERT INTO orders_copy (id, item, qty, deleted) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET item = EXCLUDED.item, qty = EXCLUDED.qty, deleted = EXCLUDED.deleted",
        COPY,
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(f"jdbc:postgresql://{address}/postgres")
        .with_user_name("postgres")
        .build(),
        JdbcExecutionOptions.builder().with_batch_size(1000).with_max_retries(0).build(),
        JdbcExactlyOnceOptions.builder().with_transaction_id_prefix(PREFIX).build(),
    )
    (
        env.from_source(source, source_name="orders")
        .filter(lambda row: row.get_row_kind() is not RowKind.UPDATE_BEFORE)
        .map(as_copy, output_type=COPY)
        .add_sink(sink)
    )

    client = env.execute_async("mirror orders")
    changer = threading.Thread(
        target=change,
        args=(psycopg2.connect(host=host, port=int(port), dbname="postgres", user="postgres"),),
        daemon=True,
    )
    changer.start()
    time.sleep(args.seconds)
    client.cancel()
    try:
        client.get_job_execution_result().result(timeout=60)
    except Exception:  # noqa: BLE001 - a cancelled job ends with its cancellation
        pass
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, item, qty, deleted FROM orders_copy ORDER BY id")
        for row in cursor.fetchall():
            print(*row)
        cursor.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s AND NOT active",
            (SLOT,),
        )
    connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
