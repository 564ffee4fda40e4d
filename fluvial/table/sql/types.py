"""SQL type names (sqlglot's DataType nodes, or text like `TIMESTAMP(3)`) as fluvial DataTypes."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from fluvial.table.errors import SqlParserException, ValidationException
from fluvial.table.types import DataType, DataTypes

__all__ = ["to_data_type", "parse_type"]

_T = exp.DataType.Type


def _params(node: exp.DataType) -> list[int]:
    out = []
    for p in node.expressions:
        value = p.this if isinstance(p, exp.DataTypeParam) else p
        if isinstance(value, exp.Literal):
            out.append(int(value.this))
    return out


def to_data_type(node: exp.DataType) -> DataType:
    t = node.this
    params = _params(node)
    not_null = False
    simple = {
        _T.TINYINT: DataTypes.TINYINT,
        _T.SMALLINT: DataTypes.SMALLINT,
        _T.INT: DataTypes.INT,
        _T.BIGINT: DataTypes.BIGINT,
        _T.FLOAT: DataTypes.FLOAT,
        _T.DOUBLE: DataTypes.DOUBLE,
        _T.BOOLEAN: DataTypes.BOOLEAN,
        _T.DATE: DataTypes.DATE,
        _T.TEXT: DataTypes.STRING,
    }
    if t in simple:
        result = simple[t]()
    elif t == _T.VARCHAR:
        result = DataTypes.VARCHAR(params[0]) if params else DataTypes.STRING()  # Flink SQL: VARCHAR is STRING
    elif t in (_T.CHAR, _T.NCHAR):
        result = DataTypes.CHAR(params[0] if params else 1)
    elif t in (_T.DECIMAL, _T.BIGDECIMAL):
        result = DataTypes.DECIMAL(params[0] if params else 10, params[1] if len(params) > 1 else 0)
    elif t == _T.TIMESTAMP:
        result = DataTypes.TIMESTAMP(params[0] if params else 6)
    elif t in (_T.TIMESTAMPLTZ, _T.TIMESTAMPTZ):
        result = DataTypes.TIMESTAMP_LTZ(params[0] if params else 6)
    elif t == _T.TIME:
        result = DataTypes.TIME(params[0] if params else 0)
    elif t == _T.VARBINARY:
        result = DataTypes.VARBINARY(params[0]) if params else DataTypes.BYTES()
    elif t == _T.BINARY:
        result = DataTypes.BINARY(params[0] if params else 1)
    elif t == _T.ARRAY:
        result = DataTypes.ARRAY(to_data_type(node.expressions[0]))
    elif t == _T.MAP:
        result = DataTypes.MAP(to_data_type(node.expressions[0]), to_data_type(node.expressions[1]))
    elif t == _T.STRUCT:
        fields = []
        for f in node.expressions:
            fields.append(
                DataTypes.FIELD(
                    f.this.name if isinstance(f.this, exp.Identifier) else f.name, to_data_type(f.args["kind"])
                )
            )
        result = DataTypes.ROW(fields)
    elif t == _T.USERDEFINED and str(node.args.get("kind", "")).upper() in ("STRING",):
        result = DataTypes.STRING()
    else:
        raise ValidationException(
            f"the SQL type {node.sql()} is not supported; use one of Flink's types "
            "(INT, BIGINT, DOUBLE, DECIMAL(p, s), STRING, BOOLEAN, DATE, TIMESTAMP(p), ...)"
        )
    return result.not_null() if not_null else result


def parse_type(text: str) -> DataType:
    """A type written as SQL text: `BIGINT`, `TIMESTAMP_LTZ(3)`, `ROW<a INT>`, `STRING NOT NULL`."""
    from fluvial.table.sql.dialect import Flink

    stripped = text.strip()
    not_null = stripped.upper().endswith("NOT NULL")
    if not_null:
        stripped = stripped[: -len("NOT NULL")].strip()
    upper = stripped.upper()
    if upper.startswith("TIMESTAMP_LTZ"):
        precision = upper[len("TIMESTAMP_LTZ") :].strip("() ") or "6"
        result = DataTypes.TIMESTAMP_LTZ(int(precision))
    else:
        try:
            node = exp.DataType.build(stripped, dialect=Flink)
        except (sqlglot.ParseError, ValueError) as error:
            raise SqlParserException(f"cannot parse the type '{text}': {error}") from None
        result = to_data_type(node)
    return result.not_null() if not_null else result
