"""Executes Flink SQL statements: DDL (CREATE/DROP TABLE and VIEW), DML (INSERT INTO), queries, SET/RESET,
SHOW, DESCRIBE, EXPLAIN."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from fluvial.common.row import Row
from fluvial.table.catalog import CatalogTable, resolve_schema, sink_columns
from fluvial.table.errors import SqlParserException, ValidationException
from fluvial.table.planner.logical import Column, RelNode
from fluvial.table.planner.upsert_materialize import ConflictStrategy, ConflictTarget, split_on_conflict
from fluvial.table.schema import Schema, UnresolvedColumn
from fluvial.table.sql.convert import Converter, parse_error
from fluvial.table.sql.dialect import Flink, MetadataColumnConstraint
from fluvial.table.sql.function_ddl import execute_function_ddl, is_function_ddl
from fluvial.table.sql.query import QueryPlanner
from fluvial.table.sql.types import to_data_type
from fluvial.table.table_result import ResultKind, TableResult
from fluvial.table.types import DataTypes

if TYPE_CHECKING:
    from fluvial.table.table_environment import TableEnvironment

__all__ = ["execute_statement", "plan_query_text", "plan_insert", "explain_statement", "split_statements"]

_OK = (ResultKind.SUCCESS, [Column("result", DataTypes.STRING())])


def _ok() -> TableResult:
    return TableResult(ResultKind.SUCCESS, [Column("result", DataTypes.STRING())], rows=[Row("OK")])


def _parse(text: str) -> exp.Expression:
    stripped = text.strip().rstrip(";").strip()
    if not stripped:
        raise SqlParserException("SQL parse failed. The statement is empty")
    try:
        statements = sqlglot.parse(stripped, dialect=Flink)
    except sqlglot.ParseError as error:
        raise parse_error(error, stripped) from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise SqlParserException(
            "execute_sql takes one statement; run several with a StatementSet or one execute_sql call each"
        )
    return statements[0]


def split_statements(script: str) -> list[str]:
    """A script's statements, split at semicolons outside quotes and comments (for `fluvial sql -f`)."""
    out, current, quote = [], [], False
    i = 0
    while i < len(script):
        ch = script[i]
        if not quote and script.startswith("--", i):
            end = script.find("\n", i)
            i = len(script) if end < 0 else end
            continue
        if ch == "'":
            quote = not quote
        if ch == ";" and not quote:
            if "".join(current).strip():
                out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    if "".join(current).strip():
        out.append("".join(current).strip())
    return out


def plan_query_text(t_env: TableEnvironment, text: str) -> RelNode:
    statement = _parse(text)
    return QueryPlanner(t_env, text.strip().rstrip(";").strip()).plan(statement)


def _without_conflict(text: str) -> tuple[str, ConflictStrategy | None]:
    """An INSERT's text without its `ON CONFLICT DO ...` clause (Flink 2.3's, which sqlglot does not parse),
    and the clause's strategy; any other statement as it is."""
    if re.match(r"INSERT\s", text, flags=re.IGNORECASE):
        return split_on_conflict(text)
    return text, None


def plan_insert(t_env: TableEnvironment, text: str) -> tuple[Any, RelNode]:
    stripped, conflict = _without_conflict(text.strip().rstrip(";").strip())
    statement = _parse(stripped)
    if not isinstance(statement, exp.Insert):
        raise ValidationException(f"a statement set takes INSERT statements, got: {stripped[:60]}")
    return _insert_parts(t_env, statement, stripped, conflict)


def _insert_parts(
    t_env: TableEnvironment, statement: exp.Insert, text: str, conflict: ConflictStrategy | None = None
) -> tuple[Any, RelNode]:
    target = statement.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    name = target.name
    t_env._catalog.get(name, Converter(text).position(target))
    node = QueryPlanner(t_env, text).plan(statement.expression)
    if columns is not None:
        node = _reorder_for_columns(t_env, name, columns, node)
    return (name if conflict is None else ConflictTarget(name, conflict)), node


