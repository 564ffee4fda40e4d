"""Avro (PyFlink `pyflink.datastream.formats.avro`) on fastavro: install `fluvial[avro]`.

- `AvroSchema.parse_string(json)` / `parse_file(path)`: a parsed schema (picklable: it keeps its JSON).
- `AvroInputFormat(path, schema)` with `env.create_input(...)`: the records of Avro container files, as dicts
  (Avro's generic records), typed `GenericRecordAvroTypeInfo(schema)`.
- `AvroBulkWriters.for_generic_record(schema)`: a FileSink bulk format writing container files.
- `AvroRowSerializationSchema` / `AvroRowDeserializationSchema(avro_schema_string=...)`: one record per
  message in Avro's binary encoding (no container header), from and to Rows named by the schema's fields.
  PyFlink's `record_class` names a Java class and is refused.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from fluvial.common.errors import InvalidJobError
from fluvial.common.io import InputFormat
from fluvial.common.row import Row, _create_row
from fluvial.common.serialization import BulkWriter, BulkWriterFactory, DeserializationSchema, SerializationSchema
from fluvial.common.typeinfo import TypeInformation
from fluvial.datastream.connectors.file_source import BulkFormat
from fluvial.datastream.connectors.file_systems import resolve_path
from fluvial.datastream.formats.row_files import RecordFileReader, require_extra

fastavro = require_extra("fastavro", "avro", "Avro")

__all__ = [
    "AvroBulkWriters",
    "AvroInputFormat",
    "AvroRowDeserializationSchema",
    "AvroRowSerializationSchema",
    "AvroSchema",
    "GenericRecordAvroTypeInfo",
]


class AvroSchema:
    """A parsed Avro schema; equal schemas have equal JSON."""

    def __init__(self, json_schema: str) -> None:
        try:
            document = json.loads(json_schema)
            self._parsed = fastavro.parse_schema(document)
        except (ValueError, fastavro.schema.SchemaParseException) as error:
            raise InvalidJobError(f"not a valid Avro schema ({error}): {json_schema[:200]!r}") from None
        self._json = json.dumps(document)

    @staticmethod
    def parse_string(json_schema: str) -> AvroSchema:
        """An Avro schema from its JSON text.

        Args:
            json_schema: The schema.

        Returns:
            The AvroSchema.

        Raises:
            InvalidJobError: the schema is not valid Avro.
        """
        return AvroSchema(json_schema)

    @staticmethod
    def parse_file(file_path: str) -> AvroSchema:
        """An Avro schema from a `.avsc` file.

        Args:
            file_path: The file.

        Returns:
            The AvroSchema.
        """
        with open(file_path, encoding="utf-8") as handle:
            return AvroSchema(handle.read())

    @property
    def parsed(self) -> Any:
        """The schema parsed by fastavro."""
        return self._parsed

    def field_names(self) -> list[str]:
        """The record schema's field names."""
        if self._parsed.get("type") != "record":
            raise InvalidJobError(f"an Avro row schema must be a record, got {self._parsed.get('type')!r}")
        return [f["name"] for f in self._parsed["fields"]]

    def __reduce__(self) -> tuple:
        return (AvroSchema, (self._json,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AvroSchema) and other._json == self._json

    def __hash__(self) -> int:
        return hash(self._json)

    def __str__(self) -> str:
        return self._json


def _schema(schema: Any, what: str) -> AvroSchema:
    if isinstance(schema, str):
        return AvroSchema(schema)
    if not isinstance(schema, AvroSchema):
        raise InvalidJobError(f"{what} takes an AvroSchema (AvroSchema.parse_string(...)), got {schema!r}")
    return schema


class GenericRecordAvroTypeInfo(TypeInformation):
    """The type of Avro generic records (dicts) of one schema; printed with `str()`."""

    __slots__ = ("_schema",)

    def __init__(self, schema: AvroSchema) -> None:
        self._schema = _schema(schema, "GenericRecordAvroTypeInfo")

    def get_schema(self) -> AvroSchema:
        """The records' Avro schema."""
        return self._schema

    def _key(self) -> tuple[Any, ...]:
        return (str(self._schema),)

    def __reduce__(self) -> tuple:
        return (GenericRecordAvroTypeInfo, (self._schema,))

    def __repr__(self) -> str:
        return f"GenericRecordAvroTypeInfo({self._schema.parsed.get('name', '')})"


# --- container files ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AvroContainerFormat(BulkFormat):
    """Records of Avro container files, as dicts; a reader's offset counts records."""

    schema: AvroSchema | None = None  # None: each file's own (writer) schema

    def open_reader(self, path: str, offset: int) -> RecordFileReader:
        reader_schema = None if self.schema is None else self.schema.parsed
        return RecordFileReader(path, offset, lambda binary: iter(fastavro.reader(binary, reader_schema)))


class AvroInputFormat(InputFormat):
    """`env.create_input(AvroInputFormat(path, schema))`: the records of the container files under `path`."""

    def __init__(self, path: str, schema: AvroSchema) -> None:
        self._path = resolve_path(path)
        self._schema = _schema(schema, "AvroInputFormat")

    def create_source(self) -> Any:
        """The FileSource of this format."""
        from fluvial.datastream.connectors.file_source import FileSource

        return FileSource.for_bulk_file_format(AvroContainerFormat(self._schema), self._path).build()

    def get_produced_type(self) -> GenericRecordAvroTypeInfo:
        """The type of the records read: generic records of the schema."""
        return GenericRecordAvroTypeInfo(self._schema)

    def name(self) -> str:
        """The format's name."""
        return f"Avro: {self._path}"


class AvroContainerWriter(BulkWriter):
    """Writes records to an Avro container file: `to_record` makes each element the dict Avro writes (named Rows
    by default), `codec` compresses the blocks (`null`, `deflate`, `snappy`, `bzip2`, `xz`)."""

    def __init__(
        self, schema: AvroSchema, stream: BinaryIO, codec: str = "null", to_record: Callable[[Any], Any] | None = None
    ) -> None:
        from fastavro.write import Writer

        self._writer = Writer(stream, schema.parsed, codec=codec)
        self._to_record = _as_record if to_record is None else to_record

    def add_element(self, element: Any) -> None:
        self._writer.write(self._to_record(element))

    def add_elements(self, elements: list) -> None:
        write, to_record = self._writer.write, self._to_record
        for element in elements:
            write(to_record(element))

    def flush(self) -> None:
        self._writer.flush()

    def finish(self) -> None:
        self._writer.flush()


@dataclass(frozen=True, slots=True)
class _AvroWriterFactory(BulkWriterFactory):
    schema: AvroSchema

    def create(self, stream: BinaryIO) -> BulkWriter:
        return AvroContainerWriter(self.schema, stream)

    def file_suffix(self) -> str:
        return ".avro"


class AvroBulkWriters:
    """FileSink bulk writers of Avro container files (PyFlink's `AvroBulkWriters`)."""

    @staticmethod
    def for_generic_record(schema: AvroSchema) -> BulkWriterFactory:
        """A FileSink bulk-writer factory writing records (dicts) of `schema` to Avro files.

        Args:
            schema: The AvroSchema.

        Returns:
            The factory.
        """
        return _AvroWriterFactory(_schema(schema, "AvroBulkWriters.for_generic_record"))


# --- rows in messages ---------------------------------------------------------------------------------------


def _as_record(value: Any) -> Any:
    """A named Row as the dict Avro writes (nested rows too); dicts and other values as they are."""
    if isinstance(value, Row) and getattr(value, "_fields", None) is not None:
        return {n: _as_record(v) for n, v in zip(value._fields, value)}
    if isinstance(value, list):
        return [_as_record(v) for v in value]
    return value


def _row_converter(schema: Any) -> Callable[[Any], Any]:
    """Avro value -> Row for records (recursively), lists and maps converted inside."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "record":
            names = [f["name"] for f in schema["fields"]]
            fields = [_row_converter(f["type"]) for f in schema["fields"]]
            return lambda v: None if v is None else _create_row(names, [c(v[n]) for n, c in zip(names, fields)])
        if kind == "array":
            item = _row_converter(schema["items"])
            return lambda v: None if v is None else [item(x) for x in v]
        if kind == "map":
            item = _row_converter(schema["values"])
            return lambda v: None if v is None else {k: item(x) for k, x in v.items()}
    if isinstance(schema, list):  # a union: records inside are converted by their own shape
        records = [s for s in schema if isinstance(s, dict) and s.get("type") == "record"]
        if len(records) == 1:
            return _row_converter(records[0])
    return lambda v: v


def _positional_record(schema: AvroSchema, element: Any) -> Any:
    if isinstance(element, dict):
        return element
    if isinstance(element, Row) and getattr(element, "_fields", None) is not None:
        return _as_record(element)
    if isinstance(element, (Row, tuple, list)):
        names = schema.field_names()
        if len(element) != len(names):
            raise InvalidJobError(f"Avro record {element!r} has {len(element)} fields, the schema {len(names)}")
        return {n: _as_record(v) for n, v in zip(names, element)}
    raise InvalidJobError(f"AvroRowSerializationSchema writes rows, tuples or dicts, got {element!r}")


def _no_record_class(record_class: Any, avro_schema_string: Any, what: str) -> AvroSchema:
    if record_class is not None:
        raise InvalidJobError(
            f"{what}: record_class names a Java class, and fluvial runs no JVM; pass avro_schema_string"
        )
    if avro_schema_string is None:
        raise InvalidJobError(f"{what} needs avro_schema_string")
    return AvroSchema(avro_schema_string)


class AvroRowSerializationSchema(SerializationSchema):
    """Writes Rows as Avro-encoded messages (PyFlink's `AvroRowSerializationSchema`)."""

    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None) -> None:
        self._schema = _no_record_class(record_class, avro_schema_string, "AvroRowSerializationSchema")
        self._schema.field_names()

    def serialize(self, element: Any) -> bytes:
        """One Row as an Avro message.

        Args:
            element: The Row.

        Returns:
            The bytes.
        """
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, self._schema.parsed, _positional_record(self._schema, element))
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise InvalidJobError(f"cannot write {element!r} with the Avro schema ({error})") from None
        return out.getvalue()

    def __reduce__(self) -> tuple:
        return (AvroRowSerializationSchema, (None, str(self._schema)))


class AvroRowDeserializationSchema(DeserializationSchema):
    """Reads Avro-encoded messages as Rows (PyFlink's `AvroRowDeserializationSchema`)."""

    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None) -> None:
        self._schema = _no_record_class(record_class, avro_schema_string, "AvroRowDeserializationSchema")
        self._schema.field_names()

    @functools.cached_property
    def _to_row(self) -> Callable[[Any], Any]:
        return _row_converter(self._schema.parsed)

    def deserialize(self, message: bytes) -> Any:
        """One Avro message as a Row.

        Args:
            message: The bytes.

        Returns:
            The Row.
        """
        record = fastavro.schemaless_reader(io.BytesIO(message), self._schema.parsed, None)
        return self._to_row(record)

    def __reduce__(self) -> tuple:
        return (AvroRowDeserializationSchema, (None, str(self._schema)))
