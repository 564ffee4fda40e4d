"""`'connector' = 'blackhole'`: swallows every row (for benchmarks and plans under test)."""

from __future__ import annotations

from typing import Any

from fluvial.datastream.functions import SinkFunction
from fluvial.table.connectors.base import ConnectorContext, check_options
from fluvial.table.planner.logical import ChangelogMode


class _Discard(SinkFunction):
    def invoke(self, value: Any, context: Any) -> None:
        pass

    def invoke_batch(self, values: list, context: Any) -> None:
        pass


class BlackHoleFactory:
    def create_sink(self, stream: Any, context: ConnectorContext, mode: ChangelogMode) -> Any:
        check_options("blackhole", context.options, set())
        return stream.add_sink(_Discard()).name(f"Sink: {context.table_name}")
