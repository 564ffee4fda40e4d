"""The kafka and upsert-kafka table connectors without a broker: option validation, metadata columns in DDL,
how a message becomes a row and a row a message, and the plan of an upsert source."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from fluvial.common.row import RowKind, _create_row
from fluvial.table import EnvironmentSettings, Schema, TableDescriptor, TableEnvironment
from fluvial.table.catalog import metadata_columns, sink_columns
from fluvial.table.connectors.base import ConnectorContext
from fluvial.table.connectors.kafka import TableRowDeserializer, TableRowSerializer, layout
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Column
from fluvial.table.types import DataTypes

BROKER = "'properties.bootstrap.servers' = '127.0.0.1:9'"


@pytest.fixture
def t_env():
    return TableEnvironment.create(EnvironmentSettings.in_streaming_mode())


def explain_error(t_env, ddl: str, query: str = "SELECT * FROM t") -> str:
    t_env.execute_sql(ddl)
    with pytest.raises(ValidationException) as error:
        t_env.explain_sql(query)
    return str(error.value)


def kafka(columns: str, options: str = "") -> str:
    return (
        f"CREATE TABLE t ({columns}) WITH ('connector' = 'kafka', 'topic' = 'x', {BROKER}, "
        f"'scan.startup.mode' = 'earliest-offset', 'format' = 'json'{options})"
    )


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (", 'scan.startup.mode2' = 'x'", "Unsupported options found for 'kafka': scan.startup.mode2"),
        (", 'json.fail-on-missing' = 'true'", "Unsupported options found for format 'json' of 'kafka'"),
        (", 'key.format' = 'json'", "needs the key's columns: 'key.fields'"),
        (", 'key.fields' = 'a'", "'key.format' = 'json'"),
        (", 'key.fields' = 'zz', 'key.format' = 'json'", "Could not find the field 'zz' of 'key.fields'"),
        (", 'scan.startup.timestamp-millis' = '5'", "goes with 'scan.startup.mode' = 'timestamp'"),
        (", 'scan.bounded.mode' = 'forever'", "'scan.bounded.mode' is one of unbounded, earliest-offset"),
        (", 'scan.topic-partition-discovery.interval' = 'often'", "Could not parse value 'often' as a duration"),
        (", 'key.fields-prefix' = 'k_', 'key.fields' = 'a', 'key.format' = 'json'", "'EXCEPT_KEY'"),
    ],
)
def test_bad_options_are_named(t_env, extra, expected):
    assert expected in explain_error(t_env, kafka("a INT, b STRING", extra))


def test_the_default_startup_mode_needs_a_group(t_env):
    ddl = f"CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 'x', {BROKER}, 'format' = 'json')"
    assert "set 'properties.group.id'" in explain_error(t_env, ddl)


def test_specific_offsets_are_parsed_and_bad_ones_named(t_env):
    ddl = (
        "CREATE TABLE {name} (a INT) WITH ('connector' = 'kafka', 'topic' = 'x', "
        f"{BROKER}, 'format' = 'json', 'scan.startup.mode' = 'specific-offsets', "
        "'scan.startup.specific-offsets' = '{offsets}')"
    )
    t_env.execute_sql(ddl.format(name="good", offsets="partition:0,offset:4;partition:1,offset:0"))
    t_env.explain_sql("SELECT * FROM good")
    message = explain_error(t_env, ddl.format(name="t", offsets="partition:0,offst:4"))
    assert "'partition:0,offset:42;partition:1,offset:300'" in message


def test_metadata_columns_are_declared_read_and_left_out_of_the_sink_where_virtual(t_env):
    t_env.execute_sql(
        kafka(
            "ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', a INT, part INT METADATA FROM 'partition' VIRTUAL, "
            "`offset` BIGINT METADATA VIRTUAL, h MAP<STRING, BYTES> METADATA FROM 'headers'"
        )
    )
    schema = t_env._catalog.get("t").schema
    assert [(m.name, m.key, m.virtual) for m in metadata_columns(schema)] == [
        ("ts", "timestamp", False),
        ("part", "partition", True),
        ("offset", "offset", True),
        ("h", "headers", False),
    ]
    assert [c.name for c in sink_columns(schema)] == ["ts", "a", "h"]
    assert "METADATA FROM 'partition' VIRTUAL" in str(schema)
    t_env.explain_sql("SELECT * FROM t")
    extras = {r[0]: r[4] for r in t_env.execute_sql("DESCRIBE t").collect()}
    assert extras == {
        "ts": "METADATA FROM 'timestamp'",
        "a": "",
        "part": "METADATA FROM 'partition' VIRTUAL",
        "offset": "METADATA VIRTUAL",
        "h": "METADATA FROM 'headers'",
    }


def test_a_table_descriptor_declares_metadata_columns_with_the_schema_builder(t_env):
    schema = (
        Schema.new_builder()
        .column("a", DataTypes.INT())
        .column_by_metadata("o", DataTypes.BIGINT(), "offset", is_virtual=True)
        .build()
    )
    descriptor = (
        TableDescriptor.for_connector("kafka")
        .schema(schema)
        .option("topic", "x")
        .option("properties.bootstrap.servers", "127.0.0.1:9")
        .option("scan.startup.mode", "earliest-offset")
        .format("json")
        .build()
    )
    t_env.create_temporary_table("d", descriptor)
    assert [m.key for m in metadata_columns(t_env._catalog.get("d").schema)] == ["offset"]
    assert "fields=[a, o]" in t_env.explain_sql("SELECT a, o FROM d")


def test_unknown_and_unwritable_metadata_keys_and_connectors_without_metadata_are_errors(t_env):
    message = explain_error(t_env, kafka("a INT, o BIGINT METADATA FROM 'ofset'"))
    assert message == (
        "Invalid metadata key 'ofset' in column 'o' of table 't': connector 'kafka' reads the metadata keys "
        "headers, leader-epoch, offset, partition, timestamp, timestamp-type, topic"
    )
    t_env.execute_sql(kafka("a INT, o BIGINT METADATA FROM 'offset'").replace("TABLE t", "TABLE w"))
    with pytest.raises(ValidationException, match="writes the metadata keys headers, timestamp; declare the column"):
        t_env.execute_sql("INSERT INTO w VALUES (1, CAST(2 AS BIGINT))")
    t_env.execute_sql("CREATE TABLE g (a INT, o BIGINT METADATA FROM 'offset') WITH ('connector' = 'datagen')")
    with pytest.raises(ValidationException, match="connector 'datagen' provides no metadata"):
        t_env.explain_sql("SELECT * FROM g")


def test_upsert_kafka_needs_a_primary_key_and_its_scan_is_normalised(t_env):
    ddl = (
        "CREATE TABLE {name} (id INT, v STRING{pk}) WITH ('connector' = 'upsert-kafka', 'topic' = 'x', "
        f"{BROKER}, 'key.format' = 'json', 'value.format' = 'json')"
    )
    message = explain_error(t_env, ddl.format(name="t", pk=""))
    assert message.startswith("'upsert-kafka' tables require a PRIMARY KEY")
    t_env.execute_sql(ddl.format(name="u", pk=", PRIMARY KEY (id) NOT ENFORCED"))
    plan = t_env.explain_sql("SELECT v, COUNT(*) FROM u GROUP BY v")
    assert "+- ChangelogNormalize(key=[id])\n" in plan
    assert "ChangelogNormalize(key=[id])" in plan.split("== fluvial JobGraph ==")[1]


def test_an_updating_query_into_a_kafka_table_is_refused(t_env):
    t_env.execute_sql(kafka("a INT, n BIGINT"))
    t_env.execute_sql("CREATE TABLE s (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '3')")
    with pytest.raises(ValidationException, match="the 'kafka' sink takes inserts only; write them to an"):
        t_env.execute_sql("INSERT INTO t SELECT a, COUNT(*) FROM s GROUP BY a")


class Message:
    """What the reader hands a deserializer: confluent-kafka's Message, as far as it is read."""

    def __init__(self, value, key=None, headers=None, offset=7):
        self._value, self._key, self._headers, self._offset = value, key, headers, offset

    def value(self):
        return self._value

    def key(self):
        return self._key

    def headers(self):
        return self._headers

    def topic(self):
        return "x"

    def partition(self):
        return 1

    def offset(self):
        return self._offset

    def timestamp(self):
        return (1, 1_700_000_000_123)

    def leader_epoch(self):
        return 0


