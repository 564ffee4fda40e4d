"""The filesystem connector's avro and parquet formats: a table's logical types as Avro and Parquet types, as
Flink's `AvroSchemaConverter` and `ParquetSchemaConverter` map them, and rows to and from their records.

Avro (fastavro): BOOLEAN boolean; TINYINT, SMALLINT, INT int; BIGINT long; FLOAT float; DOUBLE double;
CHAR/VARCHAR/STRING string; BINARY/VARBINARY/BYTES bytes; DECIMAL(p, s) bytes (decimal p, s); DATE int (date);
TIME int (time-millis); TIMESTAMP(p ≤ 3) long (timestamp-millis) under Flink's legacy mapping (the default of
`avro.timestamp_mapping.legacy`, which has no TIMESTAMP_LTZ), else TIMESTAMP long (local-timestamp-millis,
-micros above 3) and TIMESTAMP_LTZ long (timestamp-millis, -micros); ARRAY array; MAP with character keys map;
ROW a record `<parent>_<field>` under the top record `org.apache.flink.avro.generated.record`; a nullable
type is the union `["null", T]`, a nullable field defaults to null. Files are container files compressed by
`avro.codec` (snappy by default, as Flink's).

Parquet (pyarrow): BOOLEAN boolean; TINYINT int32 (INT_8); SMALLINT int32 (INT_16); INT int32; BIGINT int64;
FLOAT float; DOUBLE double; character types binary (UTF8); binary types binary; DECIMAL(p, s)
fixed_len_byte_array of the bytes the precision needs (DECIMAL p, s); DATE int32 (DATE); TIME int32
(TIME_MILLIS); TIMESTAMP and TIMESTAMP_LTZ int96 as Flink writes them (int64 micros with
`parquet.write.int64.timestamp`); ARRAY a LIST group; MAP a MAP group; ROW a group; NOT NULL required.
`parquet.utc-timezone` chooses between UTC and the local time zone for the int96 conversion; fluvial's local
time zone is its sessions' (UTC), so both values write the same.
Parquet files are written whole when a part rolls (at every checkpoint, by size or by time).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from fluvial.common.row import Row, _create_row
from fluvial.common.serialization import BulkWriter, BulkWriterFactory
from fluvial.table.errors import ValidationException
from fluvial.table.types import DataType

__all__ = [
    "AVRO_CODECS",
    "PARQUET_OPTIONS",
    "TableBulkWriterFactory",
    "arrow_schema",
    "avro_schema",
    "record_reader",
    "record_writer",
    "value_reader",
]

AVRO_CODECS = ("null", "deflate", "snappy", "bzip2", "xz")
PARQUET_OPTIONS = {
    "parquet.compression",
    "parquet.block.size",
    "parquet.page.size",
    "parquet.dictionary.page.size",
    "parquet.enable.dictionary",
    "parquet.writer.version",
    "parquet.utc-timezone",
    "parquet.write.int64.timestamp",
}
_PARQUET_CODECS = {
    "UNCOMPRESSED": "none",
    "SNAPPY": "snappy",
    "GZIP": "gzip",
    "ZSTD": "zstd",
    "LZ4": "lz4",
    "BROTLI": "brotli",
}


# --------------------------------------------------------------------------------------------- avro types


def avro_schema(names: list[str], types: list[DataType], legacy_timestamps: bool = True) -> dict:
    """Flink's Avro schema of a row (`AvroSchemaConverter.convertToSchema`)."""
    return _avro_record("org.apache.flink.avro.generated.record", names, types, legacy_timestamps)


def _avro_record(name: str, names: list[str], types: list[DataType], legacy: bool) -> dict:
    fields = []
    for n, t in zip(names, types):
        avro = _avro_type(t, f"{name}_{n}", legacy)
        fields.append({"name": n, "type": avro, "default": None} if t.nullable else {"name": n, "type": avro})
    return {"type": "record", "name": name, "fields": fields}


def _avro_type(t: DataType, row_name: str, legacy: bool) -> Any:
    kind = _avro_not_null(t, row_name, legacy)
    return ["null", kind] if t.nullable else kind


