"""The Table API's errors, named as PyFlink's (`pyflink.util.exceptions`)."""

from __future__ import annotations

__all__ = ["TableException", "ValidationException", "SqlParserException"]


class TableException(Exception):
    """A table program that cannot be planned or run."""


class ValidationException(TableException):
    """A query that does not fit its tables: an unknown column, a type mismatch, a missing watermark. SQL text's
    errors name the line and column (`From line 1, column 8 to line 1, column 10: ...`, as Flink's)."""


class SqlParserException(TableException):
    """SQL text that does not parse: `SQL parse failed. Encountered "x" at line 1, column 5.`"""


def at(position: tuple[int, int] | None, message: str) -> str:
    """`message` prefixed with Flink's location, when the expression came from SQL text."""
    if position is None:
        return message
    line, column = position
    return f"From line {line}, column {column}: {message}"
