"""Partitioned tables of the filesystem connector: Hive's `k1=v1/k2=v2` directories, as Flink lays them out.

A sink row goes to the directory of its partition columns' values (escaped as Flink's `PartitionPathUtils`
escapes them; NULL and '' become `partition.default-name`); the part files hold the other columns. A source
finds the partitions by walking the directories, fills the partition columns from the path (typed by the DDL),
and skips the partitions a query's WHERE clause rules out (`partition_filter`). The partition-time trigger of
the partition commit reads a time from the values (`partition.time-extractor.*`).
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from fluvial.common.row import Row
from fluvial.datastream.connectors import file_systems as fsys
from fluvial.datastream.connectors.file_sink import BucketAssigner, BucketAssignerContext, _strftime_pattern
from fluvial.table.errors import ValidationException
from fluvial.table.types import DataType
from fluvial.table.values import cast_value, sql_string

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "PartitionBucketAssigner",
    "PartitionLayout",
    "PartitionTimeExtractor",
    "escape",
    "unescape",
]

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^")


def escape(text: str) -> str:
    """Flink's (Hive's) escaping of a partition value in a path: `%XX` for separators and control characters."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED or c < " " else c for c in text)


def unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "%" and _is_hex(text[i + 1 : i + 3]):
            out.append(chr(int(text[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


@dataclass(frozen=True)
class PartitionLayout:
    """The partition columns of a table: their names, types and places in the table's row."""

    keys: tuple[str, ...]
    types: tuple[DataType, ...]
    default_name: str = DEFAULT_PARTITION_NAME

    def text(self, value: Any, t: DataType) -> str:
        """A partition value as its directory name (before escaping)."""
        if value is None:
            return self.default_name
        text = value if isinstance(value, str) else sql_string(value, t)
        return text or self.default_name

    def path_of(self, values: Sequence[Any]) -> str:
        return "/".join(f"{k}={escape(self.text(v, t))}" for k, v, t in zip(self.keys, values, self.types))

    def values_of(self, file_path: str, base_path: str) -> tuple[Any, ...]:
        """The typed partition values of a file under `base_path`, from its `k=v` directories."""
        relative = file_path[len(base_path) :].lstrip("/").lstrip(os.sep).replace(os.sep, "/")
        parts = relative.split("/")[:-1]
        if len(parts) < len(self.keys) or any(not p.startswith(f"{k}=") for p, k in zip(parts, self.keys)):
            raise ValueError(
                f"file {file_path!r} is not inside the partition directories "
                f"{'/'.join(k + '=...' for k in self.keys)} of the table's PARTITIONED BY; move it into its "
                f"partition or declare the table's partitions as laid out"
            )
        return tuple(
            self._typed(unescape(p[len(k) + 1 :]), k, t, file_path) for p, k, t in zip(parts, self.keys, self.types)
        )

    def _typed(self, text: str, key: str, t: DataType, file_path: str) -> Any:
        if text == self.default_name:
            return None
        if t.is_string():
            return text
        try:
            return cast_value(text, t)
        except (ValueError, TypeError, ArithmeticError):
            raise ValueError(
                f"partition {key}={text} of file {file_path!r} is not of type {t}, the type of the partition column "
                f"'{key}'; fix the directory's name or the column's type"
            ) from None

    def directories(self, base_path: str) -> list[str]:
        """The partition directories (depth = number of keys) under `base_path` that exist now."""
        level = [base_path]
        for key in self.keys:
            level = [
                d
                for parent in level
                for d in _subdirectories(parent)
                if d.rsplit("/", 1)[-1].rsplit(os.sep, 1)[-1].startswith(f"{key}=")
            ]
        return level

    def allowed(self, values: tuple[Any, ...], partition_filter: tuple[tuple[str, tuple[Any, ...]], ...]) -> bool:
        """Whether a partition's values pass the filter (column -> the values the WHERE clause allows)."""
        for key, accepted in partition_filter:
            if key in self.keys and values[self.keys.index(key)] not in accepted:
                return False
        return True


def _subdirectories(path: str) -> list[str]:
    if fsys.is_local(path):
        try:
            names = sorted(os.listdir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [
            os.path.join(path, n)
            for n in names
            if not n.startswith((".", "_")) and os.path.isdir(os.path.join(path, n))
        ]
    fs, inner = fsys.filesystem(path)
    if not fs.isdir(inner):
        return []
    return sorted(
        fsys.qualify(fs, entry["name"], path)
        for entry in fs.ls(inner, detail=True)
        if entry["type"] == "directory" and not entry["name"].rstrip("/").rsplit("/", 1)[-1].startswith((".", "_"))
    )


@dataclass(frozen=True, slots=True)
class PartitionBucketAssigner(BucketAssigner):
    """The FileSink bucket of a row: its partition directory `k1=v1/k2=v2`."""

    layout: PartitionLayout
    indices: tuple[int, ...]
    bucket_per_batch: ClassVar[bool] = False

    def get_bucket_id(self, element: Any, context: BucketAssignerContext) -> str:
        values = element._values if isinstance(element, Row) else element
        return self.layout.path_of([values[i] for i in self.indices])


@dataclass(frozen=True)
class PartitionTimeExtractor:
    """Flink's default partition time extractor: `timestamp-pattern` (`$dt $hr:00:00`; default: the first
    partition value) filled from the partition's values, parsed with `timestamp-formatter` (default
    `yyyy-MM-dd HH:mm:ss`, which also takes a bare `yyyy-MM-dd`), in `time_zone` (the watermark's time zone)."""

    keys: tuple[str, ...]
    pattern: str | None = None
    formatter: str | None = None
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        if self.formatter is not None:
            _strftime_pattern(self.formatter)
        try:
            ZoneInfo(self.time_zone)
        except (ValueError, KeyError) as error:
            raise ValidationException(
                f"'sink.partition-commit.watermark-time-zone' = '{self.time_zone}' is not a time zone ({error}); "
                "use an IANA name such as 'UTC' or 'Asia/Shanghai'"
            ) from None

    def millis(self, partition: str) -> int:
        """The partition's time (epoch ms) from its directory path `k1=v1/k2=v2`."""
        values = {}
        for part in partition.split("/"):
            key, _, value = part.partition("=")
            values[key] = unescape(value)
        if self.pattern is None:
            text = values[self.keys[0]]
        else:
            text = self.pattern
            for key in sorted(self.keys, key=len, reverse=True):  # $hour before $h
                text = text.replace(f"${key}", values.get(key, ""))
        moment = self._parse(text, partition)
        return int(moment.replace(tzinfo=ZoneInfo(self.time_zone)).timestamp() * 1000)

    def _parse(self, text: str, partition: str) -> _dt.datetime:
        try:
            if self.formatter is not None:
                return _dt.datetime.strptime(text, _strftime_pattern(self.formatter))
            if len(text) == 10:
                return _dt.datetime.strptime(text, "%Y-%m-%d")
            return _dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"partition {partition!r}: '{text}' is not a time of the pattern "
                f"'{self.formatter or 'yyyy-MM-dd HH:mm:ss'}'; set 'partition.time-extractor.timestamp-pattern' "
                "(e.g. '$dt $hr:00:00') and 'partition.time-extractor.timestamp-formatter' to match the partitions"
            ) from None
