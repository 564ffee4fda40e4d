"""What the formats share: the check for a format's optional package, rows to and from named fields, and the
file reader whose offset counts records (`BulkFormat`'s contract: a restored reader skips exactly the
records already returned)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.row import Row, _create_row
from fluvial.common.typeinfo import RowTypeInfo
from fluvial.datastream.connectors.file_source import FormatReader
from fluvial.datastream.connectors.file_systems import open_for_read

__all__ = ["RecordFileReader", "require_extra", "row_from_mapping", "row_type_of", "row_values"]


def require_extra(module: str, extra: str, fmt: str) -> Any:
    """Import the package a format is built on, or fail naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f"the {fmt} format needs the '{module.split('.')[0]}' package, which is not installed: "
            f"pip install 'fluvial[{extra}]'"
        ) from None


def row_type_of(row_type: Any, what: str) -> RowTypeInfo:
    if not isinstance(row_type, RowTypeInfo):
        raise InvalidJobError(
            f"{what} takes a row type such as Types.ROW_NAMED(['a', 'b'], [Types.INT(), Types.STRING()]) "
            f"(PyFlink's DataTypes.ROW), got {row_type!r}"
        )
    return row_type


def row_values(record: Any, names: list[str], what: str) -> list:
    """A record's values in field order: a Row or tuple by position, a dict or a named Row by name."""
    if isinstance(record, dict):
        return [record.get(name) for name in names]
    if (
        isinstance(record, Row)
        and getattr(record, "_fields", None) is not None
        and all(name in record._fields for name in names)
    ):
        return [record[name] for name in names]
    if isinstance(record, (Row, tuple, list)):
        if len(record) != len(names):
            raise InvalidJobError(f"{what}: record {record!r} has {len(record)} fields, the schema {len(names)}")
        return list(record)
    raise InvalidJobError(f"{what} writes rows, tuples or dicts; got {type(record).__name__} {record!r}")


def row_from_mapping(names: list[str], values: Any, nested: dict[str, Callable[[Any], Any]] | None = None) -> Row:
    """A named Row from a mapping (nested converters by field name)."""
    if nested:
        return _create_row(names, [nested[n](values.get(n)) if n in nested else values.get(n) for n in names])
    return _create_row(names, [values.get(n) for n in names])


class RecordFileReader(FormatReader):
    """Reads one file through `records(binary_file) -> iterator`, `offset` = records returned so far."""

    def __init__(self, path: str, offset: int, records: Callable[[Any], Iterator[Any]]) -> None:
        self._file = open_for_read(path)
        self._records = records(self._file)
        self.offset = 0
        for _ in range(offset):
            if next(self._records, _END) is _END:
                break
            self.offset += 1

    def read(self, max_records: int) -> list | None:
        batch = []
        for record in self._records:
            batch.append(record)
            if len(batch) >= max_records:
                break
        if not batch:
            return None
        self.offset += len(batch)
        return batch

    def close(self) -> None:
        self._file.close()


_END = object()