def context(options: dict, metadata=(), key=()) -> ConnectorContext:
    from fluvial.table.catalog import MetadataColumn

    columns = (Column("k_id", DataTypes.INT()), Column("name", DataTypes.STRING()), Column("n", DataTypes.BIGINT()))
    meta = tuple(MetadataColumn(*m) for m in metadata)
    return ConnectorContext("t", columns, options, key, metadata=meta)


KEYED = {
    "key.format": "json",
    "key.fields": "k_id",
    "key.fields-prefix": "k_",
    "value.fields-include": "EXCEPT_KEY",
    "value.format": "csv",
    "value.csv.field-delimiter": "|",
}


def test_a_message_becomes_key_value_and_metadata_columns():
    ctx = context(
        KEYED,
        metadata=[
            ("ts", "timestamp", DataTypes.TIMESTAMP_LTZ(3)),
            ("h", "headers", DataTypes.MAP(DataTypes.STRING(), DataTypes.BYTES())),
            ("o", "offset", DataTypes.BIGINT()),
            ("tt", "timestamp-type", DataTypes.STRING()),
            ("p", "partition", DataTypes.INT()),
        ],
    )
    read = TableRowDeserializer(ctx, layout("kafka", ctx), upsert=False).message_function()
    row = read(Message(b"ann|3", key=b'{"id": 5}', headers=[("h1", b"v")]))
    assert row.get_row_kind() is RowKind.INSERT
    assert list(row) == [5, "ann", 3, dt.datetime(2023, 11, 14, 22, 13, 20, 123000), {"h1": b"v"}, 7, "CreateTime", 1]
    assert read(Message(None)) is None  # a null value is skipped by a plain kafka table


