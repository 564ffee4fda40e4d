"""`'connector' = 'filesystem'`: a directory of part files in `'format' = 'csv' | 'json' | 'avro' | 'parquet'`,
optionally partitioned (`PARTITIONED BY (dt, hr)`: `path/dt=.../hr=.../part-...`).

As a source, every visible file under `path` is read (bounded; with `source.monitor-interval` new files are
picked up forever); the formats turn records into the table's types; a csv/json line that does not parse fails
the job naming the line, unless `csv.ignore-parse-errors` / `json.ignore-parse-errors` is true. Partition
columns come from the directories (`partition.default-name` is NULL), and partitions a query's WHERE clause
rules out are not read. As a sink, rows are written to part files (without the partition columns) in their
partition's directory and committed on checkpoints (and at the end of a bounded job), exactly once, by
fluvial's FileSink, rolled by `sink.rolling-policy.*`; `sink.partition-commit.*` adds a success file to each
partition once it is complete (`partition_commit`). The sink takes inserts only, as Flink's filesystem sink
without a changelog format does.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fluvial.common.encoder import Encoder
from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.connectors.file_source import BulkFormat, FormatReader, TextLineReader
from fluvial.datastream.formats.row_files import RecordFileReader
from fluvial.table.connectors import file_formats as ff
from fluvial.table.connectors.abilities import FilterPushDownResult
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.connectors.partitions import DEFAULT_PARTITION_NAME, PartitionLayout, PartitionTimeExtractor
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import ChangelogMode
from fluvial.table.planner.rex import Rex
from fluvial.table.types import DataType
from fluvial.table.values import cast_value, sql_string

_FORMATS = ("csv", "json", "avro", "parquet")
_OPTIONS = {
    "path",
    "format",
    "csv.field-delimiter",
    "csv.ignore-parse-errors",
    "csv.null-literal",
    "json.ignore-parse-errors",
    "avro.codec",
    "avro.timestamp_mapping.legacy",
    *ff.PARQUET_OPTIONS,
    "source.monitor-interval",
    "partition.default-name",
    "partition.time-extractor.kind",
    "partition.time-extractor.timestamp-pattern",
    "partition.time-extractor.timestamp-formatter",
    "sink.rolling-policy.file-size",
    "sink.rolling-policy.rollover-interval",
    "sink.rolling-policy.inactivity-interval",
    "sink.rolling-policy.check-interval",
    "sink.partition-commit.trigger",
    "sink.partition-commit.delay",
    "sink.partition-commit.watermark-time-zone",
    "sink.partition-commit.policy.kind",
    "sink.partition-commit.success-file.name",
    "sink.shuffle-by-partition.enable",
}
_SIZE_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20}
_SIZE_UNITS |= {"mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40}
_DURATION_UNITS = {"": 1, "ms": 1, "milli": 1, "millis": 1, "s": 1000, "sec": 1000, "secs": 1000, "second": 1000}
_DURATION_UNITS |= {"seconds": 1000, "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000}
_DURATION_UNITS |= {"minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000, "d": 86_400_000}
_DURATION_UNITS |= {"day": 86_400_000, "days": 86_400_000}


def _format(options: dict[str, str]) -> str:
    fmt = options.get("format")
    if fmt is None:
        raise ValidationException("One or more required options are missing for 'filesystem': format")
    if fmt not in _FORMATS:
        raise ValidationException(
            f"Could not find any format factory for identifier '{fmt}' of the filesystem connector; available "
            f"formats: {', '.join(_FORMATS)}"
        )
    if fmt in ("avro", "parquet"):
        ff.check_format_options(fmt, options)
    return fmt


def memory_size(options: dict[str, str], key: str, default: int) -> int:
    """Flink's MemorySize text (`128MB`, `1 kb`, `4096`): binary units."""
    if key not in options:
        return default
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", options[key])
    if match is None or match.group(2).lower() not in _SIZE_UNITS or int(match.group(1)) <= 0:
        raise ValidationException(f"'{key}' = '{options[key]}' is not a memory size; write e.g. '128MB' or '1 kb'")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]


