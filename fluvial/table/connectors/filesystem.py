"""`'connector' = 'filesystem'` with `'format' = 'csv' | 'json'`: a directory or file of rows.

As a source, every file under `path` is read (bounded); lines are parsed by the format into the table's
types; a line that does not parse fails the job naming the line, unless `csv.ignore-parse-errors` /
`json.ignore-parse-errors` is true. As a sink, rows are written to part files under `path` and committed
on checkpoints (and at the end of a bounded job), exactly once, by fluvial's FileSink. The sink takes
inserts only, as Flink's filesystem sink without a changelog format does.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.functions import FlatMapFunction, MapFunction
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import ChangelogMode
from fluvial.table.types import DataType
from fluvial.table.values import cast_value, sql_string

_OPTIONS = {
    "path",
    "format",
    "csv.field-delimiter",
    "csv.ignore-parse-errors",
    "csv.null-literal",
    "csv.quote-character",
    "json.ignore-parse-errors",
    "sink.rolling-policy.file-size",
    "sink.rolling-policy.rollover-interval",
    "source.monitor-interval",
    "partition.default-name",
}


def _format(options: dict[str, str]) -> str:
    fmt = options.get("format")
    if fmt is None:
        raise ValidationException("One or more required options are missing for 'filesystem': format")
    if fmt not in ("csv", "json"):
        raise ValidationException(
            f"the filesystem connector reads and writes 'csv' and 'json'; format '{fmt}' is not supported yet"
        )
    return fmt


class ParseLine(FlatMapFunction):
    def __init__(self, names: Sequence[str], types: Sequence[DataType], fmt: str, options: dict[str, str]) -> None:
        self.names = list(names)
        self.types = list(types)
        self.fmt = fmt
        self.delimiter = options.get("csv.field-delimiter", ",")
        self.null_literal = options.get("csv.null-literal")
        self.ignore_errors = options.get(f"{fmt}.ignore-parse-errors", "false").lower() == "true"

    def flat_map(self, line: str) -> Any:
        if not line.strip():
            return ()
        try:
            values = self._csv(line) if self.fmt == "csv" else self._json(line)
        except (ValueError, TypeError) as error:
            if self.ignore_errors:
                return ()
            raise ValueError(
                f"Failed to deserialize {self.fmt.upper()} row '{line}': {error}; set "
                f"'{self.fmt}.ignore-parse-errors' = 'true' to skip such lines"
            ) from None
        return (_create_row(self.names, values, RowKind.INSERT),)

    def _csv(self, line: str) -> list:
        fields = next(csv.reader([line], delimiter=self.delimiter))
        if len(fields) != len(self.types):
            raise ValueError(f"expected {len(self.types)} fields, found {len(fields)}")
        out = []
        for text, t in zip(fields, self.types):
            if text == "" and not t.is_string() or self.null_literal is not None and text == self.null_literal:
                out.append(None)
            else:
                out.append(cast_value(text, t))
        return out

    def _json(self, line: str) -> list:
        document = json.loads(line)
        if not isinstance(document, dict):
            raise ValueError("a JSON row is an object")
        return [None if document.get(n) is None else cast_value(document[n], t) for n, t in zip(self.names, self.types)]


class FormatRow(MapFunction):
    def __init__(self, names: Sequence[str], types: Sequence[DataType], fmt: str, delimiter: str) -> None:
        self.names = list(names)
        self.types = list(types)
        self.fmt = fmt
        self.delimiter = delimiter

    def map(self, row: Row) -> str:
        return self.format_values(row._values)

    def format_values(self, values: Sequence[Any]) -> str:
        if self.fmt == "json":
            return json.dumps(
                {n: _json_value(v, t) for n, v, t in zip(self.names, values, self.types)},
                separators=(",", ":"),
                ensure_ascii=False,
            )
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


class FileSystemFactory:
    def create_source(self, env: Any, context: ConnectorContext) -> Any:
        from fluvial.datastream.connectors.file_system import FileSource, StreamFormat

        options = context.options
        check_options("filesystem", options, _OPTIONS, required=("path",))
        fmt = _format(options)
        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), options["path"]).build()
        lines = env.from_source(source, source_name=context.table_name)
        return lines.flat_map(ParseLine(context.names, [c.type for c in context.columns], fmt, options))

    def create_sink(self, stream: Any, context: ConnectorContext, mode: ChangelogMode) -> Any:
        from fluvial.common.encoder import Encoder
        from fluvial.datastream.connectors.file_sink import BasePathBucketAssigner
        from fluvial.datastream.connectors.file_system import FileSink

        options = context.options
        check_options("filesystem", options, _OPTIONS, required=("path",))
        fmt = _format(options)
        if mode is not ChangelogMode.INSERT_ONLY:
            raise ValidationException(
                f"Table sink '{context.table_name}' doesn't support consuming update and delete changes which is "
                "produced by a GROUP BY aggregation: the filesystem sink takes inserts only; aggregate in a "
                "window (TUMBLE/HOP/CUMULATE) or write to a sink that takes updates (print)"
            )
        text = stream.map(
            FormatRow(context.names, [c.type for c in context.columns], fmt, options.get("csv.field-delimiter", ","))
        )
        sink = (
            FileSink.for_row_format(options["path"], Encoder.simple_string_encoder())
            .with_bucket_assigner(BasePathBucketAssigner())
            .build()
        )
        return text.sink_to(sink)
