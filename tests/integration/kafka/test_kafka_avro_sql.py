"""Kafka tables in the avro formats against a real broker: rows with NULLs, nested types, decimals and
timestamps written by SQL and read back; a GROUP BY written through upsert-kafka's reducing buffer in
avro-confluent (an in-process registry) and read back as its final table."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from fluvial.common.row import Row
from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment
from fluvial.testing.kafka import create_topic

pytestmark = pytest.mark.timeout(90)


def test_avro_rows_are_written_and_read_back_and_an_upsert_avro_table_holds_the_final_rows(bootstrap):
    events, totals = create_topic(bootstrap, 2), create_topic(bootstrap, 1)
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    env.execute_sql(
        f"""CREATE TABLE events (
            id INT NOT NULL, item STRING, price DECIMAL(10, 2), ts TIMESTAMP(3), tags ARRAY<STRING>,
            attrs MAP<STRING, INT>, addr ROW<city STRING, zip INT>
        ) WITH (
            'connector' = 'kafka', 'topic' = '{events}', 'properties.bootstrap.servers' = '{bootstrap}',
            'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
            'key.format' = 'avro', 'key.fields' = 'id', 'value.format' = 'avro'
        )"""
    )
    expected = [
        (1, "apple", Decimal("1.50"), dt.datetime(2024, 1, 2, 3, 4, 5, 678000), ["red", "big"], {"n": 1},
         Row(city="Oslo", zip=150)),
        (2, "pear", None, None, None, None, None),
        (3, "apple", Decimal("2.25"), dt.datetime(2024, 1, 2, 3, 4, 6), ["green"], {"n": 2},
         Row(city="Bergen", zip=5000)),
    ]  # fmt: skip
    schema = env.from_path("events").get_schema()
    row_type = DataTypes.ROW(
        [DataTypes.FIELD(n, t) for n, t in zip(schema.get_field_names(), schema.get_field_data_types())]
    )
    env.from_elements(expected, row_type).execute_insert("events").wait()
    rows = sorted(tuple(r) for r in env.execute_sql("SELECT * FROM events").collect())
    assert rows == expected
    registry = f"mock://{totals}"
    env.execute_sql(
        f"""CREATE TABLE totals (item STRING, n BIGINT, price DECIMAL(10, 2), PRIMARY KEY (item) NOT ENFORCED)
            WITH ('connector' = 'upsert-kafka', 'topic' = '{totals}', 'properties.bootstrap.servers' = '{bootstrap}',
            'key.format' = 'avro-confluent', 'key.avro-confluent.url' = '{registry}',
            'value.format' = 'avro-confluent', 'value.avro-confluent.url' = '{registry}',
            'sink.buffer-flush.max-rows' = '100', 'sink.buffer-flush.interval' = '1 h',
            'scan.bounded.mode' = 'latest-offset')"""
    )
    env.execute_sql("INSERT INTO totals SELECT item, COUNT(*), SUM(price) FROM events GROUP BY item").wait()
    changes = [(r.get_row_kind().short_string(), *r) for r in env.execute_sql("SELECT * FROM totals").collect()]
    # the buffer wrote one message per key at end of input, so the topic holds no earlier change of apple
    assert sorted(changes) == [("+I", "apple", 2, Decimal("3.75")), ("+I", "pear", 1, None)]