def _avro_timestamp(t: DataType, legacy: bool) -> dict:
    precision = t.precision if t.precision is not None else 6
    if legacy and t.name == "TIMESTAMP_LTZ":
        raise ValidationException(
            f"the avro format's legacy timestamp mapping has no type for {t}; set "
            "'avro.timestamp_mapping.legacy' = 'false' (TIMESTAMP_LTZ is then Avro's timestamp-millis/-micros)"
        )
    if precision > (3 if legacy else 6):
        raise ValidationException(
            f"Avro does not support {t}: its timestamps have a precision of at most "
            f"{'3 under the legacy mapping' if legacy else '6'}; declare TIMESTAMP(3)"
        )
    local = "" if legacy or t.name == "TIMESTAMP_LTZ" else "local-"
    return {"type": "long", "logicalType": f"{local}timestamp-{'millis' if precision <= 3 else 'micros'}"}


def _avro_not_null(t: DataType, row_name: str, legacy: bool) -> Any:
    name = t.name
    simple = {
        "BOOLEAN": "boolean",
        "TINYINT": "int",
        "SMALLINT": "int",
        "INT": "int",
        "BIGINT": "long",
        "FLOAT": "float",
        "DOUBLE": "double",
        "CHAR": "string",
        "VARCHAR": "string",
        "BINARY": "bytes",
        "VARBINARY": "bytes",
    }
    if name in simple:
        return simple[name]
    if name == "DECIMAL":
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if name == "DATE":
        return {"type": "int", "logicalType": "date"}
    if name == "TIME":
        return {"type": "int", "logicalType": "time-millis"}
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _avro_timestamp(t, legacy)
    if name == "ARRAY" and t.element_type is not None:
        return {"type": "array", "items": _avro_type(t.element_type, row_name, legacy)}
    if name == "MAP" and t.key_type is not None and t.element_type is not None:
        if not t.key_type.is_string():
            raise ValidationException(
                f"Avro maps have character keys; the map type {t} cannot be written as Avro: use MAP<STRING, ...>"
            )
        return {"type": "map", "values": _avro_type(t.element_type, row_name, legacy)}
    if name == "ROW":
        return _avro_record(row_name, t.field_names(), t.field_types(), legacy)
    raise ValidationException(f"the type {t} has no Avro type; the avro format takes Flink's SQL types but {name}")


# --------------------------------------------------------------------------------------------- parquet types


def arrow_schema(names: list[str], types: list[DataType]) -> Any:
    """The Arrow schema pyarrow writes as Flink's Parquet schema (see the module docstring)."""
    pa = _pyarrow()
    return pa.schema([pa.field(n, _arrow_type(t), nullable=t.nullable) for n, t in zip(names, types)])


def _pyarrow(module: str = "pyarrow") -> Any:
    from fluvial.datastream.formats.row_files import require_extra

    return require_extra(module, "parquet", "parquet")


def _arrow_type(t: DataType) -> Any:
    pa = _pyarrow()

    simple = {
        "BOOLEAN": pa.bool_,
        "TINYINT": pa.int8,
        "SMALLINT": pa.int16,
        "INT": pa.int32,
        "BIGINT": pa.int64,
        "FLOAT": pa.float32,
        "DOUBLE": pa.float64,
        "CHAR": pa.string,
        "VARCHAR": pa.string,
        "BINARY": pa.binary,
        "VARBINARY": pa.binary,
        "DATE": pa.date32,
    }
    name = t.name
    if name in simple:
        return simple[name]()
    if name == "DECIMAL":
        return pa.decimal128(t.precision or 10, t.scale or 0)
    if name == "TIME":
        return pa.time32("ms")
    if name == "TIMESTAMP":
        return pa.timestamp("us")
    if name == "TIMESTAMP_LTZ":
        return pa.timestamp("us", tz="UTC")
    if name == "ARRAY" and t.element_type is not None:
        return pa.list_(pa.field("element", _arrow_type(t.element_type), t.element_type.nullable))
    if name == "MAP" and t.key_type is not None and t.element_type is not None:
        return pa.map_(_arrow_type(t.key_type), pa.field("value", _arrow_type(t.element_type), t.element_type.nullable))
    if name == "ROW":
        return pa.struct([pa.field(f.name, _arrow_type(f.data_type), f.data_type.nullable) for f in t.fields])
    raise ValidationException(
        f"the type {t} has no Parquet type; the parquet format takes Flink's SQL types but {name}"
    )


# --------------------------------------------------------------------------------------------- values


