"""PyFlink's Table API and Flink SQL (`pyflink.table`), planned onto fluvial's own streaming operators.

A table program builds a logical plan (`fluvial.table.planner`); running it translates the plan into
DataStream transformations — keyed process functions over checkpointed keyed state for GROUP BY, event-time
windows for window aggregation — and submits them as any DataStream job: the same exactly-once state,
watermarks, savepoints and dashboard. SQL is parsed by sqlglot with a Flink dialect (`fluvial.table.sql`).
"""

from __future__ import annotations

from fluvial.common.row import Row, RowKind
from fluvial.table.changelog_mode import ChangelogMode
from fluvial.table.environment_settings import EnvironmentSettings, TableConfig
from fluvial.table.errors import SqlParserException, TableException, ValidationException
from fluvial.table.explain_detail import ExplainDetail
from fluvial.table.expression import Expression
from fluvial.table.schema import FormatDescriptor, Schema, TableDescriptor
from fluvial.table.table import GroupedTable, GroupWindowedTable, Table, WindowGroupedTable
from fluvial.table.table_environment import StatementSet, StreamTableEnvironment, TableEnvironment
from fluvial.table.table_result import ResultKind, TableResult, TableSchema
from fluvial.table.types import DataType, DataTypes
from fluvial.table.udf import (
    AggregateFunction,
    AsyncScalarFunction,
    FunctionContext,
    ScalarFunction,
    TableAggregateFunction,
    TableFunction,
)

__all__ = [
    "AggregateFunction",
    "TableAggregateFunction",
    "ScalarFunction",
    "AsyncScalarFunction",
    "TableFunction",
    "FunctionContext",
    "ChangelogMode",
    "DataType",
    "DataTypes",
    "EnvironmentSettings",
    "ExplainDetail",
    "Expression",
    "FormatDescriptor",
    "GroupWindowedTable",
    "GroupedTable",
    "ResultKind",
    "Row",
    "RowKind",
    "Schema",
    "SqlParserException",
    "StatementSet",
    "StreamTableEnvironment",
    "Table",
    "TableConfig",
    "TableDescriptor",
    "TableEnvironment",
    "TableException",
    "TableResult",
    "TableSchema",
    "ValidationException",
    "WindowGroupedTable",
]
