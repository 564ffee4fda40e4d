"""Rows and Avro records to and from Arrow, for the Parquet and ORC formats (pyarrow).

Types map as Flink maps them to Parquet/ORC: INT -> int32, LONG -> int64, FLOAT -> float32, DOUBLE -> float64,
BIG_DEC -> decimal(38, 18), SQL_DATE -> date32, SQL_TIME -> time64(us), SQL_TIMESTAMP -> timestamp(us, UTC
when `utc_timestamp`), PRIMITIVE_ARRAY(BYTE) -> binary, lists and arrays -> list, MAP -> map, ROW -> struct.
Part files are buffered in memory and written out whole when they roll (at every checkpoint), so a part's
size is known only then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO

from fluvial.common.errors import InvalidJobError
from fluvial.common.row import Row, _create_row
from fluvial.common.serialization import BulkWriter
from fluvial.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TypeInformation,
    Types,
)
from fluvial.datastream.formats.row_files import require_extra, row_values

pa = require_extra("pyarrow", "parquet", "Parquet/ORC")

_BASIC = {
    BasicType.STRING: pa.string,
    BasicType.CHAR: pa.string,
    BasicType.BOOLEAN: pa.bool_,
    BasicType.BYTE: pa.int8,
    BasicType.SHORT: pa.int16,
    BasicType.INT: pa.int32,
    BasicType.LONG: pa.int64,
    BasicType.FLOAT: pa.float32,
    BasicType.DOUBLE: pa.float64,
    BasicType.BIG_DEC: lambda: pa.decimal128(38, 18),
}
_ARRAYS = (ListTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo, PrimitiveArrayTypeInfo)


def arrow_type(type_info: TypeInformation, utc_timestamp: bool = False) -> Any:
    if isinstance(type_info, BasicTypeInfo) and type_info.basic_type in _BASIC:
        return _BASIC[type_info.basic_type]()
    if isinstance(type_info, PrimitiveArrayTypeInfo) and type_info.element_type == Types.BYTE():
        return pa.binary()
    if isinstance(type_info, _ARRAYS):
        return pa.list_(arrow_type(type_info.element_type, utc_timestamp))
    if isinstance(type_info, MapTypeInfo):
        return pa.map_(
            arrow_type(type_info.key_type_info, utc_timestamp), arrow_type(type_info.value_type_info, utc_timestamp)
        )
    if isinstance(type_info, RowTypeInfo):
        return pa.struct(
            [
                (n, arrow_type(t, utc_timestamp))
                for n, t in zip(type_info.get_field_names(), type_info.get_field_types())
            ]
        )
    if isinstance(type_info, DateTypeInfo):
        return pa.date32()
    if isinstance(type_info, TimeTypeInfo):
        return pa.time64("us")
    if isinstance(type_info, TimestampTypeInfo):
        return pa.timestamp("us", tz="UTC" if utc_timestamp else None)
    raise InvalidJobError(
        f"type {type_info!r} has no Parquet/ORC column type; use basic types, arrays, maps, rows and SQL time types"
    )


def arrow_schema(row_type: RowTypeInfo, utc_timestamp: bool = False) -> Any:
    return pa.schema(
        [(n, arrow_type(t, utc_timestamp)) for n, t in zip(row_type.get_field_names(), row_type.get_field_types())]
    )


_AVRO_PRIMITIVES = {
    "string": pa.string,
    "int": pa.int32,
    "long": pa.int64,
    "float": pa.float32,
    "double": pa.float64,
    "boolean": pa.bool_,
    "bytes": pa.binary,
    "enum": pa.string,
}


def arrow_type_from_avro(schema: Any) -> Any:
    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return _AVRO_PRIMITIVES[schema]()
        raise InvalidJobError(f"Avro type {schema!r} has no Parquet column type")
    if isinstance(schema, list):
        kinds = [s for s in schema if s != "null"]
        if len(kinds) != 1:
            raise InvalidJobError(f"Avro union {schema!r}: only unions of one type with null map to Parquet")
        return arrow_type_from_avro(kinds[0])
    kind = schema.get("type")
    if kind == "record":
        return pa.struct([(f["name"], arrow_type_from_avro(f["type"])) for f in schema["fields"]])
    if kind == "array":
        return pa.list_(arrow_type_from_avro(schema["items"]))
    if kind == "map":
        return pa.map_(pa.string(), arrow_type_from_avro(schema["values"]))
    if kind == "enum":
        return pa.string()
    return arrow_type_from_avro(kind)


def _plain(value: Any) -> Any:
    """Rows to dicts (nested), so Arrow builds structs from them."""
    if isinstance(value, Row):
        fields = getattr(value, "_fields", None)
        return {n: _plain(v) for n, v in zip(fields, value)} if fields is not None else [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def rows_converter(row_type: RowTypeInfo) -> Callable[[dict], Row]:
    """Arrow's dict of one record -> a Row named by the type (nested rows too)."""

    def build(type_info: TypeInformation) -> Callable[[Any], Any] | None:
        if isinstance(type_info, RowTypeInfo):
            names = type_info.get_field_names()
            fields = [build(t) for t in type_info.get_field_types()]
            return lambda v: (
                None
                if v is None
                else _create_row(names, [v.get(n) if f is None else f(v.get(n)) for n, f in zip(names, fields)])
            )
        if isinstance(type_info, _ARRAYS) and not isinstance(type_info, PrimitiveArrayTypeInfo):
            element = build(type_info.element_type)
            return None if element is None else (lambda v: None if v is None else [element(x) for x in v])
        if isinstance(type_info, MapTypeInfo):
            return lambda v: None if v is None else dict(v)  # Arrow gives a map as a list of pairs
        return None

    convert = build(row_type)
    assert convert is not None
    return convert


class ArrowTableWriter(BulkWriter):
    """Buffers a part's records as Arrow batches; `finish` writes the whole file (Parquet or ORC) to the stream."""

    def __init__(
        self, stream: BinaryIO, schema: Any, to_record: Callable[[Any], dict], write_file: Callable[[Any, Any], None]
    ) -> None:
        self._stream = stream
        self._schema = schema
        self._to_record = to_record
        self._write_file = write_file
        self._batches: list[Any] = []

    def add_element(self, element: Any) -> None:
        self.add_elements([element])

    def add_elements(self, elements: list) -> None:
        try:
            self._batches.append(pa.RecordBatch.from_pylist([self._to_record(e) for e in elements], self._schema))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as error:
            raise InvalidJobError(
                f"cannot write records such as {elements[0]!r} with the schema {self._schema}: {error}"
            ) from None

    def finish(self) -> None:
        table = pa.Table.from_batches(self._batches, self._schema)
        sink = pa.BufferOutputStream()
        self._write_file(table, sink)
        self._stream.write(sink.getvalue().to_pybytes())
        self._batches = []


def row_record(row_type: RowTypeInfo) -> Callable[[Any], dict]:
    names = row_type.get_field_names()
    return lambda element: {n: _plain(v) for n, v in zip(names, row_values(element, names, "Parquet/ORC"))}


def avro_record(element: Any) -> dict:
    plain = _plain(element)
    if not isinstance(plain, dict):
        raise InvalidJobError(f"Avro generic records are dicts (or named Rows), got {element!r}")
    return plain
