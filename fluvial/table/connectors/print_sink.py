"""`'connector' = 'print'`: each row as Flink's print connector writes it, `+I[a, 1]` (with `-U`, `+U`, `-D`
for a changelog), to standard out (or standard error with `'standard-error' = 'true'`), prefixed `N> `
when the sink runs with parallelism above 1 and `id> ` / `id:N> ` with `'print-identifier'`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fluvial.common.row import Row
from fluvial.datastream.functions import MapFunction
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.planner.logical import ChangelogMode
from fluvial.table.types import DataType
from fluvial.table.values import row_string


class RowToText(MapFunction):
    def __init__(self, types: Sequence[DataType]) -> None:
        self.types = list(types)

    def map(self, value: Row) -> str:
        return (
            value._row_kind.short_string()
            + "["
            + ", ".join(row_string(v, t) for v, t in zip(value._values, self.types))
            + "]"
        )


class PrintFactory:
    def create_sink(self, stream: Any, context: ConnectorContext, mode: ChangelogMode) -> Any:
        options = context.options
        check_options("print", options, {"print-identifier", "standard-error", "sink.parallelism"})
        text = stream.map(RowToText([c.type for c in context.columns]))
        identifier = options.get("print-identifier")
        to_err = options.get("standard-error", "false").lower() == "true"
        sink = text.print_to_err(identifier) if to_err else text.print(identifier)
        if "sink.parallelism" in options:
            text.set_parallelism(int(options["sink.parallelism"]))
            sink.set_parallelism(int(options["sink.parallelism"]))
        return sink