def test_a_tombstone_is_a_delete_of_its_key_in_upsert_mode_and_bad_records_are_named():
    ctx = context({"key.format": "json", "value.format": "json"}, key=("k_id",))
    read = TableRowDeserializer(ctx, layout("upsert-kafka", ctx, ("k_id",)), upsert=True).message_function()
    row = read(Message(None, key=b'{"k_id": 5}'))
    assert (row.get_row_kind(), list(row)) == (RowKind.DELETE, [5, None, None])
    with pytest.raises(ValueError, match="set 'value.json.ignore-parse-errors' = 'true'"):
        read(Message(b"{not json", key=b'{"k_id": 5}'))
    lenient = context({"key.format": "json", "value.format": "json", "value.json.ignore-parse-errors": "true"})
    read = TableRowDeserializer(lenient, layout("upsert-kafka", lenient, ("k_id",)), True).message_function()
    assert read(Message(b"{not json", key=b'{"k_id": 5}')) is None


def test_an_upsert_row_is_written_as_key_and_value_a_delete_as_a_tombstone_and_update_before_not_at_all():
    ctx = context(
        {"key.format": "json", "value.format": "json"},
        metadata=[
            ("ts", "timestamp", DataTypes.TIMESTAMP_LTZ(3)),
            ("h", "headers", DataTypes.MAP(DataTypes.STRING(), DataTypes.BYTES())),
        ],
        key=("k_id",),
    )
    serializer = TableRowSerializer("out", ctx, layout("upsert-kafka", ctx, ("k_id",)), "fixed", upsert=True)
    serializer.open()
    write = serializer.record_function(3, lambda topic: 2)
    names = ["k_id", "name", "n", "ts", "h"]
    stamp = dt.datetime(2023, 11, 14, 22, 13, 20, 123000)
    topic, value, key, partition, timestamp, headers = write(
        _create_row(names, [5, "ann", 3, stamp, {"a": b"1"}], RowKind.UPDATE_AFTER)
    )
    assert (topic, json.loads(value), json.loads(key), partition) == (
        "out",
        {"k_id": 5, "name": "ann", "n": 3},
        {"k_id": 5},
        1,
    )
    assert (timestamp, headers) == (1_700_000_000_123, [("a", b"1")])
    assert write(_create_row(names, [5, "ann", 3, None, None], RowKind.UPDATE_BEFORE)) is None
    assert write(_create_row(names, [5, "ann", 3, None, None], RowKind.DELETE))[1:3] == (None, b'{"k_id":5}')


def test_a_plain_sink_without_metadata_takes_the_writers_plain_path():
    ctx = ConnectorContext("t", (Column("line", DataTypes.STRING()),), {"format": "raw"})
    serializer = TableRowSerializer("out", ctx, layout("kafka", ctx), "default", upsert=False)
    assert serializer.record_function(0, lambda topic: 1) is None
    serializer.open()
    _, value_of, key_of = serializer.compile()
    assert (value_of(_create_row(["line"], ["héllo"])), key_of) == ("héllo".encode(), None)