def duration_ms(options: dict[str, str], key: str, default: int, minimum: int = 1) -> int:
    """Flink's Duration text (`30 min`, `1 h`, `10s`, `500 ms`, plain milliseconds)."""
    if key not in options:
        return default
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", options[key])
    if match is None or match.group(2).lower() not in _DURATION_UNITS or int(match.group(1)) < minimum:
        raise ValidationException(
            f"'{key}' = '{options[key]}' is not a duration; write e.g. '30 min', '10 s' or '500 ms'"
        )
    return int(match.group(1)) * _DURATION_UNITS[match.group(2).lower()]


# ---------------------------------------------------------------------------------------------- csv and json


class ParseLine:
    """A csv or json line -> the data columns' values (None for a blank line or a skipped bad one); columns
    outside `wanted` (a pushed projection leaves them unread) are not converted: None."""

    def __init__(
        self,
        names: Sequence[str],
        types: Sequence[DataType],
        fmt: str,
        options: dict[str, str],
        wanted: frozenset[str] | None = None,
    ) -> None:
        self.names = list(names)
        self.types = list(types)
        self.wanted = [wanted is None or n in wanted for n in self.names]
        self.fmt = fmt
        self.delimiter = options.get("csv.field-delimiter", ",")
        self.null_literal = options.get("csv.null-literal")
        self.ignore_errors = options.get(f"{fmt}.ignore-parse-errors", "false").lower() == "true"

    def __call__(self, line: str) -> list | None:
        if not line.strip():
            return None
        try:
            return self._csv(line) if self.fmt == "csv" else self._json(line)
        except (ValueError, TypeError) as error:
            if self.ignore_errors:
                return None
            raise ValueError(
                f"Failed to deserialize {self.fmt.upper()} row '{line}': {error}; set "
                f"'{self.fmt}.ignore-parse-errors' = 'true' to skip such lines"
            ) from None

    def _csv(self, line: str) -> list:
        fields = next(csv.reader([line], delimiter=self.delimiter))
        if len(fields) != len(self.types):
            raise ValueError(f"expected {len(self.types)} fields, found {len(fields)}")
        out: list[Any] = []
        for text, t, wanted in zip(fields, self.types, self.wanted):
            if not wanted:
                out.append(None)
            elif text == "" and not t.is_string() or self.null_literal is not None and text == self.null_literal:
                out.append(None)
            else:
                out.append(cast_value(text, t))
        return out

    def _json(self, line: str) -> list:
        document = json.loads(line)
        if not isinstance(document, dict):
            raise ValueError("a JSON row is an object")
        return [
            None if not wanted or document.get(n) is None else cast_value(document[n], t)
            for n, t, wanted in zip(self.names, self.types, self.wanted)
        ]


@dataclass(frozen=True)
class LineEncoder(Encoder):
    """A table row's data columns (at `indices`) as a csv or json line."""

    names: tuple[str, ...]
    types: tuple[DataType, ...]
    indices: tuple[int, ...]
    fmt: str
    delimiter: str = ","

    def encode(self, value: Any) -> bytes:
        values = value._values if isinstance(value, Row) else value
        return (self.format_values([values[i] for i in self.indices]) + "\n").encode()

    def format_values(self, values: Sequence[Any]) -> str:
        """The data columns' values as one csv or json line without its line end (also Kafka's message text)."""
        if self.fmt == "json":
            document = {n: _json_value(v, t) for n, v, t in zip(self.names, values, self.types)}
            return json.dumps(document, separators=(",", ":"), ensure_ascii=False)
        buffer = io.StringIO()
        csv.writer(buffer, delimiter=self.delimiter, lineterminator="").writerow(
            ["" if v is None else (v if isinstance(v, str) else _csv_text(v, t)) for v, t in zip(values, self.types)]
        )
        return buffer.getvalue()


