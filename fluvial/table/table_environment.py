"""`TableEnvironment` and `StreamTableEnvironment` (PyFlink's): the catalog, SQL, and the door to running.

A table environment owns (or, created from one, shares) a StreamExecutionEnvironment. Running a table
program translates its plan into that environment's DataStream transformations and submits a job made of
those alone: DataStream sinks the user added to the same environment wait for their own `env.execute()`.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from fluvial.common.row import Row
from fluvial.table.catalog import Catalog, CatalogTable, resolve_schema
from fluvial.table.environment_settings import EnvironmentSettings, TableConfig
from fluvial.table.errors import ValidationException
from fluvial.table.expression import Expression
from fluvial.table.function_catalog import FunctionScope, as_function, java_refused
from fluvial.table.planner.logical import ChangelogMode, Column, RelNode, Scan, Values
from fluvial.table.schema import Schema, TableDescriptor
from fluvial.table.table import Table
from fluvial.table.table_result import ResultKind, TableResult
from fluvial.table.types import DataType, DataTypes, common_type, infer_type
from fluvial.table.values import cast_value

__all__ = ["TableEnvironment", "StreamTableEnvironment", "StatementSet"]

logger = logging.getLogger(__name__)
_anonymous = itertools.count()


@contextmanager
def _own_job(env: Any) -> Iterator[None]:
    """Sinks added inside belong to one table job: the environment's other pending DataStream sinks are set
    aside while it is built and submitted, and come back afterwards (also when planning fails)."""
    saved = list(env._pending_sinks)
    env._pending_sinks.clear()
    try:
        yield
    finally:
        env._pending_sinks[:] = saved


class TableEnvironment:
    """PyFlink's TableEnvironment: `TableEnvironment.create(EnvironmentSettings.in_streaming_mode())`."""

    def __init__(self, env: Any, settings: EnvironmentSettings) -> None:
        self._env = env
        self._settings = settings
        self._config = TableConfig(env)
        self._catalog = Catalog()
        for key, value in settings.configuration.items():
            self._config.set(key, value)
        if not settings.streaming:
            from fluvial.datastream.execution_mode import RuntimeExecutionMode

            env.set_runtime_mode(RuntimeExecutionMode.BATCH)

    @staticmethod
    def create(environment_settings: Any = None) -> TableEnvironment:
        from fluvial.datastream.stream_execution_environment import StreamExecutionEnvironment

        settings = environment_settings
        if settings is None:
            settings = EnvironmentSettings.in_streaming_mode()
        elif not isinstance(settings, EnvironmentSettings):  # a Configuration
            settings = EnvironmentSettings.new_instance().with_configuration(settings).build()
        return TableEnvironment(StreamExecutionEnvironment(), settings)

    # -- configuration and catalog ------------------------------------------------------------------------------

    def get_config(self) -> TableConfig:
        return self._config

    def _is_streaming(self) -> bool:
        return self._settings.streaming

    def create_temporary_table(self, path: str, descriptor: TableDescriptor) -> None:
        self._catalog.add(
            CatalogTable(
                path, descriptor.schema or Schema(), dict(descriptor.options), partition_keys=descriptor.partition_keys
            )
        )

    def create_table(self, path: str, descriptor: TableDescriptor) -> None:
        self.create_temporary_table(path, descriptor)

    def create_temporary_view(self, view_path: str, table_or_data_stream: Any, *fields_or_schema: Any) -> None:
        table = table_or_data_stream
        if not isinstance(table, Table):
            table = self.from_data_stream(table, *fields_or_schema)
        elif fields_or_schema:
            table = table.alias(*fields_or_schema)
        self._catalog.add(CatalogTable(view_path, plan=table._node))

    def register_table(self, name: str, table: Table) -> None:
        self.create_temporary_view(name, table)

    def from_path(self, path: str) -> Table:
        return Table(self._catalog.scan(path), self)

    def from_descriptor(self, descriptor: TableDescriptor) -> Table:
        name = f"*anonymous_{descriptor.options.get('connector')}${next(_anonymous)}*"
        self.create_temporary_table(name, descriptor)
        return self.from_path(name)

    def list_tables(self) -> list[str]:
        return sorted(self._catalog.tables)

    def list_views(self) -> list[str]:
        return sorted(n for n, t in self._catalog.tables.items() if t.is_view)

    def list_temporary_tables(self) -> list[str]:
        return self.list_tables()

    def list_temporary_views(self) -> list[str]:
        return self.list_views()

    def list_catalogs(self) -> list[str]:
        return [self._catalog.current_catalog]

    def list_databases(self) -> list[str]:
        return [self._catalog.current_database]

    def list_user_defined_functions(self) -> list[str]:
        return self._catalog.function_catalog.names()

    def list_functions(self) -> list[str]:
        """Every function a query can call: the built-in ones and the user-defined ones."""
        from fluvial.table.builtins import AGGREGATES, BUILTINS

        return sorted(set(BUILTINS) | AGGREGATES | set(self._catalog.function_catalog.names()))

    def get_current_catalog(self) -> str:
        return self._catalog.current_catalog

    def get_current_database(self) -> str:
        return self._catalog.current_database

    def drop_temporary_table(self, table_path: str) -> bool:
        return self._catalog.drop(table_path, if_exists=True)

    def drop_temporary_view(self, view_path: str) -> bool:
        return self._catalog.drop(view_path, if_exists=True)

    def create_temporary_function(self, path: str, function: Any) -> None:
        """Register a Python user-defined function (udf/udtf/udaf/udtaf, or an AggregateFunction instance) as a
        temporary catalog function, callable by name from SQL and `call(path, ...)`."""
        self._create_function(path, function, FunctionScope.TEMPORARY)

    def create_temporary_system_function(self, name: str, function: Any) -> None:
        """Register a Python user-defined function as a temporary system function: it shadows catalog functions
        of the same name."""
        self._create_function(name, function, FunctionScope.TEMPORARY_SYSTEM)

    def register_function(self, name: str, function: Any) -> None:
        """Deprecated in PyFlink: create_temporary_system_function."""
        self.create_temporary_system_function(name, function)

    def _create_function(self, path: str, function: Any, scope: FunctionScope) -> None:
        wrapped = as_function(function, f"The function given for '{path}'")
        self._catalog.function_catalog.create(path, wrapped, scope)

    def create_java_function(self, path: str, function_class_name: str, ignore_if_exists: bool | None = None) -> None:
        raise java_refused(f"class '{function_class_name}'")

    def create_java_temporary_function(self, path: str, function_class_name: str) -> None:
        raise java_refused(f"class '{function_class_name}'")

    def create_java_temporary_system_function(self, name: str, function_class_name: str) -> None:
        raise java_refused(f"class '{function_class_name}'")

    def register_java_function(self, name: str, function_class_name: str) -> None:
        raise java_refused(f"class '{function_class_name}'")

    def drop_function(self, path: str) -> bool:
        """Drop a catalog function (made by CREATE FUNCTION); True if there was one."""
        return self._catalog.function_catalog.drop(path, FunctionScope.CATALOG)

    def drop_temporary_function(self, path: str) -> bool:
        return self._catalog.function_catalog.drop(path, FunctionScope.TEMPORARY)

    def drop_temporary_system_function(self, name: str) -> bool:
        return self._catalog.function_catalog.drop(name, FunctionScope.TEMPORARY_SYSTEM)

    def _register_anonymous(self, table: Table) -> str:
        name = f"UnnamedTable${next(_anonymous)}"
        self._catalog.add(CatalogTable(name, plan=table._node))
        return name

    # -- tables from data ---------------------------------------------------------------------------------------

    def from_elements(self, elements: Sequence[Any], schema: Any = None, verify_schema: bool = True) -> Table:
        rows = [tuple(e) if isinstance(e, (tuple, list, Row)) else (e,) for e in elements]
        width = max((len(r) for r in rows), default=len(schema) if isinstance(schema, list) else 0)
        if isinstance(schema, DataType):
            if schema.name != "ROW":
                schema = DataTypes.ROW([DataTypes.FIELD("f0", schema)])
            names, types = schema.field_names(), schema.field_types()
        else:
            names = list(schema) if schema else _default_names(elements, width)
            types = [_column_type([r[i] for r in rows if i < len(r)]) for i in range(width)]
        columns = tuple(Column(n, t) for n, t in zip(names, types))
        converted = tuple(
            tuple(cast_value(v, t) if v is not None and not _fits(v, t) else v for v, t in zip(r, types)) for r in rows
        )
        if verify_schema:
            for r in converted:
                for v, c in zip(r, columns):
                    if v is None and not c.type.nullable:
                        raise ValidationException(f"Field {c.name} of type {c.type} cannot be NULL")
        return Table(Values(columns, converted), self)

    def from_pandas(self, pdf: Any, schema: Any = None, splits_num: int = 1) -> Table:
        records = [tuple(None if _is_nan(v) else v for v in r) for r in pdf.itertuples(index=False, name=None)]
        if schema is None:
            schema = [str(c) for c in pdf.columns]
        return self.from_elements(records, schema)

    # -- SQL ----------------------------------------------------------------------------------------------------

    def execute_sql(self, stmt: str) -> TableResult:
        from fluvial.table.sql.statements import execute_statement

        with self._functions_in_scope():
            return execute_statement(self, stmt)

    def sql_query(self, query: str) -> Table:
        from fluvial.table.sql.statements import plan_query_text

        with self._functions_in_scope():
            return Table(plan_query_text(self, query), self)

    @contextmanager
    def _functions_in_scope(self) -> Iterator[None]:
        from fluvial.table.planner.resolve import registered_functions

        token = registered_functions.set(self._catalog.functions)
        try:
            yield
        finally:
            registered_functions.reset(token)

    def explain_sql(self, stmt: str, *extra_details: Any) -> str:
        from fluvial.table.sql.statements import explain_statement

        with self._functions_in_scope():  # functions created by name resolve in EXPLAIN too
            return explain_statement(self, stmt, *extra_details)

    def add_python_file(self, file_path: str) -> None:
        self._env.add_python_file(file_path)

    def create_statement_set(self) -> StatementSet:
        return StatementSet(self)

    # -- running ------------------------------------------------------------------------------------------------

    def _translator(self) -> Any:
        from fluvial.table.planner.aggregate_phases import mini_batch_from
        from fluvial.table.planner.async_scalar import async_scalar_from
        from fluvial.table.planner.distinct_split import distinct_split_from
        from fluvial.table.planner.translate import Translator

        return Translator(
            self._env,
            self._config.state_ttl_millis(),
            batch=not self._is_streaming(),
            mini_batch=mini_batch_from(self._config),
            async_scalar=async_scalar_from(self._config),
            distinct_buckets=distinct_split_from(self._config),
        )

    def _optimizer(self) -> Any:
        """Rewrites plans as they run: projections, filters and limits pushed into the sources that take them
        (one optimizer per job, so a subplan two sinks share stays one)."""
        from fluvial.table.planner.pushdown import SourcePushDown

        enabled = str(self._config.get("table.optimizer.source.predicate-pushdown-enabled", "true")).lower()
        return SourcePushDown(filters_enabled=enabled != "false")

    def _optimize(self, node: RelNode) -> RelNode:
        return self._optimizer().rewrite(node)

    def _collect(self, node: RelNode) -> TableResult:
        with _own_job(self._env):
            stream = self._translator().translate(self._optimize(node))
            iterator = stream.execute_and_collect(self._config.get("pipeline.name") or "collect")
        streaming = self._is_streaming()
        if not streaming:
            rows = _materialize(iterator)
            return TableResult(ResultKind.SUCCESS_WITH_CONTENT, node.schema, rows=rows, streaming=False)
        return TableResult(ResultKind.SUCCESS_WITH_CONTENT, node.schema, iterator_factory=lambda: iterator)

    def _sink_target(self, target: Any) -> tuple[str, CatalogTable]:
        target = getattr(target, "path", target)  # a ConflictTarget: the INSERT's ON CONFLICT clause aside
        if isinstance(target, TableDescriptor):
            name = f"*anonymous_{target.options.get('connector')}${next(_anonymous)}*"
            self.create_temporary_table(name, target)
            target = name
        return str(target), self._catalog.get(str(target))

    def _execute_inserts(self, inserts: Sequence[tuple[Any, RelNode]]) -> TableResult:
        from fluvial.table.catalog import metadata_columns, sink_columns
        from fluvial.table.connectors.base import ConnectorContext, sink_factory
        from fluvial.table.planner.sink import conform_to_sink, metadata_last

        if not inserts:
            raise ValidationException(
                "No operators defined in streaming topology: the statement set is empty; "
                "add an INSERT with add_insert_sql or add_insert"
            )
        names = []
        with _own_job(self._env):
            translator, optimizer = self._translator(), self._optimizer()
            for target, node in inserts:
                name, table = self._sink_target(target)
                if table.is_view or table.schema is None or table.options is None:
                    raise ValidationException(f"Table '{name}' is a view; INSERT INTO needs a connector table")
                persisted = sink_columns(table.schema)
                query = optimizer.rewrite(conform_to_sink(node, persisted, name))
                metadata = tuple(m for m in metadata_columns(table.schema) if not m.virtual)
                physical = [c for c in persisted if c.name not in {m.name for m in metadata}]
                shaped = metadata_last(query, physical, metadata)
                materialized = self._materialized(shaped, table.schema.primary_key, target, table.name)
                stream = translator.translate(materialized)
                options = dict(table.options)
                context = ConnectorContext(
                    name,
                    tuple(physical),
                    options,
                    table.schema.primary_key,
                    partition_keys=table.partition_keys,
                    metadata=metadata,
                )
                sink_factory(options, name, metadata).create_sink(stream, context, query.changelog_mode)
                names.append(f"default_catalog.default_database.{table.name}")
            client = self._env.execute_async(self._config.get("pipeline.name") or "insert-into_" + ",".join(names))
        columns = [Column(n, DataTypes.BIGINT(False)) for n in names]
        result = TableResult(
            ResultKind.SUCCESS_WITH_CONTENT, columns, rows=[Row(*[-1] * len(names))], job_client=client
        )
        if self._config.get("table.dml-sync", "false") == "true":
            result.wait()
        return result

    def _materialized(self, node: RelNode, primary_key: Sequence[str], target: Any, table: str) -> RelNode:
        """`node` with the SinkUpsertMaterializer a sink keyed by `primary_key` needs before it
        (`table.exec.sink.upsert-materialize`, the INSERT's ON CONFLICT clause when `target` is a ConflictTarget;
        `fluvial.table.planner.upsert_materialize`)."""
        from fluvial.table.planner.upsert_materialize import materialize_for_sink, upsert_materialize_from

        strategy = upsert_materialize_from(self._config)
        conflict = getattr(target, "conflict", None)
        name = f"default_catalog.default_database.{table}"
        return materialize_for_sink(node, primary_key, strategy, self._is_streaming(), conflict, name)

    def _explain(self, statements: Sequence[tuple[Any, RelNode]], *extra_details: Any) -> str:
        """Flink's sections for (sink or None, plan) statements — the plan as written, as it runs (after
        push-down), in infix form, `extra_details` (ExplainDetail) adding changelog modes, estimated costs or the
        JSON execution plan — then the JobGraph the plans run as: its chains, their parallelism, and why each
        edge is not chained."""
        from fluvial.table.catalog import sink_columns
        from fluvial.table.planner.aggregate_phases import plan_advice
        from fluvial.table.planner.explain import SinkSpec, explain_text
        from fluvial.table.planner.sink import conform_to_sink
        from fluvial.table.planner.upsert_materialize import SinkMaterializer

        details = _explain_details(extra_details)
        optimizer = self._optimizer()
        roots, runs = [], []
        for target, node in statements:
            sink = None
            primary_key: Sequence[str] = ()
            table_name = ""
            if target is not None:
                name, table = self._sink_target(target)
                if table.is_view or table.schema is None or table.options is None:
                    raise ValidationException(f"Table '{name}' is a view; INSERT INTO needs a connector table")
                node = conform_to_sink(node, sink_columns(table.schema), name)
                sink = SinkSpec(f"default_catalog.default_database.{table.name}", tuple(node.names))
                primary_key, table_name = table.schema.primary_key, table.name
            optimized = self._materialized(optimizer.rewrite(node), primary_key, target, table_name)
            runs.append(optimized)
            if sink is not None:  # Flink names the materializer and the clause on its Sink node
                conflict = getattr(target, "conflict", None)
                materialize = isinstance(optimized, SinkMaterializer)
                optimized = optimized.input if isinstance(optimized, SinkMaterializer) else optimized
                sink = replace(sink, upsert_materialize=materialize, conflict=conflict.value if conflict else None)
            roots.append((node, optimized, sink))
        job_graph, json_plan = self._job_graph_text(runs)
        json = json_plan if "JSON_EXECUTION_PLAN" in details else None
        advise = plan_advice if "PLAN_ADVICE" in details and self._settings.is_streaming_mode() else None
        return explain_text(roots, details, job_graph, json, expand=self._translator().physical, advise=advise)

    def _job_graph_text(self, nodes: Sequence[RelNode]) -> tuple[str, str]:
        """The JobGraph the plans run as (one line a vertex, one an edge with its chaining verdict), and Flink's
        execution-plan JSON of their operators."""
        from fluvial.table.connectors.blackhole import _Discard

        with _own_job(self._env):
            translator = self._translator()
            for node in nodes:
                translator.translate(node).add_sink(_Discard()).name("Sink: explain")
            json_plan = self._env.get_execution_plan()
            job_graph = self._env.get_job_graph("explain")
            self._env._pending_sinks.clear()
        names = {vertex.id: vertex.name for vertex in job_graph.vertices}
        lines = [f"[{vertex.id}] {vertex.name} (parallelism {vertex.parallelism})" for vertex in job_graph.vertices]
        for edge in job_graph.edges:
            strategy = getattr(edge.ship_strategy, "value", edge.ship_strategy)
            verdict = getattr(edge.chain_break, "value", edge.chain_break)
            lines.append(
                f"[{edge.source}] {names[edge.source]} -> [{edge.target}] {names[edge.target]}: "
                f"{strategy}, not chained: {verdict}"
            )
        return "\n".join(lines) + "\n", json_plan

    def execute(self, job_name: str | None = None) -> Any:
        return self._env.execute(job_name)


