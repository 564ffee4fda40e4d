"""The row (de)serialization schemas of the formats round-trip single messages."""

from __future__ import annotations

import importlib
import sys
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common import Row, Types
from fluvial.common.errors import InvalidJobError
from fluvial.datastream.formats.avro import AvroRowDeserializationSchema, AvroRowSerializationSchema
from fluvial.datastream.formats.csv import CsvRowDeserializationSchema, CsvRowSerializationSchema
from fluvial.datastream.formats.json import JsonRowDeserializationSchema, JsonRowSerializationSchema

ROW = Types.ROW_NAMED(["id", "name", "score"], [Types.INT(), Types.STRING(), Types.DOUBLE()])
AVRO = """{"type": "record", "name": "User", "fields": [
    {"name": "id", "type": "int"}, {"name": "name", "type": "string"}, {"name": "score", "type": "double"},
    {"name": "address", "type": ["null", {"type": "record", "name": "Address",
                                          "fields": [{"name": "city", "type": "string"}]}]}]}"""

rows = st.tuples(st.integers(-(2**31), 2**31 - 1), st.text(), st.floats(allow_nan=False, allow_infinity=False))


@given(rows)
def test_json_rows_round_trip(values):
    out = JsonRowSerializationSchema.builder().with_type_info(ROW).build()
    back = JsonRowDeserializationSchema.builder().type_info(ROW).build()
    assert tuple(back.deserialize(out.serialize(Row(*values)))) == values


def test_json_missing_fields_and_parse_errors():
    lenient = JsonRowDeserializationSchema.builder().type_info(ROW).build()
    assert lenient.deserialize(b'{"id": 1}').as_dict() == {"id": 1, "name": None, "score": None}
    strict = JsonRowDeserializationSchema.builder().type_info(ROW).fail_on_missing_field().build()
    with pytest.raises(InvalidJobError, match="lacks the field name"):
        strict.deserialize(b'{"id": 1}')
    with pytest.raises(InvalidJobError, match="cannot read JSON"):
        lenient.deserialize(b"{not json")
    skipping = JsonRowDeserializationSchema.builder().type_info(ROW).ignore_parse_errors().build()
    assert skipping.deserialize(b"{not json") is None


def test_json_schema_gives_the_row_type():
    schema = (
        JsonRowDeserializationSchema.builder()
        .json_schema(
            '{"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array", '
            '"items": {"type": "string"}}, "price": {"type": "number"}}}'
        )
        .build()
    )
    row = schema.deserialize(b'{"n": 3, "tags": ["a"], "price": 1.25}')
    assert row.as_dict() == {"n": 3, "tags": ["a"], "price": Decimal("1.25")}


@given(rows)
def test_csv_rows_round_trip(values):
    out = CsvRowSerializationSchema.Builder(ROW).build()
    back = CsvRowDeserializationSchema.Builder(ROW).build()
    name = values[1].replace("\r", "").replace("\n", "")  # one message is one line
    if name == "":
        name = "x"  # the empty string is CSV's default null literal
    assert tuple(back.deserialize(out.serialize(Row(values[0], name, values[2])))) == (values[0], name, values[2])


def test_csv_row_schema_options():
    out = CsvRowSerializationSchema.Builder(ROW).set_field_delimiter(";").set_null_literal("NULL").build()
    assert out.serialize((1, None, 2.5)) == b"1;NULL;2.5\n"
    back = CsvRowDeserializationSchema.Builder(ROW).set_field_delimiter(";").set_null_literal("NULL").build()
    assert tuple(back.deserialize(b"1;NULL;2.5\n")) == (1, None, 2.5)
    with pytest.raises(InvalidJobError, match="column 'id'"):
        back.deserialize(b"x;a;1\n")
    skipping = CsvRowDeserializationSchema.Builder(ROW).set_ignore_parse_errors(True).build()
    assert skipping.deserialize(b"x,a,1\n") is None


def test_avro_rows_round_trip_with_nested_records():
    out = AvroRowSerializationSchema(avro_schema_string=AVRO)
    back = AvroRowDeserializationSchema(avro_schema_string=AVRO)
    row = back.deserialize(out.serialize(Row(id=1, name="ada", score=2.5, address=Row(city="Oslo"))))
    assert row.as_dict(recursive=True) == {"id": 1, "name": "ada", "score": 2.5, "address": {"city": "Oslo"}}
    assert back.deserialize(out.serialize((2, "bo", 1.0, None))).address is None
    with pytest.raises(InvalidJobError, match="JVM"):
        AvroRowSerializationSchema(record_class="org.example.User")
    with pytest.raises(InvalidJobError, match="not a valid Avro schema"):
        AvroRowDeserializationSchema(avro_schema_string='{"type": "nonsense"}')


@pytest.mark.parametrize(
    "module, package, extra",
    [
        ("fluvial.datastream.formats.avro", "fastavro", "avro"),
        ("fluvial.datastream.formats.parquet", "pyarrow", "parquet"),
        ("fluvial.datastream.formats.orc", "pyarrow", "orc"),
    ],
)
def test_a_format_without_its_extra_names_the_extra(monkeypatch, module, package, extra):
    for name in list(sys.modules):
        if name == package or name.startswith(package + ".") or name.startswith("fluvial.datastream.formats."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)  # import of the package fails, as when not installed
    with pytest.raises(ImportError, match=rf"pip install 'fluvial\[{extra}\]'"):
        importlib.import_module(module)
