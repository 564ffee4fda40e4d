"""PostgreSQL change capture: records/s from a replication slot into a discarding sink, against a bare psycopg2
replication loop reading the same changes in the same run (goal >= 0.7x).

    python -m bench.postgres_cdc [--rows 500000] [--repeat 3]

Per repeat, two fresh slots are created before ROWS rows (k BIGINT, v TEXT, n INT) are inserted in transactions of
1,000; then each side reads every insert back from its own slot. The bare loop turns each insert's text columns
into Python values with psycopg2's own typecasters (what any consumer must do) and keeps nothing; fluvial runs
`PostgresSource` (startup `latest()` on the prepared slot) → a sink that counts, as a PyFlink user writes it, and
the clock stops when the sink has counted every row. Both clocks include connecting and START_REPLICATION.
"""

from __future__ import annotations

import argparse
import struct
import threading
import time

from bench.harness import Measurement, report
from fluvial.common import Configuration
from fluvial.datastream import SinkFunction, StreamExecutionEnvironment
from services.postgres import start_postgres

TARGET = 0.7


class CountUntil(SinkFunction):
    """Counts rows and sets `done` at `expected` (thread mode: the bench holds the same object)."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.count = 0
        self.done = threading.Event()

    def invoke(self, value: object, context: object) -> None:
        self.invoke_batch([value], context)

    def invoke_batch(self, values: list, context: object) -> None:
        self.count += len(values)
        if self.count >= self.expected:
            self.done.set()


def prepare(server, table: str, rows: int, slots: list[str]) -> None:
    connection = server.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {table}")
        cursor.execute(f"CREATE TABLE {table} (k BIGINT PRIMARY KEY, v TEXT, n INT)")
        cursor.execute(f"ALTER TABLE {table} REPLICA IDENTITY FULL")
        cursor.execute(f"DROP PUBLICATION IF EXISTS {table}_pub")
        cursor.execute(f"CREATE PUBLICATION {table}_pub FOR TABLE {table}")
        for slot in slots:
            cursor.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        for start in range(0, rows, 1000):
            cursor.execute(
                f"INSERT INTO {table} SELECT g, 'value ' || g, mod(g, 1000)::int FROM generate_series(%s, %s) g",
                (start, min(start + 1000, rows) - 1),
            )
    connection.close()


def drop_slots(server, slots: list[str]) -> None:
    connection = server.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        for slot in slots:
            for _ in range(200):
                cursor.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
                found = cursor.fetchone()
                if found is None or not found[0]:
                    break
                time.sleep(0.05)
            cursor.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (slot,)
            )
    connection.close()


def bare_loop(server, slot: str, publication: str, rows: int) -> float:
    import psycopg2
    import psycopg2.extensions
    import psycopg2.extras

    started = time.perf_counter()
    connection = psycopg2.connect(server.dsn(), connection_factory=psycopg2.extras.LogicalReplicationConnection)
    cursor = connection.cursor()
    cursor.start_replication(
        slot_name=slot, decode=False, options={"proto_version": "1", "publication_names": publication}
    )
    casters = {}
    int16, int32 = struct.Struct("!h").unpack_from, struct.Struct("!i").unpack_from
    types: list = []
    seen = 0
    while seen < rows:
        message = cursor.read_message()
        if message is None:
            time.sleep(0.0005)
            continue
        data = message.payload
        tag = data[0]
        if tag == 82:  # Relation: the column types, once
            types = [psycopg2.extensions.string_types.get(oid) for oid in _relation_types(data)]
            casters = types
        elif tag == 73:  # Insert
            (count,) = int16(data, 6)
            offset = 8
            values = []
            for i in range(count):
                kind = data[offset]
                offset += 1
                if kind == 116:
                    (length,) = int32(data, offset)
                    offset += 4
                    text = data[offset : offset + length].decode()
                    offset += length
                    caster = casters[i]
                    values.append(caster(text, None) if caster is not None else text)
                else:
                    values.append(None)
            seen += 1
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed


def _relation_types(data: bytes) -> list[int]:
    offset = data.index(0, 5) + 1
    offset = data.index(0, offset) + 1
    (count,) = struct.unpack_from("!h", data, offset + 1)
    offset += 3
    oids = []
    for _ in range(count):
        offset = data.index(0, offset + 1) + 1
        oid, _ = struct.unpack_from("!Ii", data, offset)
        oids.append(oid)
        offset += 8
    return oids


def fluvial_job(server, slot: str, publication: str, table: str, rows: int) -> float:
    from fluvial.datastream.connectors.postgres import PostgresSource, StartupOptions

    source = (
        PostgresSource.builder()
        .hostname(server.host)
        .port(server.port)
        .database("postgres")
        .username("postgres")
        .table_list(table)
        .slot_name(slot)
        .publication_name(publication)
        .startup_options(StartupOptions.latest())
        .build()
    )
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    sink = CountUntil(rows)
    env.from_source(source, source_name="cdc").add_sink(sink)
    started = time.perf_counter()
    client = env.execute_async("cdc bench")
    if not sink.done.wait(600):
        raise TimeoutError(f"the job counted {sink.count} of {rows} rows")
    elapsed = time.perf_counter() - started
    client.cancel()
    try:
        client.get_job_execution_result().result(timeout=60)
    except Exception:  # noqa: BLE001 - a cancelled job ends with its cancellation
        pass
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    server = start_postgres()
    try:
        best = {"fluvial": float("inf"), "bare": float("inf")}
        for attempt in range(args.repeat):
            table = f"bench_cdc_{attempt}"
            slots = [f"{table}_fluvial", f"{table}_bare"]
            prepare(server, table, args.rows, slots)
            best["fluvial"] = min(best["fluvial"], fluvial_job(server, slots[0], f"{table}_pub", table, args.rows))
            best["bare"] = min(best["bare"], bare_loop(server, slots[1], f"{table}_pub", args.rows))
            drop_slots(server, slots)
        report(
            f"PostgreSQL CDC, {args.rows:,} inserts from a pgoutput slot into a discarding sink",
            Measurement("fluvial", args.rows, best["fluvial"]),
            Measurement("bare", args.rows, best["bare"]),
            TARGET,
            labels=("fluvial", "bare psycopg2"),
        )
    finally:
        server.close()


if __name__ == "__main__":
    main()