class StreamTableEnvironment(TableEnvironment):
    """A TableEnvironment over a given StreamExecutionEnvironment, with DataStream conversions."""

    @staticmethod
    def create(stream_execution_environment: Any = None, environment_settings: Any = None) -> StreamTableEnvironment:
        from fluvial.datastream.stream_execution_environment import StreamExecutionEnvironment

        env = stream_execution_environment or StreamExecutionEnvironment.get_execution_environment()
        settings = environment_settings or EnvironmentSettings.in_streaming_mode()
        return StreamTableEnvironment(env, settings)

    def from_data_stream(self, data_stream: Any, *fields_or_schema: Any) -> Table:
        from fluvial.table.planner.datastream_source import DataStreamSource, stream_columns

        physical, atomic, converters = stream_columns(data_stream)
        schema = fields_or_schema[0] if len(fields_or_schema) == 1 and isinstance(fields_or_schema[0], Schema) else None
        source = DataStreamSource(data_stream, tuple(c.name for c in physical), atomic, converters)
        if schema is not None:
            _, columns, projection, watermark = resolve_schema(schema, list(physical))
            node: RelNode = Scan(tuple(columns), "Unregistered_DataStream_Source", source, watermark, projection)
        else:
            node = Scan(tuple(physical), "Unregistered_DataStream_Source", source)
        table = Table(node, self)
        if fields_or_schema and schema is None:
            fields = [f for f in fields_or_schema if not _is_proctime_field(f)]
            if fields:
                table = table.alias(*[f if isinstance(f, str) else f.name for f in fields])
            for f in fields_or_schema:
                if _is_proctime_field(f):  # col("pt").proctime: a PROCTIME() column after the stream's own
                    table = table.add_columns(Expression("call", "proctime").alias(f.args[0].name))
        return table

    def from_changelog_stream(self, data_stream: Any, schema: Any = None, changelog_mode: Any = None) -> Table:
        return self.from_data_stream(data_stream) if schema is None else self.from_data_stream(data_stream, schema)

    def to_data_stream(self, table: Table) -> Any:
        node = table._node
        if node.changelog_mode is not ChangelogMode.INSERT_ONLY:
            raise ValidationException(
                "Table sink 'default_catalog.default_database.Unregistered_DataStream_Sink_1' doesn't support "
                "consuming update changes which is produced by a GROUP BY aggregation: use to_changelog_stream"
            )
        return self._to_stream(node)

    def to_changelog_stream(self, table: Table, target_schema: Any = None, changelog_mode: Any = None) -> Any:
        return self._to_stream(table._node)

    def to_append_stream(self, table: Table, type_info: Any = None) -> Any:
        return self.to_data_stream(table)

    def to_retract_stream(self, table: Table, type_info: Any = None) -> Any:
        from fluvial.table.runtime.functions import ToRetractTuple

        return self._to_stream(table._node).map(ToRetractTuple())

    def _to_stream(self, node: RelNode) -> Any:
        from fluvial.table.runtime.functions import ToValuesFunction
        from fluvial.table.type_mapping import to_type_info

        stream = self._translator().translate(self._optimize(node))
        row_type = DataTypes.ROW([DataTypes.FIELD(c.name, c.type.without_time_attribute()) for c in node.schema])
        return stream.map(ToValuesFunction(node.names), output_type=to_type_info(row_type))