def _to_record(t: DataType) -> Callable[[Any], Any] | None:
    """A row value -> what fastavro and pyarrow take (rows as dicts); None where the value is taken as it is."""
    if t.name == "ROW":
        names = t.field_names()
        inner = [_to_record(f) for f in t.field_types()]
        return lambda v: (
            None if v is None else {n: (x if c is None or x is None else c(x)) for n, c, x in zip(names, inner, v)}
        )
    if t.name == "ARRAY" and t.element_type is not None:
        element = _to_record(t.element_type)
        return (
            None
            if element is None
            else (lambda v: None if v is None else [None if x is None else element(x) for x in v])
        )
    if t.name == "MAP" and t.element_type is not None:
        value = _to_record(t.element_type)
        return (
            None
            if value is None
            else (lambda v: None if v is None else {k: None if x is None else value(x) for k, x in v.items()})
        )
    return None


def value_reader(t: DataType) -> Callable[[Any], Any] | None:
    """A file's value -> the table's Python value (Rows for ROW, naive datetimes for TIMESTAMP, aware UTC ones for
    TIMESTAMP_LTZ, dicts for MAP); None where the file's value is already the table's."""
    if t.name == "ROW":
        names = t.field_names()
        inner = [value_reader(f) for f in t.field_types()]

        def row(v: Any) -> Any:
            if v is None:
                return None
            values = [v.get(n) for n in names]
            return _create_row(names, [x if c is None or x is None else c(x) for c, x in zip(inner, values)])

        return row
    if t.name == "ARRAY" and t.element_type is not None:
        element = value_reader(t.element_type)
        return None if element is None else (lambda v: [None if x is None else element(x) for x in v])
    if t.name == "MAP":
        value = value_reader(t.element_type) if t.element_type is not None else None
        pairs: Callable[[Any], Any] = lambda v: v.items() if isinstance(v, dict) else v  # noqa: E731  (Arrow: pairs)
        if value is None:
            return lambda v: dict(pairs(v))
        return lambda v: {k: None if x is None else value(x) for k, x in pairs(v)}
    if t.name == "TIMESTAMP":
        return lambda v: v.astimezone(_dt.UTC).replace(tzinfo=None) if v.tzinfo is not None else v
    if t.name == "TIMESTAMP_LTZ":
        return lambda v: v.replace(tzinfo=_dt.UTC) if v.tzinfo is None else v
    if t.name in ("FLOAT", "DOUBLE"):
        return float
    return None


def record_reader(names: list[str], types: list[DataType]) -> Callable[[dict], list]:
    """A file's record (a dict by column) -> the row's values in `names` order."""
    readers = [value_reader(t) for t in types]
    pairs = list(zip(names, readers))

    def values(record: dict) -> list:
        out = []
        for n, read in pairs:
            v = record.get(n)
            out.append(v if read is None or v is None else read(v))
        return out

    return values


def record_writer(
    names: list[str], types: list[DataType], indices: tuple[int, ...] | None = None
) -> Callable[[Any], dict]:
    """A row's values (those at `indices`, default all) -> the record fastavro and pyarrow write (a dict by
    column, nested rows as dicts)."""
    fields = list(zip(names, indices if indices is not None else range(len(names)), [_to_record(t) for t in types]))

    def record(values: Any) -> dict:
        out = {}
        for n, i, c in fields:
            v = values[i]
            out[n] = v if c is None or v is None else c(v)
        return out

    return record


# --------------------------------------------------------------------------------------------- writers


@dataclass(frozen=True)
class TableBulkWriterFactory(BulkWriterFactory):
    """Writes a table's rows (the data columns at `indices` of each full row) as avro or parquet part files."""

    fmt: str
    names: tuple[str, ...]
    types: tuple[DataType, ...]
    indices: tuple[int, ...]
    options: tuple[tuple[str, str], ...]

    def create(self, stream: BinaryIO) -> BulkWriter:
        names = self.names
        record_of = record_writer(list(names), list(self.types), self.indices)

        def to_record(row: Any) -> dict:
            return record_of(row._values if isinstance(row, Row) else row)

        options = dict(self.options)
        if self.fmt == "avro":
            from fluvial.datastream.formats.avro import AvroContainerWriter, AvroSchema

            schema = AvroSchema(json.dumps(avro_schema(list(names), list(self.types), _legacy_timestamps(options))))
            return AvroContainerWriter(schema, stream, options.get("avro.codec", "snappy"), to_record)
        from fluvial.datastream.formats.arrow_rows import ArrowTableWriter

        schema = arrow_schema(list(names), list(self.types))
        return ArrowTableWriter(stream, schema, to_record, _parquet_writer(options))

    def file_suffix(self) -> str:
        return ""  # Flink's part files carry no extension


