"""Table connectors: what `'connector' = '...'` in a CREATE TABLE (or a TableDescriptor) names.

A connector factory validates its options when the table is used (an unknown or missing option is an error
naming it, as Flink's `Unsupported options found for 'datagen'`), and builds a DataStream source of Rows or
consumes a DataStream of Rows; a lookup source (`jdbc`) also builds a LookupFunction for lookup joins. The built-in
ones: `datagen`, `print`, `blackhole`, `filesystem` (csv, json, avro, parquet;
partitioned), `nexmark`, `jdbc` (PostgreSQL). A source factory may take projections, filters and limits from the
planner (`abilities`: Flink's Supports*PushDown).
"""

from __future__ import annotations

from fluvial.table.connectors.base import (
    ConnectorContext,
    TableSinkFactory,
    TableSourceFactory,
    sink_factory,
    source_factory,
)

__all__ = ["ConnectorContext", "TableSinkFactory", "TableSourceFactory", "sink_factory", "source_factory"]