class StatementSet:
    """Several INSERTs run as one job (PyFlink's StatementSet)."""

    def __init__(self, t_env: TableEnvironment) -> None:
        self._t_env = t_env
        self._inserts: list[tuple[Any, RelNode]] = []

    def add_insert_sql(self, stmt: str) -> StatementSet:
        from fluvial.table.sql.statements import plan_insert

        self._inserts.append(plan_insert(self._t_env, stmt))
        return self

    def add_insert(self, target_path_or_descriptor: Any, table: Table, overwrite: bool = False) -> StatementSet:
        self._inserts.append((target_path_or_descriptor, table._node))
        return self

    def explain(self, *extra_details: Any) -> str:
        if not self._inserts:
            raise ValidationException("the statement set is empty: add an INSERT with add_insert_sql or add_insert")
        return self._t_env._explain(self._inserts, *extra_details)

    def execute(self) -> TableResult:
        result = self._t_env._execute_inserts(self._inserts)
        self._inserts = []
        return result

    def attach_as_datastream(self) -> None:
        raise ValidationException("attach_as_datastream is not supported yet: execute() the statement set")


def _explain_details(extra_details: Sequence[Any]) -> frozenset[str]:
    """ExplainDetail values (or their names) as names."""
    names = set()
    for detail in extra_details:
        name = getattr(detail, "name", str(detail)).upper()
        if name not in ("ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN", "PLAN_ADVICE"):
            raise ValidationException(
                f"unknown explain detail '{detail}': use ExplainDetail.ESTIMATED_COST, CHANGELOG_MODE, "
                "JSON_EXECUTION_PLAN or PLAN_ADVICE"
            )
        names.add(name)
    return frozenset(names)


