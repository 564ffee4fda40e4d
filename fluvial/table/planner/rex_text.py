"""Rex nodes as Flink's plans print them: Calcite's prefix form in the Abstract Syntax Tree and the Optimized
Physical Plan (`>(a, 10)`, `AND(=(b, 'x'), IS NOT NULL(c))`, `CAST(a):BIGINT`), the infix form in the Optimized
Execution Plan (`((a > 10) AND (b = 'x'))`, `CAST(a AS BIGINT)`). With `names` None, columns are Calcite's
input references `$0`, `$1` (the Abstract Syntax Tree's field syntax), otherwise their names."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence

from fluvial.table.planner.rex import Call, InputRef, Literal, Rex

__all__ = ["rex_text", "infix_text", "type_text"]

_SYMBOLS = {
    "equals": "=",
    "not_equals": "<>",
    "less_than": "<",
    "less_than_or_equal": "<=",
    "greater_than": ">",
    "greater_than_or_equal": ">=",
    "plus": "+",
    "minus": "-",
    "times": "*",
    "divide": "/",
    "minus_prefix": "-",
    "plus_prefix": "+",
    "is_null": "IS NULL",
    "is_not_null": "IS NOT NULL",
    "is_true": "IS TRUE",
    "is_false": "IS FALSE",
    "is_not_true": "IS NOT TRUE",
    "is_not_false": "IS NOT FALSE",
    "if": "IF",
    "get_field": "ITEM",
    "__field__": "ITEM",
    "element_at": "ITEM",
}


def type_text(rex: Rex) -> str:
    """Calcite's type suffix: `VARCHAR(2147483647) CHARACTER SET "UTF-16LE"` is Flink's STRING; shown short."""
    return rex.type.summary(False)


def rex_text(rex: Rex, names: Sequence[str] | None = None) -> str:
    if isinstance(rex, InputRef):
        return f"${rex.index}" if names is None else names[rex.index] if rex.index < len(names) else rex.name
    if isinstance(rex, Literal):
        return _literal(rex)
    return _call(rex, names)


def _type_name(rex: Rex) -> str:
    return (
        re.sub(r"\(\d+\)$", "", rex.type.summary(False).replace(" NOT NULL", ""))
        if rex.type.name.startswith("INTERVAL")
        else rex.type.summary(False).replace(" NOT NULL", "")
    )


def _literal(rex: Literal) -> str:
    value = rex.value
    if value is None:
        return f"null:{_type_name(rex)}"
    if rex.type.name.startswith("INTERVAL"):
        millis = int(value.total_seconds() * 1000) if isinstance(value, _dt.timedelta) else value
        return f"{millis}:{_type_name(rex)}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return f"{value!r}:{rex.type.summary(False).replace(' NOT NULL', '')}"
    return str(value)


def _field_name(rex: Call) -> str | None:
    """`row.field` for a field access by position of a ROW-typed operand (Calcite's `$3.price`)."""
    if rex.op not in ("get_field", "__field__") or len(rex.operands) != 2:
        return None
    row, index = rex.operands
    fields = row.type.fields
    if isinstance(index, Literal) and isinstance(index.value, int) and 0 <= index.value < len(fields):
        return fields[index.value].name
    return None


def _either_form(rex: Call, operands: list[str]) -> str | None:
    """What prints the same in both forms: a field access (`bid.price`) and a user function's call."""
    field = _field_name(rex)
    if field is not None:
        return f"{operands[0]}.{field}"
    if rex.op == "__udf__":
        return f"{getattr(rex.function, '_name', 'udf')}({', '.join(operands)})"
    return None


def _call(rex: Call, names: Sequence[str] | None) -> str:
    operands = [rex_text(o, names) for o in rex.operands]
    op = rex.op
    shared = _either_form(rex, operands)
    if shared is not None:
        return shared
    if op in ("and", "or"):  # Calcite flattens nested ANDs/ORs into one call
        flat = _flatten(rex, op)
        return f"{op.upper()}({', '.join(rex_text(o, names) for o in flat)})"
    if op in ("cast", "try_cast"):
        return f"{op.upper()}({operands[0]}):{rex.type.summary(False)}"
    if op == "in":
        return f"SEARCH({operands[0]}, Sarg[{', '.join(operands[1:])}])"
    symbol = _SYMBOLS.get(op, op.upper())
    return f"{symbol}({', '.join(operands)})"


def _flatten(rex: Rex, op: str) -> list[Rex]:
    if isinstance(rex, Call) and rex.op == op and rex.function is None:
        out: list[Rex] = []
        for operand in rex.operands:
            out.extend(_flatten(operand, op))
        return out
    return [rex]


_INFIX = {"=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/"}
_POSTFIX = {"IS NULL", "IS NOT NULL", "IS TRUE", "IS FALSE", "IS NOT TRUE", "IS NOT FALSE"}


def infix_text(rex: Rex, names: Sequence[str]) -> str:
    """The Optimized Execution Plan's form: `((c > 10) AND (b = 'x'))`, `CAST(a AS BIGINT)`, `UPPER(b)`."""
    if not isinstance(rex, Call):
        return rex_text(rex, names)
    op = rex.op
    operands = [infix_text(o, names) for o in rex.operands]
    shared = _either_form(rex, operands)
    if shared is not None:
        return shared
    if op in ("and", "or"):
        return "(" + f" {op.upper()} ".join(infix_text(o, names) for o in _flatten(rex, op)) + ")"
    if op in ("cast", "try_cast"):
        return f"{op.upper()}({operands[0]} AS {rex.type.summary(False)})"
    if op == "in":
        return f"({operands[0]} IN ({', '.join(operands[1:])}))"
    symbol = _SYMBOLS.get(op, op.upper())
    if symbol in _INFIX and len(operands) == 2:
        return f"({operands[0]} {symbol} {operands[1]})"
    if symbol in _POSTFIX:
        return f"({operands[0]} {symbol})"
    if op == "like":
        return f"({operands[0]} LIKE {operands[1]})"
    return f"{symbol}({', '.join(operands)})"
