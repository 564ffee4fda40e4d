"""Flink's function DDL: `CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] name AS 'identifier' [LANGUAGE
JAVA|SCALA|PYTHON] [USING JAR '...']`, `ALTER [TEMPORARY [SYSTEM]] FUNCTION [IF EXISTS] name AS 'identifier'
[LANGUAGE ...]` and `DROP [TEMPORARY [SYSTEM]] FUNCTION [IF EXISTS] name`.

sqlglot reads CREATE FUNCTION as a SQL function body, so these statements are read here by their grammar, which
is small and fixed. As in Flink, LANGUAGE defaults to JAVA, and ALTER changes catalog functions only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fluvial.table.errors import SqlParserException, ValidationException
from fluvial.table.function_catalog import FunctionScope, java_refused, load_python_function

if TYPE_CHECKING:
    from fluvial.table.table_environment import TableEnvironment

__all__ = ["is_function_ddl", "execute_function_ddl"]

_NAME = r"(?P<name>(?:`[^`]+`|[\w$]+)(?:\.(?:`[^`]+`|[\w$]+)){0,2})"
_HEAD = r"^\s*(?P<verb>CREATE|ALTER|DROP)\s+(?P<temporary>TEMPORARY\s+(?P<system>SYSTEM\s+)?)?FUNCTION\b"
_CREATE = re.compile(
    _HEAD + r"\s+(?P<if>IF\s+NOT\s+EXISTS\s+)?" + _NAME + r"\s+AS\s+'(?P<identifier>(?:[^']|'')*)'"
    r"(?:\s+LANGUAGE\s+(?P<language>\w+))?(?P<using>\s+USING\s+.*)?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_ALTER = re.compile(
    _HEAD + r"\s+(?P<if>IF\s+EXISTS\s+)?" + _NAME + r"\s+AS\s+'(?P<identifier>(?:[^']|'')*)'"
    r"(?:\s+LANGUAGE\s+(?P<language>\w+))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_DROP = re.compile(_HEAD + r"\s+(?P<if>IF\s+EXISTS\s+)?" + _NAME + r"\s*$", re.IGNORECASE | re.DOTALL)
_IS_FUNCTION_DDL = re.compile(_HEAD, re.IGNORECASE)
_LANGUAGES = ("JAVA", "SCALA", "PYTHON")


def is_function_ddl(text: str) -> bool:
    return _IS_FUNCTION_DDL.match(text) is not None


def _scope(match: re.Match[str]) -> FunctionScope:
    if match.group("system"):
        return FunctionScope.TEMPORARY_SYSTEM
    return FunctionScope.TEMPORARY if match.group("temporary") else FunctionScope.CATALOG


def _language(match: re.Match[str], identifier: str) -> None:
    """Refuses anything but LANGUAGE PYTHON (Flink's default is JAVA)."""
    language = (match.group("language") or "JAVA").upper()
    if language not in _LANGUAGES:
        raise ValidationException(f"LANGUAGE is JAVA, SCALA or PYTHON, not {language}")
    if language != "PYTHON":
        implicit = "" if match.group("language") else " (a function without LANGUAGE is a Java function, as in Flink)"
        raise java_refused(f"'{identifier}'{implicit}")


def execute_function_ddl(t_env: TableEnvironment, text: str) -> None:
    functions = t_env._catalog.function_catalog
    verb = text.lstrip()[:6].upper()
    if verb.startswith("DROP"):
        match = _DROP.match(text)
        if match is None:
            raise SqlParserException(
                "DROP FUNCTION takes DROP [TEMPORARY [SYSTEM]] FUNCTION [IF EXISTS] name, got: " + text[:80]
            )
        functions.drop(match.group("name"), _scope(match), if_exists=bool(match.group("if")))
        return
    pattern = _CREATE if verb.startswith("CREATE") else _ALTER
    match = pattern.match(text)
    if match is None:
        form = (
            "CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] name AS 'module.object' LANGUAGE PYTHON"
            if pattern is _CREATE
            else "ALTER FUNCTION [IF EXISTS] name AS 'module.object' LANGUAGE PYTHON"
        )
        raise SqlParserException(f"{verb.strip()} FUNCTION takes {form}, got: {text[:80]}")
    identifier = match.group("identifier").replace("''", "'")
    if pattern is _CREATE and match.group("using"):
        raise java_refused(f"'{identifier}' (USING JAR)")
    _language(match, identifier)
    scope = _scope(match)
    if pattern is _ALTER and scope is not FunctionScope.CATALOG:
        kind = "system" if scope is FunctionScope.TEMPORARY_SYSTEM else "catalog"
        raise ValidationException(f"Alter temporary {kind} function is not supported; drop it and create it again")
    function = load_python_function(identifier, t_env.get_config().get("python.files"))
    if pattern is _CREATE:
        functions.create(match.group("name"), function, scope, bool(match.group("if")), identifier)
    else:
        functions.alter(match.group("name"), function, identifier, bool(match.group("if")))
