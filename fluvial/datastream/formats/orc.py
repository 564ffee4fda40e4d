"""ORC (PyFlink `pyflink.datastream.formats.orc`) on pyarrow: install `fluvial[orc]`.

`OrcBulkWriters.for_row_type(row_type, writer_properties=None)`: a FileSink bulk format writing Rows
(`row_type` is `Types.ROW_NAMED(...)`; PyFlink: the Table API's RowType). `writer_properties` take pyarrow's
ORC writer options by name (e.g. `compression`, `stripe_size`); `hadoop_config` is refused, as there is no
Hadoop here (use an fsspec URL as the path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, BinaryIO

from fluvial.common.errors import InvalidJobError
from fluvial.common.serialization import BulkWriter, BulkWriterFactory
from fluvial.common.typeinfo import RowTypeInfo
from fluvial.datastream.formats.row_files import require_extra, row_type_of

orc = require_extra("pyarrow.orc", "orc", "ORC")  # first, so a missing pyarrow names this format's extra

from fluvial.datastream.formats import arrow_rows  # noqa: E402

__all__ = ["OrcBulkWriters"]

_WRITER_OPTIONS = (
    "file_version",
    "batch_size",
    "stripe_size",
    "compression",
    "compression_block_size",
    "compression_strategy",
    "row_index_stride",
    "padding_tolerance",
    "dictionary_key_size_threshold",
    "bloom_filter_columns",
    "bloom_filter_fpp",
)


@dataclass(frozen=True, slots=True)
class _OrcWriterFactory(BulkWriterFactory):
    row_type: RowTypeInfo
    options: dict[str, Any] = field(default_factory=dict)

    def create(self, stream: BinaryIO) -> BulkWriter:
        options = self.options
        return arrow_rows.ArrowTableWriter(
            stream,
            arrow_rows.arrow_schema(self.row_type),
            arrow_rows.row_record(self.row_type),
            lambda table, sink: orc.write_table(table, sink, **options),
        )

    def file_suffix(self) -> str:
        return ".orc"


def _options(writer_properties: Any) -> dict[str, Any]:
    if writer_properties is None:
        return {}
    raw = writer_properties.to_dict() if hasattr(writer_properties, "to_dict") else dict(writer_properties)
    unknown = [k for k in raw if k not in _WRITER_OPTIONS]
    if unknown:
        raise InvalidJobError(f"unknown ORC writer options {unknown}; known: {', '.join(_WRITER_OPTIONS)}")
    return {k: (int(v) if str(v).isdigit() else v) for k, v in raw.items()}


class OrcBulkWriters:
    """FileSink bulk writers of ORC files (PyFlink's `OrcBulkWriters`), with pyarrow."""

    @staticmethod
    def for_row_type(
        row_type: RowTypeInfo, writer_properties: Any = None, hadoop_config: Any = None
    ) -> BulkWriterFactory:
        """A FileSink bulk-writer factory writing Rows of `row_type` to ORC files.

        Args:
            row_type: The Row type.
            writer_properties: ORC writer properties.
            hadoop_config: Accepted for PyFlink's signature.

        Returns:
            The factory.
        """
        if hadoop_config is not None and getattr(hadoop_config, "keys", lambda: [])():
            raise InvalidJobError(
                "hadoop_config is not supported: fluvial writes through fsspec; put the "
                "filesystem in the path's URL instead"
            )
        row_type = row_type_of(row_type, "OrcBulkWriters.for_row_type")
        arrow_rows.arrow_schema(row_type)
        return _OrcWriterFactory(row_type, _options(writer_properties))
