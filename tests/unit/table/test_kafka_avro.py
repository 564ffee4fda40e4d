"""Kafka tables' avro and avro-confluent formats without a broker (a row to a message and back, Flink's bytes,
option errors), and upsert-kafka's reducing sink buffer run by the sink operator in the harness."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.connectors.sink import Sink, SinkWriter
from fluvial.datastream.formats.avro_registry import MockSchemaRegistry
from fluvial.table import EnvironmentSettings, TableEnvironment
from fluvial.table.connectors.base import ConnectorContext
from fluvial.table.connectors.kafka import TableRowDeserializer, TableRowSerializer, layout
from fluvial.table.connectors.upsert_buffer import ReducingUpsertSink
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Column
from fluvial.table.types import DataTypes as T
from fluvial.testing import OperatorHarness

pytestmark = pytest.mark.timeout(30)

COLUMNS = (
    Column("id", T.INT(False)),
    Column("price", T.DECIMAL(10, 2)),
    Column("ts", T.TIMESTAMP(3)),
    Column("tags", T.ARRAY(T.STRING())),
    Column("attrs", T.MAP(T.STRING(), T.BIGINT())),
    Column("addr", T.ROW([T.FIELD("city", T.STRING()), T.FIELD("zip", T.INT())])),
    Column("day", T.DATE()),
)
NAMES = [c.name for c in COLUMNS]
FULL = [
    7,
    Decimal("12.50"),
    dt.datetime(2024, 1, 2, 3, 4, 5, 6000),
    ["a", None],
    {"k": 1, "n": None},
    Row(city="Oslo", zip=None),
    dt.date(2024, 1, 2),
]
EMPTY = [8, None, None, None, None, None, None]


class Message:
    def __init__(self, value, key=None):
        self._value, self._key = value, key

    def value(self):
        return self._value

    def key(self):
        return self._key


def round_trip(options: dict, rows: list[list], key: tuple[str, ...] = ()) -> tuple[list[tuple], list]:
    """rows → messages by the table's serializer → rows by its deserializer; the messages too."""
    ctx = ConnectorContext("t", COLUMNS, {"topic": "orders", **options}, key)
    shape = layout("upsert-kafka" if key else "kafka", ctx, key or None)
    serializer = TableRowSerializer("orders", ctx, shape, "default", upsert=bool(key))
    serializer.open()
    _, value_of, key_of = serializer.compile()
    messages = [
        Message(value_of(row), None if key_of is None else key_of(row))
        for row in (_create_row(NAMES, values) for values in rows)
    ]
    read = TableRowDeserializer(ctx, shape, upsert=bool(key)).message_function()
    return [(read(m).get_row_kind(), list(read(m))) for m in messages], messages


@pytest.mark.parametrize(
    "options",
    [
        {"format": "avro"},
        {"format": "avro", "avro.encoding": "json"},
        {"key.format": "avro", "key.fields": "id", "value.format": "avro", "value.avro.encoding": "binary"},
        {"value.format": "avro-confluent", "value.avro-confluent.url": "mock://kafka-avro-unit"},
    ],
)
def test_rows_with_nulls_nested_types_decimals_and_timestamps_read_back_as_written(options):
    rows, _ = round_trip(options, [FULL, EMPTY])
    assert rows == [(RowKind.INSERT, FULL), (RowKind.INSERT, EMPTY)]


def test_a_message_is_flinks_schemaless_binary_record_or_its_json_encoding():
    # id INT NOT NULL: zigzag 7 = 0x0e; a nullable column is the union ["null", T]: branch 1, or 0 for NULL;
    # tags: branch 1, a block of 1 item (nullable: branch 1, length 1, 'a'), the end of the blocks
    _, (message,) = round_trip({"format": "avro"}, [[7, None, None, ["a"], None, None, None]])
    assert message.value() == b"\x0e" + b"\x00" * 2 + b"\x02" + b"\x02" + b"\x02\x02a" + b"\x00" + b"\x00" * 3
    _, (message,) = round_trip({"format": "avro", "avro.encoding": "json"}, [[7, None, None, ["a"], None, None, None]])
    assert json.loads(message.value())["tags"] == {"array": [{"string": "a"}]}


def test_upsert_keys_and_values_in_avro_confluent_register_their_subjects_and_a_tombstone_deletes():
    registry = "mock://kafka-avro-subjects"
    options = {
        "key.format": "avro-confluent",
        "key.avro-confluent.url": registry,
        "value.format": "avro-confluent",
        "value.avro-confluent.url": registry,
    }
    rows, messages = round_trip(options, [FULL], key=("id",))
    assert rows == [(RowKind.INSERT, FULL)]
    assert set(MockSchemaRegistry.named("kafka-avro-subjects").subjects) == {"orders-key", "orders-value"}
    assert messages[0].key()[:1] == b"\x00"  # the Confluent wire format: magic byte, schema id, record
    ctx = ConnectorContext("t", COLUMNS, {"topic": "orders", **options}, ("id",))
    read = TableRowDeserializer(ctx, layout("upsert-kafka", ctx, ("id",)), upsert=True).message_function()
    deleted = read(Message(None, messages[0].key()))
    assert (deleted.get_row_kind(), list(deleted)) == (RowKind.DELETE, [7, *[None] * 6])
    with pytest.raises(ValueError, match="not in the Confluent wire format"):
        read(Message(b"\x07garbage", messages[0].key()))


