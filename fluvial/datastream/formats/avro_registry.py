"""Avro with a Confluent-compatible Schema Registry, in the Confluent wire format: a zero magic byte, the
schema's registry id as 4 big-endian bytes, then the record in Avro's binary encoding. Flink's
`ConfluentRegistryAvroSerializationSchema` / `ConfluentRegistryAvroDeserializationSchema` (`for_generic`),
with Rows named by the schema's fields on our side, as the Avro row schemas of `formats.avro`.

The registry is reached over its REST API (`http://` or `https://` URL: register a subject's schema, fetch a
schema by id), or is an in-process registry for tests and examples (`mock://NAME`: one per name and process, so
a job using it must run its TaskManagers as threads). Ids are cached, so the registry is asked once per schema.
A reader decodes each record with the schema it was written with (fetched by id) into the schema it asked for,
so compatible schema changes (added fields with defaults, removed fields) read as Avro resolves them.
"""

from __future__ import annotations

import functools
import io
import json
import struct
import threading
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

from fluvial.common.errors import InvalidJobError, ResourceError
from fluvial.common.serialization import DeserializationSchema, SerializationSchema
from fluvial.datastream.formats.avro import AvroSchema, _positional_record, _row_converter, fastavro

__all__ = [
    "ConfluentRegistryAvroDeserializationSchema",
    "ConfluentRegistryAvroSerializationSchema",
    "MockSchemaRegistry",
]

MAGIC = 0
_HEADER = struct.Struct(">bI")


class SchemaRegistry(Protocol):
    def register(self, subject: str, schema: str) -> int: ...

    def schema(self, schema_id: int) -> str: ...


class MockSchemaRegistry:
    """An in-process registry (`mock://NAME`): ids count from 1; registering the same schema again under a
    subject returns its id."""

    _registries: dict[str, MockSchemaRegistry] = {}
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._schemas: list[str] = []
        self._ids: dict[str, int] = {}
        self.subjects: dict[str, list[int]] = {}

    @classmethod
    def named(cls, name: str) -> MockSchemaRegistry:
        with cls._lock:
            return cls._registries.setdefault(name, cls())

    def register(self, subject: str, schema: str) -> int:
        canonical = json.dumps(json.loads(schema), sort_keys=True)
        with self._lock:
            schema_id = self._ids.get(canonical)
            if schema_id is None:
                self._schemas.append(schema)
                schema_id = self._ids[canonical] = len(self._schemas)
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id

    def schema(self, schema_id: int) -> str:
        if not 1 <= schema_id <= len(self._schemas):
            raise ResourceError(f"the schema registry has no schema with id {schema_id}")
        return self._schemas[schema_id - 1]


class HttpSchemaRegistry:
    """A Confluent-compatible registry over its REST API."""

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self._url = url.rstrip("/")
        self._timeout = timeout_s

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self._url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310 - the user's URL
                return json.loads(response.read())
        except OSError as error:
            raise ResourceError(f"the schema registry at {self._url} refused {method} {path}: {error}") from None

    def register(self, subject: str, schema: str) -> int:
        return int(self._call("POST", f"/subjects/{subject}/versions", {"schema": schema})["id"])

    def schema(self, schema_id: int) -> str:
        return self._call("GET", f"/schemas/ids/{schema_id}")["schema"]


def registry_for(url: str) -> SchemaRegistry:
    if url.startswith("mock://"):
        return MockSchemaRegistry.named(url.removeprefix("mock://"))
    if url.startswith(("http://", "https://")):
        return HttpSchemaRegistry(url)
    raise InvalidJobError(f"a schema registry URL starts with http://, https:// or mock://, got {url!r}")


class ConfluentRegistryAvroSerializationSchema(SerializationSchema):
    """Writes Rows (or dicts) with `schema`, registered under `subject`, in the Confluent wire format."""

    def __init__(self, subject: str, schema: str, url: str) -> None:
        self.subject, self.url = subject, url
        self._schema = AvroSchema(schema)
        self._schema.field_names()

    @staticmethod
    def for_generic(subject: str, schema: str | AvroSchema, url: str) -> ConfluentRegistryAvroSerializationSchema:
        return ConfluentRegistryAvroSerializationSchema(subject, str(schema), url)

    @functools.cached_property
    def _header(self) -> bytes:
        return _HEADER.pack(MAGIC, registry_for(self.url).register(self.subject, str(self._schema)))

    def serialize(self, element: Any) -> bytes:
        out = io.BytesIO()
        out.write(self._header)
        try:
            fastavro.schemaless_writer(out, self._schema.parsed, _positional_record(self._schema, element))
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise InvalidJobError(f"cannot write {element!r} with the Avro schema ({error})") from None
        return out.getvalue()

    def __reduce__(self) -> tuple:
        return (ConfluentRegistryAvroSerializationSchema, (self.subject, str(self._schema), self.url))


class ConfluentRegistryAvroDeserializationSchema(DeserializationSchema):
    """Reads Confluent wire-format records into Rows of `schema` (the reader's schema)."""

    def __init__(self, schema: str, url: str) -> None:
        self.url = url
        self._schema = AvroSchema(schema)
        self._schema.field_names()
        self._writers: dict[int, Any] = {}

    @staticmethod
    def for_generic(schema: str | AvroSchema, url: str) -> ConfluentRegistryAvroDeserializationSchema:
        return ConfluentRegistryAvroDeserializationSchema(str(schema), url)

    @functools.cached_property
    def _to_row(self) -> Callable[[Any], Any]:
        return _row_converter(self._schema.parsed)

    def _writer_schema(self, schema_id: int) -> Any:
        parsed = self._writers.get(schema_id)
        if parsed is None:
            parsed = self._writers[schema_id] = fastavro.parse_schema(
                json.loads(registry_for(self.url).schema(schema_id))
            )
        return parsed

    def deserialize(self, message: bytes) -> Any:
        if message is None:
            return None
        if len(message) < _HEADER.size or message[0] != MAGIC:
            raise ValueError("not in the Confluent wire format (no zero magic byte and schema id in front)")
        _, schema_id = _HEADER.unpack_from(message)
        record = fastavro.schemaless_reader(
            io.BytesIO(message[_HEADER.size :]), self._writer_schema(schema_id), self._schema.parsed
        )
        return self._to_row(record)

    def __reduce__(self) -> tuple:
        return (ConfluentRegistryAvroDeserializationSchema, (str(self._schema), self.url))
