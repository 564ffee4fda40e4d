"""The `avro` and `avro-confluent` formats of Kafka message keys and values, as Flink's.

`avro`: each message is one record in Avro's binary encoding (or Avro's JSON encoding with `avro.encoding` =
`json`), schemaless: no container header and no schema in the message. The schema is the one Flink derives from
the columns (`file_formats.avro_schema`, the filesystem format's mapping, `avro.timestamp_mapping.legacy`
included), so a row reads and writes the same in an Avro file and in a message.

`avro-confluent`: the Confluent wire format (a zero byte, the schema's registry id in 4 bytes, the binary
record). A writer registers the derived schema under `avro-confluent.subject` (default `<topic>-key` or
`<topic>-value`, as Flink's Kafka connectors complete it) at the registry `avro-confluent.url` (`http(s)://`, or
`mock://NAME` for an in-process registry in tests); a reader fetches each writer schema by its id once and takes
the columns by name from the records, so records written with an evolved schema (fields added or removed) read.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from typing import Any

from fluvial.table.connectors.file_formats import (
    _legacy_timestamps,
    _require,
    avro_schema,
    record_reader,
    record_writer,
)
from fluvial.table.errors import ValidationException
from fluvial.table.types import DataType

__all__ = ["AVRO_FORMATS", "avro_decoder", "avro_encoder", "check_avro_format"]

# format → its own options (without the format's prefix)
AVRO_FORMATS: dict[str, set[str]] = {
    "avro": {"encoding", "timestamp_mapping.legacy"},
    "avro-confluent": {"url", "subject"},
}
_ENCODINGS = ("binary", "json")


def check_avro_format(
    fmt: str, names: Sequence[str], types: Sequence[DataType], options: dict[str, str], role: str, topics: list[str]
) -> dict[str, str]:
    """The format's options checked when the table is used (every column has an Avro type, the values are
    valid); returns them with avro-confluent's default subject filled in."""
    _require("fastavro", f"the {fmt} format", "avro")
    if fmt == "avro":
        encoding = options.get("avro.encoding", "binary").lower()
        if encoding not in _ENCODINGS:
            raise ValidationException(f"'avro.encoding' is 'binary' or 'json', got '{options['avro.encoding']}'")
        legacy = options.get("avro.timestamp_mapping.legacy", "true").lower()
        if legacy not in ("true", "false"):
            raise ValidationException(
                f"'avro.timestamp_mapping.legacy' is 'true' or 'false', got '{options['avro.timestamp_mapping.legacy']}'"
            )
        avro_schema(list(names), list(types), _legacy_timestamps(options))
        return options
    if "avro-confluent.url" not in options:
        raise ValidationException(
            f"The 'avro-confluent' format of the message {role} needs the schema registry's URL: "
            "'avro-confluent.url' = 'http://registry:8081'"
        )
    url = options["avro-confluent.url"]
    if not url.startswith(("http://", "https://", "mock://")):
        raise ValidationException(f"'avro-confluent.url' starts with http://, https:// or mock://, got '{url}'")
    avro_schema(list(names), list(types))
    if "avro-confluent.subject" not in options and len(topics) == 1:
        return {**options, "avro-confluent.subject": f"{topics[0]}-{role}"}
    return options


def _schema(names: Sequence[str], types: Sequence[DataType], options: dict[str, str]) -> tuple[dict, Any]:
    import fastavro

    document = avro_schema(list(names), list(types), _legacy_timestamps(options))
    return document, fastavro.parse_schema(document)


def avro_decoder(
    fmt: str, names: Sequence[str], types: Sequence[DataType], options: dict[str, str], role: str
) -> Callable[[bytes], list]:
    """bytes → the columns' values; a message that is not such a record raises ValueError (Flink's avro
    format has no option to skip it)."""
    import fastavro

    _, parsed = _schema(names, types, options)
    values_of = record_reader(list(names), list(types))
    read: Callable[[bytes], Any]
    if fmt == "avro-confluent":
        read = _confluent_reader(options["avro-confluent.url"])
    elif options.get("avro.encoding", "binary").lower() == "json":
        json_reader = fastavro.json_reader

        def read(data: bytes) -> Any:
            return next(iter(json_reader(io.StringIO(data.decode()), parsed)))  # type: ignore[arg-type]

    else:
        reader = fastavro.schemaless_reader

        def read(data: bytes) -> Any:
            return reader(io.BytesIO(data), parsed, None)

    def decode(data: bytes) -> list:
        try:
            return values_of(read(data))
        except Exception as error:  # fastavro raises what a short or foreign record makes its reader raise
            raise ValueError(
                f"Failed to deserialize {fmt} {role} {data[:200]!r}: {type(error).__name__}: {error}; the message "
                f"is not a record of the table's Avro schema"
            ) from None

    return decode


def _confluent_reader(url: str) -> Callable[[bytes], Any]:
    import fastavro

    from fluvial.datastream.formats.avro_registry import _HEADER, MAGIC, registry_for

    registry = registry_for(url)
    writers: dict[int, Any] = {}
    reader = fastavro.schemaless_reader

    def read(data: bytes) -> Any:
        if len(data) < _HEADER.size or data[0] != MAGIC:
            raise ValueError("not in the Confluent wire format (a zero magic byte and a schema id in front)")
        schema_id = _HEADER.unpack_from(data)[1]
        writer = writers.get(schema_id)
        if writer is None:  # the registry is asked once per schema
            writer = writers[schema_id] = fastavro.parse_schema(json.loads(registry.schema(schema_id)))
        return reader(io.BytesIO(data[_HEADER.size :]), writer, None)

    return read


def avro_encoder(
    fmt: str, names: Sequence[str], types: Sequence[DataType], options: dict[str, str], role: str
) -> Callable[[Sequence[Any]], bytes]:
    """The columns' values → one Avro record (in the Confluent wire format for avro-confluent)."""
    import fastavro
    from fastavro.validation import ValidationError

    document, parsed = _schema(names, types, options)
    record_of = record_writer(list(names), list(types))
    header = b""
    if fmt == "avro-confluent":
        from fluvial.datastream.formats.avro_registry import _HEADER, MAGIC, registry_for

        subject = options.get("avro-confluent.subject")
        if subject is None:
            raise ValidationException(
                f"The 'avro-confluent' format of the message {role} needs 'avro-confluent.subject' to register its "
                "schema under (it defaults to '<topic>-key' / '<topic>-value' only for a table of one topic)"
            )
        header = _HEADER.pack(
            MAGIC, registry_for(options["avro-confluent.url"]).register(subject, json.dumps(document))
        )
    if fmt == "avro" and options.get("avro.encoding", "binary").lower() == "json":
        json_writer = fastavro.json_writer

        def dump(record: dict) -> bytes:
            out = io.StringIO()
            json_writer(out, parsed, [record], validator=True)  # the binary writer checks as it writes
            return out.getvalue().rstrip("\n").encode()

    else:
        writer = fastavro.schemaless_writer

        def dump(record: dict) -> bytes:
            out = io.BytesIO()
            out.write(header)
            writer(out, parsed, record)
            return out.getvalue()

    def encode(values: Sequence[Any]) -> bytes:
        try:
            return dump(record_of(values))
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, ValidationError) as error:
            raise ValueError(
                f"Cannot write {list(values)!r} in the {fmt} format as the message {role}: {type(error).__name__}: "
                f"{' '.join(str(error).split())}; the values do not fit the table's Avro schema"
            ) from None

    return encode