def _csv_text(value: Any, t: DataType) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return sql_string(value, t)


def _json_value(value: Any, t: DataType) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return sql_string(value, t)


# ---------------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class TableFileFormat(BulkFormat):
    """Reads a table's files as Rows of `output` columns: the data columns `names` from each file (parquet
    reads only those), the partition columns from its directories; files of partitions `partition_filter`
    rules out are not opened."""

    fmt: str
    base_path: str
    names: tuple[str, ...]
    types: tuple[DataType, ...]
    output: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    layout: PartitionLayout | None = None
    partition_filter: tuple[tuple[str, tuple[Any, ...]], ...] | None = None

    def open_reader(self, path: str, offset: int) -> FormatReader:
        partition: tuple[Any, ...] = ()
        if self.layout is not None:
            partition = self.layout.values_of(path, self.base_path)
            if self.partition_filter and not self.layout.allowed(partition, self.partition_filter):
                return _NoRecords(offset)
        source = list(self.names) + list(self.layout.keys if self.layout else ())
        positions = [source.index(n) for n in self.output]
        if self.fmt in ("csv", "json"):
            options = dict(self.options)
            reader: FormatReader = TextLineReader(path, offset, "UTF-8")
            values: Callable[[Any], list | None] = ParseLine(
                self.names, self.types, self.fmt, options, frozenset(self.output)
            )
        elif self.fmt == "avro":
            reader = RecordFileReader(path, offset, ff.avro_records)
            values = ff.record_reader(list(self.names), list(self.types))
        else:
            names = [n for n in self.names if n in self.output]
            reader = RecordFileReader(path, offset, lambda binary: ff.parquet_records(binary, names))
            read = ff.record_reader(list(self.names), list(self.types))
            values = read
        return _RowReader(reader, values, partition, positions, self.output)


class _RowReader(FormatReader):
    """A file's records as the table's Rows; `offset` is the inner reader's (bytes or records)."""

    def __init__(
        self,
        inner: FormatReader,
        values: Callable[[Any], list | None],
        partition: tuple[Any, ...],
        positions: list[int],
        names: tuple[str, ...],
    ) -> None:
        self._inner = inner
        self._values = values
        self._partition = list(partition)
        self._positions = positions
        self._names = list(names)
        self.offset = inner.offset

    def read(self, max_records: int) -> list | None:
        batch = self._inner.read(max_records)
        self.offset = self._inner.offset
        if batch is None:
            return None
        rows = []
        names, positions, partition = self._names, self._positions, self._partition
        for record in batch:
            values = self._values(record)
            if values is None:
                continue
            full = values + partition if partition else values
            rows.append(_create_row(names, [full[i] for i in positions], RowKind.INSERT))
        return rows

    def close(self) -> None:
        self._inner.close()


class _NoRecords(FormatReader):
    """A pruned partition's file: never opened."""

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def read(self, max_records: int) -> list | None:
        return None

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------- the factory