def _reorder_for_columns(t_env: TableEnvironment, name: str, columns: list[str], node: RelNode) -> RelNode:
    """INSERT INTO t (b, a) SELECT ...: the query's columns placed at the sink's positions, NULL elsewhere."""
    from fluvial.table.planner.logical import Calc
    from fluvial.table.planner.rex import InputRef, Literal

    table = t_env._catalog.get(name)
    assert table.schema is not None
    physical = sink_columns(table.schema)
    if len(columns) != len(node.schema):
        raise ValidationException(
            f"INSERT INTO {name} names {len(columns)} columns but the query has {len(node.schema)}"
        )
    rexes: list[Any] = []
    for c in physical:
        if c.name in columns:
            i = columns.index(c.name)
            rexes.append(InputRef(i, node.schema[i].type, node.schema[i].name))
        else:
            rexes.append(Literal(None, c.type))
    out = tuple(Column(c.name, r.type) for c, r in zip(physical, rexes))
    return Calc(out, node, tuple(rexes), None)


def explain_statement(t_env: TableEnvironment, text: str, *extra_details: Any) -> str:
    stripped, conflict = _without_conflict(text.strip().rstrip(";").strip())
    statement = _parse(stripped)
    if isinstance(statement, exp.Insert):
        return t_env._explain([_insert_parts(t_env, statement, stripped, conflict)], *extra_details)
    return t_env._explain([(None, QueryPlanner(t_env, stripped).plan(statement))], *extra_details)


_DETAILS = ("ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN", "PLAN_ADVICE")


def _explain_body(text: str) -> tuple[str, list[str]]:
    """`EXPLAIN [PLAN FOR] | EXPLAIN detail[, detail...] statement` → (statement, details)."""
    body = re.sub(r"^EXPLAIN\s+", "", text, flags=re.IGNORECASE)
    if re.match(r"PLAN\s+FOR\s", body, flags=re.IGNORECASE):
        return body[body.upper().index("FOR") + 3 :].strip(), []
    details: list[str] = []
    while True:
        match = re.match(r"(\w+)\s*(,?)\s*", body)
        if match is None or match.group(1).upper() not in _DETAILS:
            return body, details
        details.append(match.group(1).upper())
        body = body[match.end() :]


def execute_statement(t_env: TableEnvironment, text: str) -> TableResult:
    stripped = text.strip().rstrip(";").strip()
    upper = re.sub(r"\s+", " ", stripped.upper())
    if upper.startswith("EXPLAIN "):
        body, details = _explain_body(stripped)
        plan = explain_statement(t_env, body, *details)
        return TableResult(
            ResultKind.SUCCESS_WITH_CONTENT, [Column("result", DataTypes.STRING())], rows=[Row(plan)], raw=True
        )
    if upper.startswith("SHOW "):
        return _show(t_env, upper)
    if upper.startswith("RESET"):
        return _ok()
    if is_function_ddl(stripped):
        execute_function_ddl(t_env, stripped)
        return _ok()
    stripped, conflict = _without_conflict(stripped)
    statement = _parse(stripped)
    if isinstance(statement, exp.Create):
        return _create(t_env, statement, stripped)
    if isinstance(statement, exp.Drop):
        kind = str(statement.args.get("kind", "TABLE")).upper()
        if kind not in ("TABLE", "VIEW"):
            raise ValidationException(f"DROP {kind} is not supported; fluvial drops tables and views")
        t_env._catalog.drop(statement.this.name, if_exists=bool(statement.args.get("exists")))
        return _ok()
    if isinstance(statement, exp.Insert):
        return t_env._execute_inserts([_insert_parts(t_env, statement, stripped, conflict)])
    if isinstance(statement, exp.Set):
        return _set(t_env, statement)
    if isinstance(statement, exp.Describe):
        return _describe(t_env, statement.this.name)
    if isinstance(statement, (exp.Select, exp.Union, exp.Subquery, exp.Values)):
        return t_env._collect(QueryPlanner(t_env, stripped).plan(statement))
    if isinstance(statement, exp.Command):
        raise ValidationException(f"fluvial's SQL does not support the statement '{stripped[:40]}' yet")
    raise ValidationException(f"fluvial's SQL does not support {type(statement).__name__.upper()} statements yet")