@pytest.mark.parametrize("encoding", ["binary", "json"])
def test_a_message_that_is_not_a_record_of_the_schema_and_a_row_that_does_not_fit_it_are_named(encoding):
    ctx = ConnectorContext("t", COLUMNS, {"topic": "x", "format": "avro", "avro.encoding": encoding})
    read = TableRowDeserializer(ctx, layout("kafka", ctx), upsert=False).message_function()
    with pytest.raises(ValueError, match="Failed to deserialize avro value b'\\\\x0e'"):
        read(Message(b"\x0e"))
    serializer = TableRowSerializer("x", ctx, layout("kafka", ctx), "default", upsert=False)
    serializer.open()
    with pytest.raises(ValueError, match=r"Cannot write \[None, .* as the message value: .*\bid\b.*not fit"):
        serializer.compile()[1](_create_row(NAMES, [None] * 7))  # id is INT NOT NULL


@pytest.fixture
def t_env():
    return TableEnvironment.create(EnvironmentSettings.in_streaming_mode())


@pytest.mark.parametrize(
    ("columns", "options", "expected"),
    [
        ("a INT", "'format' = 'avro', 'avro.encoding' = 'xml'", "'avro.encoding' is 'binary' or 'json', got 'xml'"),
        ("a INT", "'format' = 'avro', 'avro.codec' = 'snappy'", "the format takes avro.encoding"),
        ("a MAP<INT, STRING>", "'format' = 'avro'", "Avro maps have character keys"),
        ("a TIMESTAMP_LTZ(3)", "'format' = 'avro'", "'avro.timestamp_mapping.legacy' = 'false'"),
        ("a INT", "'format' = 'avro-confluent'", "needs the schema registry's URL: 'avro-confluent.url'"),
        ("a INT", "'format' = 'protobuf'", "the formats are avro, avro-confluent, csv, json, raw"),
    ],
)
def test_bad_avro_options_and_types_are_named_when_the_table_is_used(t_env, columns, options, expected):
    t_env.execute_sql(
        f"CREATE TABLE t ({columns}) WITH ('connector' = 'kafka', 'topic' = 'x', "
        f"'properties.bootstrap.servers' = '127.0.0.1:9', 'scan.startup.mode' = 'earliest-offset', {options})"
    )
    with pytest.raises(ValidationException) as error:
        t_env.explain_sql("SELECT * FROM t")
    assert expected in str(error.value)


def test_the_buffer_options_go_together(t_env):
    t_env.execute_sql(
        "CREATE TABLE t (k INT, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', "
        "'topic' = 'x', 'properties.bootstrap.servers' = '127.0.0.1:9', 'key.format' = 'json', "
        "'value.format' = 'json', 'sink.buffer-flush.max-rows' = '10')"
    )
    with pytest.raises(ValidationException, match="must be set to be greater than zero together"):
        t_env.execute_sql("INSERT INTO t VALUES (1, 2)")


# --------------------------------------------------------------------------------------------- the buffer


class Recording(Sink):
    """A sink whose writers record what reaches them (class-level: the harness runs in this process)."""

    written: list[list[tuple]] = []
    flushes: list[bool] = []

    def create_writer(self, task_info, restored_state=None):
        return RecordingWriter()


class RecordingWriter(SinkWriter):
    def write_batch(self, values):
        Recording.written.append([(r.get_row_kind().short_string(), *r) for r in values])

    def flush(self, end_of_input):
        Recording.flushes.append(end_of_input)


def change(kind: RowKind, key: str, value: int) -> Row:
    return _create_row(["k", "v"], [key, value], kind)


def test_the_buffer_keeps_the_last_change_per_key_and_flushes_on_size_interval_checkpoint_and_end():
    Recording.written, Recording.flushes = [], []
    sink = ReducingUpsertSink(Recording(), (0,), max_rows=3, interval_ms=1000)
    harness = OperatorHarness.of(lambda s: s.sink_to(sink))
    with harness.open():
        ins, UB, UA, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE
        harness.process_elements([change(ins, "a", 1), change(UB, "a", 1), change(UA, "a", 2), change(ins, "b", 1)])
        assert Recording.written == []  # two keys held, below max-rows
        harness.process_element(change(ins, "c", 1))  # the third key: the buffer is written
        assert Recording.written == [[("+U", "a", 2), ("+I", "b", 1), ("+I", "c", 1)]]
        harness.process_element(change(UA, "c", 5))
        harness.advance_processing_time(999)
        assert len(Recording.written) == 1
        harness.advance_processing_time(1)  # the interval passed: written without a record arriving
        assert Recording.written[1:] == [[("+U", "c", 5)]]
        harness.process_elements([change(ins, "d", 1), change(D, "d", 1)])
        harness.snapshot(1)  # the checkpoint barrier flushes the buffer before the writer prepares its commit
        assert (Recording.written[2:], Recording.flushes) == ([[("-D", "d", 1)]], [False])
        harness.process_element(change(ins, "e", 1))
        harness.end_input()
        assert (Recording.written[3:], Recording.flushes[1:]) == ([[("+I", "e", 1)]], [True])