class FileSystemFactory:
    """Takes a projection (only the read columns are converted from csv/json text, only they are read from
    parquet) and the WHERE conjuncts as Flink's FileSystemTableSource does: accepted (the scan shows them) and
    all left remaining to the Calc after it, whose conjuncts on partition columns prune partitions
    (`planner/partition_pruning.py`)."""

    def supports_nested_projection(self) -> bool:
        return False

    def apply_filters(self, context: ConnectorContext, filters: Sequence[Rex]) -> FilterPushDownResult:
        return FilterPushDownResult(tuple(filters), tuple(filters))

    def create_source(self, env: Any, context: ConnectorContext, columns: Sequence[str] | None = None) -> Any:
        """The table's rows, of `columns` (a projection; default: the planner's pushed projection, else every
        physical column, in order)."""
        from fluvial.datastream.connectors.file_source import FileSource
        from fluvial.datastream.connectors.file_systems import resolve_path

        options = context.options
        check_options("filesystem", options, _OPTIONS, required=("path",))
        fmt = _format(options)
        layout = _layout(context)
        keys = layout.keys if layout else ()
        data = [c for c in context.columns if c.name not in keys]
        output = tuple(columns) if columns is not None else tuple(context.produced_names)
        base = resolve_path(options["path"])
        table_format = TableFileFormat(
            fmt,
            base,
            tuple(c.name for c in data),
            tuple(c.type for c in data),
            output,
            tuple(options.items()),
            layout,
            context.partition_filter,
        )
        paths = [base]
        monitor = duration_ms(options, "source.monitor-interval", 0) if "source.monitor-interval" in options else None
        if layout is not None and context.partition_filter and monitor is None:
            # partition pruning: list the partitions now and read only those the filter allows
            allowed = [
                d
                for d in layout.directories(base)
                if layout.allowed(layout.values_of(d + "/f", base), context.partition_filter)
            ]
            paths = allowed or paths  # none left: the base path, whose every file the format skips
        builder = FileSource.for_record_stream_format(table_format, *paths)
        if monitor is not None:
            builder.monitor_continuously(monitor)
        return env.from_source(builder.build(), source_name=context.table_name)

    def create_sink(self, stream: Any, context: ConnectorContext, mode: ChangelogMode) -> Any:
        from fluvial.datastream.connectors.file_sink import BasePathBucketAssigner, FileSink, RollingPolicy
        from fluvial.datastream.connectors.file_systems import resolve_path
        from fluvial.table.connectors.file_formats import TableBulkWriterFactory
        from fluvial.table.connectors.partitions import PartitionBucketAssigner

        options = context.options
        check_options("filesystem", options, _OPTIONS, required=("path",))
        fmt = _format(options)
        if mode is not ChangelogMode.INSERT_ONLY:
            raise ValidationException(
                f"Table sink '{context.table_name}' doesn't support consuming update and delete changes which is "
                "produced by a GROUP BY aggregation: the filesystem sink takes inserts only; aggregate in a "
                "window (TUMBLE/HOP/CUMULATE) or write to a sink that takes updates (print)"
            )
        layout = _layout(context)
        keys = layout.keys if layout else ()
        names = context.names
        data = [(i, c) for i, c in enumerate(context.columns) if c.name not in keys]
        if not data:
            raise ValidationException(
                f"Table '{context.table_name}': every column is a partition column, so the part files would hold "
                "nothing; keep at least one column out of PARTITIONED BY"
            )
        data_names = tuple(c.name for _, c in data)
        data_types = tuple(c.type for _, c in data)
        indices = tuple(i for i, _ in data)
        policy = RollingPolicy(
            memory_size(options, "sink.rolling-policy.file-size", 128 << 20),
            duration_ms(options, "sink.rolling-policy.rollover-interval", 30 * 60_000),
            duration_ms(options, "sink.rolling-policy.inactivity-interval", 30 * 60_000),
        )
        check_interval = duration_ms(options, "sink.rolling-policy.check-interval", 60_000)
        assigner = (
            BasePathBucketAssigner()
            if layout is None
            else PartitionBucketAssigner(layout, tuple(names.index(k) for k in keys))
        )
        commit = _partition_commit(context, layout)
        if fmt in ("csv", "json"):
            encoder = LineEncoder(data_names, data_types, indices, fmt, options.get("csv.field-delimiter", ","))
            builder = FileSink.for_row_format(resolve_path(options["path"]), encoder)
        else:
            if fmt == "avro":
                ff.check_avro_schema(list(data_names), list(data_types), options)
            else:
                ff.arrow_schema(list(data_names), list(data_types))
            factory = TableBulkWriterFactory(fmt, data_names, data_types, indices, tuple(options.items()))
            builder = FileSink.for_bulk_format(resolve_path(options["path"]), factory)
        sink = (
            builder.with_bucket_assigner(assigner)
            .with_rolling_policy(policy)
            .with_bucket_check_interval(check_interval)
            .build()
        )
        if commit is not None:
            from fluvial.table.connectors.partition_commit import PartitionCommitSink

            fields = {f.name: getattr(sink, f.name) for f in dataclasses.fields(FileSink)}
            sink = PartitionCommitSink(**fields, partition_commit=commit)
        shuffle = options.get("sink.shuffle-by-partition.enable", "false").lower()
        if shuffle not in ("true", "false"):
            raise ValidationException(f"'sink.shuffle-by-partition.enable' is 'true' or 'false', got '{shuffle}'")
        if shuffle == "true" and layout is not None:
            from fluvial.table.runtime.functions import RowKeySelector

            # each partition's rows to one writer: fewer files per partition, at the price of skew
            stream = stream.key_by(RowKeySelector([names.index(k) for k in keys]))
        return stream.sink_to(sink).name(f"Sink: {context.table_name}")


