"""The formats of a Kafka table's message keys and values: `json`, `csv`, `raw`, `avro` and `avro-confluent`,
as per-record functions between bytes and a list of column values.

`json` and `csv` are the filesystem connector's (`ParseLine`, `LineEncoder`), so a row reads and writes the same
in a file and in a message. `raw` is one STRING (in `raw.charset`, default UTF-8) or BYTES column taken as the
whole message. `avro` and `avro-confluent` are in `kafka_avro.py`. A format's options are named after it, under the prefix of its role: `json.ignore-parse-errors`
with `format`, `value.json.ignore-parse-errors` with `value.format`, `key.csv.field-delimiter` with
`key.format` (Flink's rule).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from fluvial.table.connectors.filesystem import LineEncoder, ParseLine
from fluvial.table.connectors.kafka_avro import AVRO_FORMATS, avro_decoder, avro_encoder
from fluvial.table.errors import ValidationException
from fluvial.table.types import DataType
from fluvial.table.values import cast_value

__all__ = ["FORMATS", "format_options", "decoder", "encoder"]

FORMATS: dict[str, set[str]] = {
    "json": {"ignore-parse-errors"},
    "csv": {"field-delimiter", "ignore-parse-errors", "null-literal"},
    "raw": {"charset"},
    **AVRO_FORMATS,
}


def format_options(connector: str, fmt: str, prefix: str, options: dict[str, str]) -> dict[str, str]:
    """The format's own options (their names without `prefix`), every one of them known to the format."""
    if fmt not in FORMATS:
        raise ValidationException(
            f"Could not find any format factory for identifier '{fmt}' in '{prefix}format' of '{connector}'; "
            f"the formats are {', '.join(sorted(FORMATS))}"
        )
    own = f"{prefix}{fmt}."
    found = {k[len(prefix) :]: v for k, v in options.items() if k.startswith(own)}
    unknown = sorted(prefix + k for k in found if k[len(fmt) + 1 :] not in FORMATS[fmt])
    if unknown:
        raise ValidationException(
            f"Unsupported options found for format '{fmt}' of '{connector}': {', '.join(unknown)}; the format takes "
            f"{', '.join(sorted(own + o for o in FORMATS[fmt]))}"
        )
    return found


def _raw_check(fmt: str, names: Sequence[str], types: Sequence[DataType], role: str) -> None:
    if fmt == "raw" and (len(types) != 1 or not (types[0].is_string() or types[0].name in ("BINARY", "VARBINARY"))):
        raise ValidationException(
            f"The 'raw' format of the message {role} takes one STRING or BYTES column, got "
            f"[{', '.join(f'{n} {t.summary(False)}' for n, t in zip(names, types))}]; use 'json' or 'csv' for rows"
        )


def decoder(
    fmt: str, names: Sequence[str], types: Sequence[DataType], options: dict[str, str], role: str, prefix: str
) -> Callable[[bytes], list | None]:
    """bytes → the columns' values; None for a record to skip (`ignore-parse-errors`); a record that does not
    parse raises ValueError naming the option that skips such records."""
    if fmt in AVRO_FORMATS:
        return avro_decoder(fmt, names, types, options, role)
    _raw_check(fmt, names, types, role)
    if fmt == "raw":
        if types[0].is_string():
            charset = options.get("raw.charset", "UTF-8")
            return lambda data: [data.decode(charset)]
        return lambda data: [data]
    parser = ParseLine(names, types, fmt, options)
    parse: Callable[[Any], list] = (
        _json_parser(names, types) if fmt == "json" else lambda data: parser._csv(data.decode())
    )
    ignore = parser.ignore_errors
    option = f"{prefix}{fmt}.ignore-parse-errors"

    def decode(data: bytes) -> list | None:
        try:
            return parse(data)
        except (ValueError, TypeError) as error:
            if ignore:
                return None
            raise ValueError(
                f"Failed to deserialize {fmt.upper()} {role} {data[:200]!r}: {error}; set '{option}' = 'true' to "
                "skip such records"
            ) from None

    return decode


_NATIVE = {"INT": int, "BIGINT": int, "SMALLINT": int, "TINYINT": int, "DOUBLE": float, "BOOLEAN": bool}


def _converter(data_type: DataType) -> Callable[[Any], Any]:
    """A JSON value → the column's value: as is when JSON gave the column's own Python type (the common case,
    one type check), else Flink's cast."""
    native = str if data_type.is_string() and data_type.name == "VARCHAR" else _NATIVE.get(data_type.name)
    if native is None:
        return lambda value: cast_value(value, data_type)
    return lambda value: value if type(value) is native else cast_value(value, data_type)


def _json_parser(names: Sequence[str], types: Sequence[DataType]) -> Callable[[bytes], list]:
    """The filesystem format's JSON rows (an object per row, missing and null members NULL), read from bytes
    with the JSON decoder's C scanner and a converter per column."""
    decode = json.JSONDecoder().decode
    fields = list(zip(names, [_converter(t) for t in types]))

    def parse(data: bytes) -> list:
        document = decode(data.decode())
        if type(document) is not dict:
            raise ValueError("a JSON row is an object")
        get = document.get
        return [None if (value := get(name)) is None else convert(value) for name, convert in fields]

    return parse


def encoder(
    fmt: str, names: Sequence[str], types: Sequence[DataType], options: dict[str, str], role: str
) -> Callable[[Sequence[Any]], bytes]:
    """The columns' values → bytes."""
    if fmt in AVRO_FORMATS:
        return avro_encoder(fmt, names, types, options, role)
    _raw_check(fmt, names, types, role)
    if fmt == "raw":
        if types[0].is_string():
            charset = options.get("raw.charset", "UTF-8")
            return lambda values: None if values[0] is None else values[0].encode(charset)  # type: ignore[return-value]
        return lambda values: values[0]  # type: ignore[no-any-return]
    delimiter = options.get("csv.field-delimiter", ",")
    text = LineEncoder(tuple(names), tuple(types), tuple(range(len(names))), fmt, delimiter).format_values
    return lambda values: text(values).encode()
