"""Parquet (PyFlink `pyflink.datastream.formats.parquet`) on pyarrow: install `fluvial[parquet]`.

- `ParquetColumnarRowInputFormat(row_type, batch_size=2048, ...)`: a FileSource bulk format reading Rows
  (`FileSource.for_bulk_file_format(...)`), only the row type's columns, `batch_size` records at a time.
- `ParquetBulkWriters.for_row_type(row_type, utc_timestamp=False)`: a FileSink bulk format writing Rows.
- `AvroParquetReaders.for_generic_record(schema)` / `AvroParquetWriters.for_generic_record(schema)`: Avro
  generic records (dicts) in Parquet files.
`row_type` is `Types.ROW_NAMED(...)` (PyFlink: the Table API's RowType). `hadoop_config` is refused: there is no
Hadoop here; give any fsspec URL as the path instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from fluvial.common.errors import InvalidJobError
from fluvial.common.serialization import BulkWriter, BulkWriterFactory
from fluvial.common.typeinfo import RowTypeInfo
from fluvial.datastream.connectors.file_source import BulkFormat, StreamFormat
from fluvial.datastream.formats import arrow_rows
from fluvial.datastream.formats.row_files import RecordFileReader, require_extra, row_type_of

pq = require_extra("pyarrow.parquet", "parquet", "Parquet")
pa = arrow_rows.pa

__all__ = ["AvroParquetReaders", "AvroParquetWriters", "ParquetBulkWriters", "ParquetColumnarRowInputFormat"]


def _no_hadoop(hadoop_config: Any) -> None:
    if hadoop_config is not None and getattr(hadoop_config, "keys", lambda: [])():
        raise InvalidJobError(
            "hadoop_config is not supported: fluvial reads and writes through fsspec; put the "
            "filesystem in the path's URL (s3://, gs://, ...) instead"
        )


def _parquet_records(binary: Any, columns: list[str] | None, batch_size: int) -> Iterator[dict]:
    parquet = pq.ParquetFile(binary)
    for batch in parquet.iter_batches(batch_size=batch_size, columns=columns):
        yield from batch.to_pylist()


@dataclass(frozen=True, slots=True)
class ParquetColumnarRowInputFormat(BulkFormat):
    """Reads Parquet files as Rows (PyFlink's `ParquetColumnarRowInputFormat`), with pyarrow."""

    row_type: RowTypeInfo
    hadoop_config: Any = None
    batch_size: int = 2048
    is_utc_timestamp: bool = False
    is_case_sensitive: bool = True

    def __post_init__(self) -> None:
        row_type_of(self.row_type, "ParquetColumnarRowInputFormat")
        _no_hadoop(self.hadoop_config)
        if self.batch_size < 1:
            raise InvalidJobError(f"batch_size must be >= 1, got {self.batch_size}")

    def open_reader(self, path: str, offset: int) -> RecordFileReader:
        """A reader of one Parquet file.

        Args:
            path: The file.
            offset: Where to start (a checkpointed position).

        Returns:
            The reader.
        """
        names, size = self.row_type.get_field_names(), self.batch_size
        to_row = arrow_rows.rows_converter(self.row_type)

        def records(binary: Any) -> Iterator[Any]:
            for record in _parquet_records(binary, names, size):
                yield to_row(record)

        return RecordFileReader(path, offset, records)


@dataclass(frozen=True, slots=True)
class _ParquetWriterFactory(BulkWriterFactory):
    schema_source: Any  # a RowTypeInfo, or an AvroSchema
    utc_timestamp: bool = False

    def create(self, stream: BinaryIO) -> BulkWriter:
        if isinstance(self.schema_source, RowTypeInfo):
            schema = arrow_rows.arrow_schema(self.schema_source, self.utc_timestamp)
            to_record = arrow_rows.row_record(self.schema_source)
        else:
            schema = pa.schema(arrow_rows.arrow_type_from_avro(self.schema_source.parsed))
            to_record = arrow_rows.avro_record
        return arrow_rows.ArrowTableWriter(stream, schema, to_record, lambda table, sink: pq.write_table(table, sink))

    def file_suffix(self) -> str:
        return ".parquet"


class ParquetBulkWriters:
    """FileSink bulk writers of Parquet files (PyFlink's `ParquetBulkWriters`), with pyarrow."""

    @staticmethod
    def for_row_type(
        row_type: RowTypeInfo, hadoop_config: Any = None, utc_timestamp: bool = False
    ) -> BulkWriterFactory:
        """A FileSink bulk-writer factory writing Rows of `row_type` to Parquet files.

        Args:
            row_type: The Row type (`Types.ROW_NAMED(...)`).
            hadoop_config: Accepted for PyFlink's signature.
            utc_timestamp: Write timestamps as UTC.

        Returns:
            The factory.
        """
        _no_hadoop(hadoop_config)
        row_type = row_type_of(row_type, "ParquetBulkWriters.for_row_type")
        arrow_rows.arrow_schema(row_type)  # every column representable, checked now
        return _ParquetWriterFactory(row_type, utc_timestamp)


def _avro_schema(schema: Any, what: str) -> Any:
    from fluvial.datastream.formats.avro import AvroSchema

    if not isinstance(schema, AvroSchema):
        raise InvalidJobError(f"{what} takes an AvroSchema, got {schema!r}")
    arrow_rows.arrow_type_from_avro(schema.parsed)
    return schema


@dataclass(frozen=True, slots=True)
class _AvroParquetFormat(StreamFormat):
    schema: Any

    def open_reader(self, path: str, offset: int) -> RecordFileReader:
        return RecordFileReader(path, offset, lambda binary: _parquet_records(binary, None, 2048))


class AvroParquetReaders:
    """Reads Parquet files as Avro generic records (PyFlink's `AvroParquetReaders`)."""

    @staticmethod
    def for_generic_record(schema: Any) -> StreamFormat:
        """A FileSource format reading Parquet files as records (dicts) of an Avro schema.

        Args:
            schema: The AvroSchema.

        Returns:
            The format.
        """
        return _AvroParquetFormat(_avro_schema(schema, "AvroParquetReaders.for_generic_record"))


class AvroParquetWriters:
    """Writes Avro generic records to Parquet files (PyFlink's `AvroParquetWriters`)."""

    @staticmethod
    def for_generic_record(schema: Any) -> BulkWriterFactory:
        """A FileSink bulk-writer factory writing records (dicts) of an Avro schema to Parquet.

        Args:
            schema: The AvroSchema.

        Returns:
            The factory.
        """
        return _ParquetWriterFactory(_avro_schema(schema, "AvroParquetWriters.for_generic_record"))