def _layout(context: ConnectorContext) -> PartitionLayout | None:
    if not context.partition_keys:
        return None
    types = {c.name: c.type for c in context.columns}
    default = context.options.get("partition.default-name", DEFAULT_PARTITION_NAME)
    if not default:
        raise ValidationException("'partition.default-name' is empty; give the directory name of NULL partitions")
    return PartitionLayout(context.partition_keys, tuple(types[k] for k in context.partition_keys), default)


def _partition_commit(context: ConnectorContext, layout: PartitionLayout | None) -> Any:
    """The partition commit the options ask for (None: no `sink.partition-commit.policy.kind`)."""
    from fluvial.table.connectors.partition_commit import PartitionCommitConfig

    options = context.options
    kind = options.get("partition.time-extractor.kind", "default")
    if kind != "default":
        raise ValidationException(
            f"'partition.time-extractor.kind' = '{kind}' is not supported: a custom extractor is a Java class; "
            "use 'default' with 'partition.time-extractor.timestamp-pattern'"
        )
    trigger = options.get("sink.partition-commit.trigger", "process-time")
    if trigger not in ("process-time", "partition-time"):
        raise ValidationException(
            f"'sink.partition-commit.trigger' = '{trigger}' is not a trigger; use 'process-time' or 'partition-time'"
        )
    delay = duration_ms(options, "sink.partition-commit.delay", 0, 0)
    policies = [p.strip() for p in options.get("sink.partition-commit.policy.kind", "").split(",") if p.strip()]
    if not policies:
        idle = sorted(k for k in options if k.startswith(("sink.partition-commit.", "partition.time-extractor.")))
        if idle:
            raise ValidationException(
                f"{', '.join(idle)} take effect only with a partition commit policy; add "
                "'sink.partition-commit.policy.kind' = 'success-file' or remove them"
            )
        return None
    for policy in policies:
        if policy == "metastore":
            raise ValidationException(
                "'sink.partition-commit.policy.kind' = 'metastore' needs a Hive metastore, and fluvial has none; "
                "use 'success-file'"
            )
        if policy != "success-file":
            raise ValidationException(
                f"'sink.partition-commit.policy.kind' = '{policy}' is not supported; use 'success-file' "
                "('custom' names a Java class, 'metastore' a Hive metastore)"
            )
    if layout is None:
        raise ValidationException(
            f"Table '{context.table_name}' sets 'sink.partition-commit.policy.kind' but is not partitioned; add "
            "PARTITIONED BY (...) or remove the partition commit options"
        )
    name = options.get("sink.partition-commit.success-file.name", "_SUCCESS")
    if not name or "/" in name:
        raise ValidationException(
            f"'sink.partition-commit.success-file.name' = '{name}' is not a file name; use a plain name such as '_SUCCESS'"
        )
    extractor = PartitionTimeExtractor(
        layout.keys,
        options.get("partition.time-extractor.timestamp-pattern"),
        options.get("partition.time-extractor.timestamp-formatter"),
        options.get("sink.partition-commit.watermark-time-zone", "UTC"),
    )
    return PartitionCommitConfig(trigger, delay, name, extractor)
