"""The kafka and upsert-kafka SQL connectors against a real broker: an INSERT read back with its metadata
columns, the final table of a GROUP BY written to upsert-kafka and read back through ChangelogNormalize, and
an exactly-once INSERT whose job is restored from a checkpoint writing each row once."""

from __future__ import annotations

import datetime as dt

import pytest

from fluvial.common.restart_strategy import RestartStrategies
from fluvial.table import DataTypes, EnvironmentSettings, StreamTableEnvironment, TableEnvironment
from fluvial.table.udf import ScalarFunction, udf
from fluvial.testing import ExecutionMode, environment, first_time
from fluvial.testing.kafka import create_topic, read_committed

pytestmark = pytest.mark.timeout(90)


def t_env(parallelism: int = 1) -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", str(parallelism))
    return env


def final_table(result) -> list[tuple]:
    """A changelog applied: what a materialized view of the result holds at the end."""
    rows: list[tuple] = []
    with result.collect() as changes:
        for row in changes:
            values = tuple(row)
            if row.get_row_kind().name in ("INSERT", "UPDATE_AFTER"):
                rows.append(values)
            else:
                rows.remove(values)
    return sorted(rows)


def test_an_insert_is_read_back_with_key_value_and_metadata_columns(bootstrap):
    topic = create_topic(bootstrap, 2)
    env = t_env()
    env.execute_sql(
        f"""CREATE TABLE events (
            `user` STRING,
            amount INT,
            ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
            hdr MAP<STRING, BYTES> METADATA FROM 'headers',
            part INT METADATA FROM 'partition' VIRTUAL,
            off BIGINT METADATA FROM 'offset' VIRTUAL,
            kind STRING METADATA FROM 'timestamp-type' VIRTUAL,
            src STRING METADATA FROM 'topic' VIRTUAL,
            WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
        ) WITH (
            'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
            'properties.group.id' = 'g-{topic}', 'scan.startup.mode' = 'earliest-offset',
            'scan.bounded.mode' = 'latest-offset', 'key.format' = 'raw', 'key.fields' = 'user',
            'value.format' = 'json', 'sink.partitioner' = 'default'
        )"""
    )
    # an hour ago: records older than the broker's retention (7 days) are deleted by its retention check
    hour_ago = dt.datetime.now().replace(microsecond=0) - dt.timedelta(hours=1)
    stamps = [hour_ago + dt.timedelta(seconds=i) for i in range(3)]
    written = env.from_elements(
        [("ann", 1, stamps[0], {"h": b"x"}), ("bob", 2, stamps[1], {"h": b"y"}), ("ann", 3, stamps[2], {"h": b"z"})],
        DataTypes.ROW(
            [
                DataTypes.FIELD("user", DataTypes.STRING()),
                DataTypes.FIELD("amount", DataTypes.INT()),
                DataTypes.FIELD("ts", DataTypes.TIMESTAMP_LTZ(3)),
                DataTypes.FIELD("hdr", DataTypes.MAP(DataTypes.STRING(), DataTypes.BYTES())),
            ]
        ),
    )
    written.execute_insert("events").wait()
    rows = sorted(
        tuple(r) for r in env.execute_sql("SELECT `user`, amount, ts, hdr, part, off, kind, src FROM events").collect()
    )
    assert [(u, a, ts, h, kind, src) for u, a, ts, h, _, _, kind, src in rows] == [
        ("ann", 1, stamps[0], {"h": b"x"}, "CreateTime", topic),
        ("ann", 3, stamps[2], {"h": b"z"}, "CreateTime", topic),
        ("bob", 2, stamps[1], {"h": b"y"}, "CreateTime", topic),
    ]
    ann = {(r[4], r[5]) for r in rows if r[0] == "ann"}
    assert len({p for p, _ in ann}) == 1, "one key, one partition (the key is the message key)"
    assert sorted(o for _, o in ann) == [0, 1]
    # the value holds every physical column (value.fields-include ALL), the key the raw user name
    assert sorted(read_committed(bootstrap, topic, 3)) == sorted(
        ['{"user":"ann","amount":1}', '{"user":"bob","amount":2}', '{"user":"ann","amount":3}']
    )


def test_a_group_by_written_to_upsert_kafka_reads_back_as_its_final_table(bootstrap):
    source, target = create_topic(bootstrap, 1), create_topic(bootstrap, 2)
    env = t_env(2)
    options = f"'properties.bootstrap.servers' = '{bootstrap}', 'key.format' = 'json', 'value.format' = 'json'"
    env.execute_sql(
        f"""CREATE TABLE orders (id INT, item STRING, qty INT) WITH ('connector' = 'kafka', 'topic' = '{source}',
            {options.replace("'key.format' = 'json', ", "")}, 'scan.startup.mode' = 'earliest-offset',
            'scan.bounded.mode' = 'latest-offset')""".replace("'value.format'", "'format'")
    )
    env.execute_sql(
        f"""CREATE TABLE totals (item STRING, orders BIGINT, qty INT, PRIMARY KEY (item) NOT ENFORCED)
            WITH ('connector' = 'upsert-kafka', 'topic' = '{target}', {options}, 'scan.bounded.mode' = 'latest-offset')"""
    )
    rows = [(1, "apple", 2), (2, "pear", 1), (3, "apple", 5), (4, "fig", 1), (5, "pear", 4), (6, "apple", 1)]
    values = ", ".join(f"({i}, '{item}', {q})" for i, item, q in rows)
    env.execute_sql(f"INSERT INTO orders VALUES {values}").wait()
    env.execute_sql("INSERT INTO totals SELECT item, COUNT(*), SUM(qty) FROM orders GROUP BY item").wait()
    assert final_table(env.execute_sql("SELECT * FROM totals")) == [
        ("apple", 3, 8),
        ("fig", 1, 1),
        ("pear", 2, 5),
    ]
    # the changelog read back is a full one: a GROUP BY over it counts each item once
    assert final_table(env.execute_sql("SELECT COUNT(*) FROM totals")) == [(3,)]


N = 1000


class TagOrFailOnce(ScalarFunction):
    """id → 'row-<id>'; on the first attempt (no marker file yet), id 3N/5 raises once."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def eval(self, id):
        if id == 3 * N // 5 and first_time(self.marker):
            raise RuntimeError("injected failure after some checkpoints")
        return f"row-{id}"


def test_an_exactly_once_insert_restarted_from_a_checkpoint_writes_each_row_once(bootstrap, tmp_path):
    out = create_topic(bootstrap, 2)
    env = environment(ExecutionMode.THREADS)
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 100))
    tables = StreamTableEnvironment.create(env)
    tables.execute_sql(
        f"""CREATE TABLE ids (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '1500',
            'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '{N}')"""
    )
    tables.execute_sql(
        f"""CREATE TABLE tagged (tag STRING) WITH ('connector' = 'kafka', 'topic' = '{out}',
            'properties.bootstrap.servers' = '{bootstrap}', 'format' = 'raw', 'sink.partitioner' = 'round-robin',
            'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'sql-eo-{out}')"""
    )
    tables.create_temporary_function(
        "tag_of", udf(TagOrFailOnce(str(tmp_path / "failed")), result_type=DataTypes.STRING())
    )
    tables.execute_sql("INSERT INTO tagged SELECT tag_of(id) FROM ids").wait()
    assert (tmp_path / "failed").exists(), "the injected failure did not happen"
    written = read_committed(bootstrap, out, N)
    assert sorted(written) == sorted(f"row-{i}" for i in range(1, N + 1))