def _create(t_env: TableEnvironment, statement: exp.Create, text: str) -> TableResult:
    kind = str(statement.args.get("kind", "")).upper()
    exists = bool(statement.args.get("exists"))
    convert = Converter(text)
    if kind == "VIEW":
        name = statement.this.name
        node = QueryPlanner(t_env, text).plan(statement.expression)
        t_env._catalog.add(CatalogTable(name, plan=node), if_not_exists=exists)
        return _ok()
    if kind != "TABLE":
        raise ValidationException(f"CREATE {kind} is not supported yet; fluvial creates tables and views")
    if statement.expression is not None:
        raise ValidationException("CREATE TABLE ... AS SELECT is not supported yet: create the table, then INSERT")
    schema_node = statement.this
    if not isinstance(schema_node, exp.Schema):
        raise ValidationException("CREATE TABLE needs a column list: CREATE TABLE t (a INT, ...) WITH (...)")
    name = schema_node.this.name
    columns: list[UnresolvedColumn] = []
    watermark: tuple[str, Any, Any] | None = None
    primary_key: tuple[str, ...] = ()
    for item in schema_node.expressions:
        if isinstance(item, exp.ColumnDef):
            computed = [c for c in item.constraints if isinstance(c.kind, exp.ComputedColumnConstraint)]
            if computed:
                columns.append(
                    UnresolvedColumn(
                        item.name, expression=convert.expr(computed[0].kind.this), position=convert.position(item)
                    )
                )
                continue
            kind_node = item.args.get("kind")
            if kind_node is None:
                raise convert.error(item, f"column '{item.name}' needs a type")
            data_type = to_data_type(kind_node)
            for c in item.constraints:
                if isinstance(c.kind, exp.NotNullColumnConstraint) and not c.kind.args.get("allow_null"):
                    data_type = data_type.not_null()
                if isinstance(c.kind, exp.PrimaryKeyColumnConstraint):
                    primary_key = (item.name,)
            metadata = [c.kind for c in item.constraints if isinstance(c.kind, MetadataColumnConstraint)]
            key = None
            if metadata:
                key = metadata[0].this.this if metadata[0].this is not None else item.name
            columns.append(
                UnresolvedColumn(
                    item.name,
                    data_type,
                    metadata_key=key,
                    position=convert.position(item),
                    virtual=bool(metadata and metadata[0].args.get("virtual")),
                )
            )
        elif isinstance(item, exp.WatermarkColumnConstraint):
            watermark = (item.this.name, convert.expr(item.expression), convert.position(item))
        elif isinstance(item, exp.PrimaryKey):
            primary_key = tuple(e.name for e in item.expressions)
        else:
            raise convert.error(item, f"unsupported table element {item.sql()[:40]}")
    options: dict[str, str] = {}
    partition_keys: tuple[str, ...] = ()
    properties = statement.args.get("properties")
    if properties is not None:
        for p in properties.expressions:
            if isinstance(p, exp.PartitionedByProperty):
                partition_keys = _partition_keys(p, columns, convert)
            elif isinstance(p, exp.Property):
                key = p.this.this if isinstance(p.this, exp.Literal) else p.name
                value = p.args["value"]
                options[str(key)] = str(value.this if isinstance(value, exp.Literal) else value.sql())
            elif isinstance(p, exp.TemporaryProperty):
                continue
    schema = Schema(
        tuple(columns),
        watermark[0] if watermark else None,
        watermark[1] if watermark else None,
        primary_key,
        watermark[2] if watermark else None,
    )
    resolve_schema(schema)  # errors in computed columns and the watermark surface at CREATE, as in Flink
    t_env._catalog.add(CatalogTable(name, schema, options, partition_keys=partition_keys), if_not_exists=exists)
    return _ok()