def _default_names(elements: Sequence[Any], width: int) -> list[str]:
    first = elements[0] if elements else None
    fields = getattr(first, "_fields", None)
    if fields:
        return list(fields)
    return [f"_{i + 1}" for i in range(width)]


def _column_type(values: list[Any]) -> DataType:
    known = [infer_type(v) for v in values if v is not None]
    if not known:
        return DataTypes.NULL()
    try:
        return common_type(known)
    except TypeError as error:
        raise ValidationException(
            f"from_elements: a column holds values of different types ({error}); give a schema with DataTypes"
        ) from None


def _fits(value: Any, data_type: DataType) -> bool:
    name = data_type.name
    if name in ("DOUBLE", "FLOAT"):
        return isinstance(value, float)
    if name in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return isinstance(value, int) and not isinstance(value, bool)
    if data_type.is_string():
        return isinstance(value, str)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return isinstance(value, _dt.datetime)
    if name in ("ARRAY", "MAP", "ROW", "RAW", "NULL", "MULTISET", "VARBINARY", "BINARY"):
        return True
    return False


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _materialize(iterator: Any) -> list[Row]:
    """A batch query's final table: the changelog applied (Flink's batch results have no retractions)."""
    rows: list[list[Any]] = []
    with iterator:
        for row in iterator:
            values = list(row._values)
            if row._row_kind.name in ("INSERT", "UPDATE_AFTER"):
                rows.append(values)
            elif values in rows:
                rows.remove(values)
    return [Row(*r) for r in rows]


def _is_proctime_field(field: Any) -> bool:
    return isinstance(field, Expression) and field.kind == "call" and field.name == "proctime_field"