def _parquet_writer(options: dict[str, str]) -> Callable[[Any, Any], None]:
    pq = _pyarrow("pyarrow.parquet")

    compression = _PARQUET_CODECS[options.get("parquet.compression", "SNAPPY").upper()]
    block_size = int(options.get("parquet.block.size", str(128 * 1024 * 1024)))
    keywords = {
        "compression": compression,
        "use_dictionary": options.get("parquet.enable.dictionary", "true").lower() == "true",
        "data_page_version": "2.0"
        if options.get("parquet.writer.version", "PARQUET_1_0").upper() == "PARQUET_2_0"
        else "1.0",
        "use_deprecated_int96_timestamps": options.get("parquet.write.int64.timestamp", "false").lower() != "true",
    }
    if "parquet.page.size" in options:
        keywords["data_page_size"] = int(options["parquet.page.size"])
    if "parquet.dictionary.page.size" in options:
        keywords["dictionary_pagesize_limit"] = int(options["parquet.dictionary.page.size"])

    def write(table: Any, sink: Any) -> None:
        # parquet.block.size is bytes per row group, pyarrow's row_group_size rows: rows of that many bytes
        rows = max(1, block_size * table.num_rows // max(1, table.nbytes)) if table.num_rows else None
        pq.write_table(table, sink, row_group_size=rows, **keywords)

    return write


def check_format_options(fmt: str, options: dict[str, str]) -> None:
    """The avro and parquet options' values, checked when the table is used (one sentence each)."""
    if fmt == "avro":
        codec = options.get("avro.codec", "snappy")
        if codec not in AVRO_CODECS:
            raise ValidationException(f"Unsupported avro.codec '{codec}'; use one of {', '.join(AVRO_CODECS)}")
        if codec == "snappy":
            _require("cramjam", "the snappy avro.codec", "avro")
        if options.get("avro.timestamp_mapping.legacy", "true").lower() not in ("true", "false"):
            raise ValidationException(
                f"'avro.timestamp_mapping.legacy' is 'true' or 'false', got '{options['avro.timestamp_mapping.legacy']}'"
            )
        _require("fastavro", "the avro format", "avro")
        return
    _require("pyarrow", "the parquet format", "parquet")
    codec = options.get("parquet.compression", "SNAPPY").upper()
    if codec not in _PARQUET_CODECS:
        raise ValidationException(f"Unsupported parquet.compression '{codec}'; use one of {', '.join(_PARQUET_CODECS)}")
    for key in ("parquet.block.size", "parquet.page.size", "parquet.dictionary.page.size"):
        if key in options and not (options[key].isdigit() and int(options[key]) > 0):
            raise ValidationException(f"'{key}' is a number of bytes, got '{options[key]}'")
    for key in ("parquet.enable.dictionary", "parquet.utc-timezone", "parquet.write.int64.timestamp"):
        if options.get(key, "false").lower() not in ("true", "false"):
            raise ValidationException(f"'{key}' is 'true' or 'false', got '{options[key]}'")
    version = options.get("parquet.writer.version", "PARQUET_1_0").upper()
    if version not in ("PARQUET_1_0", "PARQUET_2_0"):
        raise ValidationException(f"'parquet.writer.version' is PARQUET_1_0 or PARQUET_2_0, got '{version}'")


def _legacy_timestamps(options: dict[str, str]) -> bool:
    return options.get("avro.timestamp_mapping.legacy", "true").lower() == "true"


def check_avro_schema(names: list[str], types: list[DataType], options: dict[str, str]) -> None:
    """Every column has an Avro type (checked when the table is used, not when the first record is written)."""
    avro_schema(names, types, _legacy_timestamps(options))


def _require(module: str, what: str, extra: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ValidationException(
            f"{what} needs the '{module}' package, which is not installed: pip install 'fluvial[{extra}]'"
        )


# --------------------------------------------------------------------------------------------- readers


def avro_records(binary: Any) -> Iterator[Any]:
    import fastavro

    reader: Any = fastavro.reader(binary)
    return iter(reader)


def parquet_records(binary: Any, columns: list[str], batch_size: int = 2048) -> Iterator[dict]:
    """Only `columns` are read (a projection the planner pushes down reads fewer); INT96 timestamps as micros."""
    pq = _pyarrow("pyarrow.parquet")

    parquet = pq.ParquetFile(binary, coerce_int96_timestamp_unit="us")
    present = set(parquet.schema_arrow.names)
    missing = [c for c in columns if c not in present]
    if missing:
        raise ValueError(f"the parquet file has no column {', '.join(missing)}; it has {', '.join(present)}")
    for batch in parquet.iter_batches(batch_size=batch_size, columns=columns):
        yield from batch.to_pylist()