def _partition_keys(
    node: exp.PartitionedByProperty, columns: list[UnresolvedColumn], convert: Converter
) -> tuple[str, ...]:
    """`PARTITIONED BY (dt, hr)`: physical columns of the table, each once, as Flink checks them."""
    physical = [c.name for c in columns if c.expression is None]
    keys = []
    for key in node.this.expressions:
        name = key.name
        if name not in physical:
            raise convert.error(
                key,
                f"Partition column '{name}' not defined in the table schema. Available columns: [{', '.join(physical)}]",
            )
        if name in keys:
            raise convert.error(key, f"Partition column '{name}' is listed twice in PARTITIONED BY")
        keys.append(name)
    return tuple(keys)


def _set(t_env: TableEnvironment, statement: exp.Set) -> TableResult:
    for item in statement.expressions:
        assignment = item.this
        if not isinstance(assignment, exp.EQ):
            raise ValidationException("SET takes 'key' = 'value'")
        key = assignment.this.this if isinstance(assignment.this, exp.Literal) else assignment.this.sql()
        value = (
            assignment.expression.this
            if isinstance(assignment.expression, exp.Literal)
            else assignment.expression.sql()
        )
        t_env.get_config().set(str(key), str(value))
    return _ok()


def _show(t_env: TableEnvironment, upper: str) -> TableResult:
    what = upper[len("SHOW ") :].strip()
    lists = {
        "TABLES": ("table name", t_env.list_tables()),
        "VIEWS": ("view name", t_env.list_views()),
        "CATALOGS": ("catalog name", t_env.list_catalogs()),
        "DATABASES": ("database name", t_env.list_databases()),
        "FUNCTIONS": ("function name", t_env.list_functions()),
        "USER FUNCTIONS": ("function name", t_env.list_user_defined_functions()),
        "CURRENT CATALOG": ("current catalog name", [t_env.get_current_catalog()]),
        "CURRENT DATABASE": ("current database name", [t_env.get_current_database()]),
    }
    if what not in lists:
        raise ValidationException(f"SHOW {what} is not supported; fluvial shows {', '.join(sorted(lists))}")
    header, names = lists[what]
    return TableResult(
        ResultKind.SUCCESS_WITH_CONTENT,
        [Column(header, DataTypes.STRING())],
        rows=[Row(n) for n in names],
        streaming=False,
    )


def _describe(t_env: TableEnvironment, name: str) -> TableResult:
    node = t_env._catalog.scan(name)
    table = t_env._catalog.get(name)
    watermark = None
    if table.schema is not None and table.schema.watermark_column:
        watermark = (table.schema.watermark_column, table.schema.watermark_expression)
    primary = set(table.schema.primary_key) if table.schema is not None else set()
    declared = {c.name: c for c in table.schema.columns} if table.schema is not None else {}
    rows = []
    for c in node.schema:
        column = declared.get(c.name)
        extras = ""
        if column is not None and column.metadata_key is not None:
            source = "" if column.metadata_key == c.name else f" FROM '{column.metadata_key}'"
            extras = f"METADATA{source}{' VIRTUAL' if column.virtual else ''}"
        type_text = c.type.summary(with_time_attribute=True).replace(" NOT NULL", "")
        rows.append(
            Row(
                c.name,
                type_text,
                c.type.nullable and c.name not in primary,
                f"PRI({', '.join(sorted(primary))})" if c.name in primary else "",
                extras,
                _watermark_text(watermark) if watermark and watermark[0] == c.name else "",
            )
        )
    columns = [
        Column("name", DataTypes.STRING()),
        Column("type", DataTypes.STRING()),
        Column("null", DataTypes.BOOLEAN()),
        Column("key", DataTypes.STRING()),
        Column("extras", DataTypes.STRING()),
        Column("watermark", DataTypes.STRING()),
    ]
    return TableResult(ResultKind.SUCCESS_WITH_CONTENT, columns, rows=rows, streaming=False)


def _watermark_text(watermark: tuple[str, Any]) -> str:
    expression = watermark[1]
    return expression.to_string() if hasattr(expression, "to_string") else str(expression)
