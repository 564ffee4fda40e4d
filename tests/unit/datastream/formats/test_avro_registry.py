"""Avro in the Confluent wire format with a schema registry (the in-process `mock://` one): the header, a round
trip of Rows, reading with a newer reader schema, and clear errors."""

from __future__ import annotations

import json
import pickle
import uuid

import pytest

from fluvial.common import Row
from fluvial.datastream.formats.avro_registry import (
    ConfluentRegistryAvroDeserializationSchema,
    ConfluentRegistryAvroSerializationSchema,
    MockSchemaRegistry,
)

V1 = json.dumps(
    {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
)
V2 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "name", "type": "string"},
            {"name": "email", "type": ["null", "string"], "default": None},
        ],
    }
)


@pytest.fixture
def url() -> str:
    return f"mock://{uuid.uuid4().hex}"


def test_records_carry_the_magic_byte_and_the_registered_id_and_read_back(url):
    writer = ConfluentRegistryAvroSerializationSchema.for_generic("users-value", V1, url)
    data = writer.serialize(Row(id=7, name="ada"))
    assert data[:5] == b"\x00\x00\x00\x00\x01"  # magic byte 0, schema id 1
    reader = pickle.loads(pickle.dumps(ConfluentRegistryAvroDeserializationSchema.for_generic(V1, url)))
    assert reader.deserialize(data) == Row(id=7, name="ada")
    assert MockSchemaRegistry.named(url.removeprefix("mock://")).subjects == {"users-value": [1]}


def test_a_newer_reader_schema_reads_records_written_with_the_older_one(url):
    old = ConfluentRegistryAvroSerializationSchema.for_generic("users-value", V1, url).serialize(Row(id=1, name="a"))
    new = ConfluentRegistryAvroSerializationSchema.for_generic("users-value", V2, url)
    newer = new.serialize(Row(id=2, name="b", email="b@x"))
    assert newer[1:5] == b"\x00\x00\x00\x02"
    reader = ConfluentRegistryAvroDeserializationSchema.for_generic(V2, url)
    assert reader.deserialize(old) == Row(id=1, name="a", email=None)
    assert reader.deserialize(newer) == Row(id=2, name="b", email="b@x")


def test_bad_input_is_named(url):
    reader = ConfluentRegistryAvroDeserializationSchema.for_generic(V1, url)
    with pytest.raises(ValueError, match="Confluent wire format"):
        reader.deserialize(b"plain text")
    with pytest.raises(Exception, match="no schema with id 9"):
        reader.deserialize(b"\x00\x00\x00\x00\x09\x02")
    with pytest.raises(Exception, match="http://, https:// or mock://"):
        ConfluentRegistryAvroSerializationSchema.for_generic("s", V1, "ftp://x").serialize(Row(id=1, name="a"))
