"""JSON rows (PyFlink `pyflink.datastream.formats.json`) on the standard library's `json` module.

`JsonRowDeserializationSchema.builder().type_info(row_type).build()` reads one JSON object per message into a
Row named by the type (nested objects into nested Rows, arrays into lists); a field the message lacks is
None unless `fail_on_missing_field()`, and a message that is not JSON fails the job unless
`ignore_parse_errors()` (then it is skipped). `json_schema(...)` derives the row type from a JSON schema.
`JsonRowSerializationSchema.builder().with_type_info(row_type).build()` writes a Row (or tuple, or dict) as
one compact JSON object.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.row import Row, _create_row
from fluvial.common.serialization import DeserializationSchema, SerializationSchema
from fluvial.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TypeInformation,
    Types,
)
from fluvial.datastream.formats.row_files import row_type_of, row_values

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]

_ARRAYS = (ListTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo, PrimitiveArrayTypeInfo)


class _MissingField(Exception):
    pass


def _reader(type_info: TypeInformation, fail_on_missing: bool, path: str) -> Callable[[Any], Any]:
    """JSON value -> Python value of the type (rows become Rows)."""
    if isinstance(type_info, RowTypeInfo):
        names = type_info.get_field_names()
        fields = [_reader(t, fail_on_missing, f"{path}{n}.") for n, t in zip(names, type_info.get_field_types())]

        def read_row(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, dict):
                raise InvalidJobError(f"JSON field {path.rstrip('.') or 'root'}: expected an object, got {value!r}")
            if fail_on_missing:
                missing = [n for n in names if n not in value]
                if missing:
                    raise _MissingField(f"{path}{missing[0]}")
            return _create_row(names, [f(value.get(n)) for n, f in zip(names, fields)])

        return read_row
    if isinstance(type_info, _ARRAYS):
        element = _reader(type_info.element_type, fail_on_missing, path)
        return lambda value: None if value is None else [element(v) for v in value]
    if isinstance(type_info, MapTypeInfo):
        item = _reader(type_info.value_type_info, fail_on_missing, path)
        return lambda value: None if value is None else {k: item(v) for k, v in value.items()}
    if isinstance(type_info, BasicTypeInfo) and type_info.basic_type is BasicType.BIG_DEC:
        return lambda value: None if value is None else Decimal(str(value))
    return lambda value: value


def _plain(value: Any) -> Any:
    """Rows to objects, tuples to arrays, decimals to numbers: what json.dumps can write."""
    if isinstance(value, Row):
        fields = getattr(value, "_fields", None)
        if fields is not None:
            return {n: _plain(v) for n, v in zip(fields, value)}
        return [_plain(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(bytes(value)).decode("ascii")
    return value


_JSON_SCHEMA_TYPES = {
    "string": Types.STRING,
    "boolean": Types.BOOLEAN,
    "integer": Types.BIG_INT,
    "number": Types.BIG_DEC,
}


def _from_json_schema(node: dict[str, Any]) -> TypeInformation:
    kind = node.get("type")
    if isinstance(kind, list):  # ["string", "null"]: nullable, which every field is
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = node.get("properties", {})
        return Types.ROW_NAMED(list(properties), [_from_json_schema(p) for p in properties.values()])
    if kind == "array":
        return Types.OBJECT_ARRAY(_from_json_schema(node.get("items", {"type": "string"})))
    if kind in _JSON_SCHEMA_TYPES:
        return _JSON_SCHEMA_TYPES[kind]()
    raise InvalidJobError(
        f"JSON schema type {kind!r} is not supported; use object, array, string, number, integer or boolean"
    )


@dataclass(frozen=True)
class JsonRowDeserializationSchema(DeserializationSchema):
    """Reads JSON objects as Rows of a declared type (PyFlink's `JsonRowDeserializationSchema`); built with
    `builder().type_info(...).build()`.
    """

    type_info: RowTypeInfo
    fail_on_missing_field: bool = False
    ignore_parse_errors: bool = False

    @staticmethod
    def builder() -> JsonRowDeserializationSchemaBuilder:
        """A builder of the schema (`type_info`, `fail_on_missing_field`, `ignore_parse_errors`, `build`)."""
        return JsonRowDeserializationSchemaBuilder()

    @functools.cached_property
    def _read(self) -> Callable[[Any], Any]:
        return _reader(self.type_info, self.fail_on_missing_field, "")

    def deserialize(self, message: bytes) -> Any:
        """One JSON object as a Row.

        Args:
            message: The bytes.

        Returns:
            The Row (None for a record skipped by `ignore_parse_errors`).

        Raises:
            InvalidJobError: invalid JSON or a missing field, unless told to ignore parse errors.
        """
        try:
            return self._read(json.loads(message))
        except _MissingField as missing:
            if self.ignore_parse_errors:
                return None
            raise InvalidJobError(f"JSON message {bytes(message)[:200]!r} lacks the field {missing}") from None
        except (ValueError, InvalidJobError) as error:
            if self.ignore_parse_errors:
                return None
            raise InvalidJobError(f"cannot read JSON message {bytes(message)[:200]!r}: {error}") from None

    def get_produced_type(self) -> RowTypeInfo:
        """The Row type produced."""
        return self.type_info


class JsonRowDeserializationSchemaBuilder:
    def __init__(self) -> None:
        self._type_info: RowTypeInfo | None = None
        self._fail_on_missing = False
        self._ignore = False

    def type_info(self, type_info: TypeInformation) -> JsonRowDeserializationSchemaBuilder:
        self._type_info = row_type_of(type_info, "JsonRowDeserializationSchema")
        return self

    def json_schema(self, json_schema: str) -> JsonRowDeserializationSchemaBuilder:
        try:
            parsed = json.loads(json_schema)
        except ValueError as error:
            raise InvalidJobError(f"the JSON schema is not JSON: {error}") from None
        return self.type_info(_from_json_schema(parsed))

    def fail_on_missing_field(self) -> JsonRowDeserializationSchemaBuilder:
        self._fail_on_missing = True
        return self

    def ignore_parse_errors(self) -> JsonRowDeserializationSchemaBuilder:
        self._ignore = True
        return self

    def build(self) -> JsonRowDeserializationSchema:
        if self._type_info is None:
            raise InvalidJobError("JsonRowDeserializationSchema needs a row type: .type_info(...) or .json_schema(...)")
        return JsonRowDeserializationSchema(self._type_info, self._fail_on_missing, self._ignore)


@dataclass(frozen=True)
class JsonRowSerializationSchema(SerializationSchema):
    """Writes Rows as JSON objects (PyFlink's `JsonRowSerializationSchema`); built with
    `builder().with_type_info(...).build()`.
    """

    type_info: RowTypeInfo

    @staticmethod
    def builder() -> JsonRowSerializationSchemaBuilder:
        """A builder of the schema."""
        return JsonRowSerializationSchemaBuilder()

    def serialize(self, element: Any) -> bytes:
        """One Row as a JSON object, in bytes.

        Args:
            element: The Row.

        Returns:
            The bytes.
        """
        names = self.type_info.get_field_names()
        values = row_values(element, names, "JsonRowSerializationSchema")
        document = {name: _plain(value) for name, value in zip(names, values)}
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class JsonRowSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._type_info: RowTypeInfo | None = None

    def with_type_info(self, type_info: TypeInformation) -> JsonRowSerializationSchemaBuilder:
        self._type_info = row_type_of(type_info, "JsonRowSerializationSchema")
        return self

    def build(self) -> JsonRowSerializationSchema:
        if self._type_info is None:
            raise InvalidJobError("JsonRowSerializationSchema needs a row type: .with_type_info(...)")
        return JsonRowSerializationSchema(self._type_info)
