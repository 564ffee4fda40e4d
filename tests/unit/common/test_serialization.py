"""PyFlink's serialization schemas and the small `pyflink.common` values: each round-trips and refuses what it
cannot represent with a message naming the fix."""

from __future__ import annotations

import io
import pickle

import cloudpickle
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common import (
    ByteArraySchema,
    ConfigOptions,
    Configuration,
    Encoder,
    InputDependencyConstraint,
    Instant,
    Row,
    SimpleStringSchema,
    TypeSerializer,
)
from fluvial.common.errors import InvalidJobError
from fluvial.common.serialization import RowFieldExtractorSchema
from fluvial.common.serializer import PickleSerializer


@given(st.text())
def test_simple_string_schema_round_trips_any_text(text):
    schema = SimpleStringSchema()
    assert schema.serialize(text) == text.encode("utf-8")
    assert schema.deserialize(schema.serialize(text)) == text


def test_simple_string_schema_charset_and_refusals():
    latin = SimpleStringSchema("ISO-8859-1")
    assert latin.serialize("é") == b"\xe9" and latin.deserialize(b"\xe9") == "é"
    with pytest.raises(InvalidJobError, match="unknown charset"):
        SimpleStringSchema("no-such-charset")
    with pytest.raises(InvalidJobError, match="serializes strings"):
        SimpleStringSchema().serialize(1)
    assert pickle.loads(pickle.dumps(latin)) == latin


@given(st.binary())
def test_byte_array_schema_round_trips_bytes(data):
    schema = ByteArraySchema()
    assert schema.deserialize(schema.serialize(data)) == data


def test_row_field_extractor_schema_takes_one_bytes_field():
    schema = RowFieldExtractorSchema(1)
    assert schema.serialize(Row(b"key", b"value")) == b"value"
    assert schema.serialize(None) == b"" and schema.serialize(Row(b"k", None)) == b""
    with pytest.raises(InvalidJobError, match="must be of type bytes"):
        schema.serialize(Row("k", 42))
    with pytest.raises(InvalidJobError, match="non-negative"):
        RowFieldExtractorSchema(-1)


def test_encoder_is_importable_from_pyflinks_serialization_module():
    from fluvial.common.serialization import Encoder as SerializationEncoder

    assert SerializationEncoder is Encoder
    assert Encoder.simple_string_encoder().encode(("a", 1)) == b"('a', 1)\n"


def test_type_serializer_round_trips_through_a_stream():
    serializer = PickleSerializer()
    stream = io.BytesIO()
    for value in ({"a": [1, 2]}, Row(x=1), None):
        serializer.serialize(value, stream)
    stream.seek(0)
    assert [serializer.deserialize(stream) for _ in range(3)] == [{"a": [1, 2]}, Row(x=1), None]
    with pytest.raises(EOFError):
        serializer.deserialize(stream)
    assert isinstance(serializer, TypeSerializer) and serializer == PickleSerializer()


def test_config_options_build_typed_options_read_with_fallbacks():
    option = ConfigOptions.key("app.parallelism").int_type().default_value(4).with_fallback_keys("app.old")
    config = Configuration()
    assert option.key() == "app.parallelism" and option.default_value() == 4 and option.has_default_value()
    assert config.get_value(option) == 4
    config.set_string("app.old", "7")
    assert config.get_value(option) == 7
    config.set_value(option, 9)
    assert config.get_value(option) == 9
    flag = ConfigOptions.key("app.flag").boolean_type().no_default_value()
    assert not flag.has_default_value() and Configuration().get_value(flag) is None
    with pytest.raises(ValueError, match="app.flag"):
        Configuration().set_value(flag, "maybe")
    mapping = ConfigOptions.key("app.map").map_type().default_value({})
    assert Configuration().set_value(mapping, {"a": "1", "b": "2"}).get_value(mapping) == {"a": "1", "b": "2"}


def test_instant_converts_epoch_millis_both_ways():
    instant = Instant.of_epoch_milli(1_700_000_000_123)
    assert (instant.seconds, instant.nanos) == (1_700_000_000, 123_000_000)
    assert instant.to_epoch_milli() == 1_700_000_000_123
    assert Instant(1, 0) == Instant(1, 0) and repr(Instant(1, 5)) == "Instant<1, 5>"
    with pytest.raises(ValueError):
        Instant(0, 10**9)


def test_input_dependency_constraint_is_kept_by_the_execution_config():
    from fluvial.common import ExecutionConfig

    config = ExecutionConfig()
    assert config.get_default_input_dependency_constraint() is InputDependencyConstraint.ANY
    config.set_default_input_dependency_constraint(InputDependencyConstraint.ALL)
    assert config.get_default_input_dependency_constraint() is InputDependencyConstraint.ALL
    assert (
        cloudpickle.loads(cloudpickle.dumps(config)).get_default_input_dependency_constraint()
        is InputDependencyConstraint.ALL
    )
