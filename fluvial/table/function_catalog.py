"""User-defined functions by name, in Flink's three scopes, and the loading of `CREATE FUNCTION ... AS
'module.object' LANGUAGE PYTHON`.

Flink keeps temporary system functions (`create_temporary_system_function`, `CREATE TEMPORARY SYSTEM
FUNCTION`), temporary catalog functions (`create_temporary_function`, `CREATE TEMPORARY FUNCTION`) and catalog
functions (`CREATE FUNCTION`); a name resolves to the temporary system function, else the built-in function,
else the temporary catalog function, else the catalog function (so only a temporary system function overrides
a built-in one, as in Flink). Names are case-insensitive, as Flink's. fluvial's catalog lives in memory,
so a catalog function lasts as long as its TableEnvironment, as one in Flink's default in-memory catalog does.

A Python function's identifier names an object of an importable module, as PyFlink's: a udf/udtf/udaf/udtaf
wrapper; fluvial also takes an AggregateFunction/TableAggregateFunction (instance or class) whose
`get_result_type()` declares its result, and a ScalarFunction/TableFunction (instance or class) whose `eval`
declares it with Python types (`-> int` is BIGINT, as Flink infers BIGINT from a Java Long). The module is imported with `python.files` on sys.path, as PyFlink's client does. fluvial has no
JVM: Java and Scala functions are refused with the way out.
"""

from __future__ import annotations

import datetime
import decimal
import importlib
import logging
import types
import typing
from collections import abc
from dataclasses import dataclass
from enum import Enum
from typing import Any

from fluvial.table.errors import ValidationException
from fluvial.table.types import DataType, DataTypes

__all__ = ["FunctionCatalog", "FunctionScope", "java_refused", "load_python_function", "as_function"]

logger = logging.getLogger(__name__)


class FunctionScope(Enum):
    TEMPORARY_SYSTEM = "temporary system function"
    TEMPORARY = "temporary catalog function"
    CATALOG = "catalog function"


@dataclass(frozen=True)
class FunctionEntry:
    name: str
    function: Any  # a UserDefinedFunctionWrapper
    scope: FunctionScope
    identifier: str | None = None  # the 'module.object' of CREATE FUNCTION


def java_refused(what: str) -> ValidationException:
    return ValidationException(
        f"fluvial has no JVM, so it cannot run the Java function {what}; write the function in Python "
        "(pyflink.table.udf) and create it with LANGUAGE PYTHON or create_temporary_function"
    )


class FunctionCatalog:
    """The three scopes, and `lookup`: the name → function view the planner reads (a dict kept current)."""

    def __init__(self, catalog: str, database: str) -> None:
        self._scopes: dict[FunctionScope, dict[str, FunctionEntry]] = {s: {} for s in FunctionScope}
        self.lookup: dict[str, Any] = {}
        self._path = f"{catalog}.{database}"

    @staticmethod
    def normalize(path: str) -> str:
        return path.split(".")[-1].strip("`").lower()

    def _describe(self, name: str, scope: FunctionScope) -> str:
        return (
            f"{scope.value} '{name}'"
            if scope is FunctionScope.TEMPORARY_SYSTEM
            else f"{scope.value} '{self._path}.{name}'"
        )

    def create(
        self,
        path: str,
        function: Any,
        scope: FunctionScope,
        if_not_exists: bool = False,
        identifier: str | None = None,
    ) -> None:
        name = self.normalize(path)
        entries = self._scopes[scope]
        taken = name in entries or (scope is FunctionScope.CATALOG and name in self._scopes[FunctionScope.TEMPORARY])
        if taken:
            if if_not_exists:
                return
            raise ValidationException(
                f"Could not create the {self._describe(name, scope)}: a function of that name already exists; "
                "drop it first or use IF NOT EXISTS"
            )
        entries[name] = FunctionEntry(name, function, scope, identifier)
        logger.info("created the %s as %s", self._describe(name, scope), identifier or function)
        self._refresh()

    def alter(self, path: str, function: Any, identifier: str, if_exists: bool) -> None:
        name = self.normalize(path)
        entries = self._scopes[FunctionScope.CATALOG]
        if name not in entries:
            if if_exists:
                return
            raise ValidationException(
                f"Function {self._path}.{name} does not exist, so ALTER FUNCTION cannot change it; create it first"
            )
        entries[name] = FunctionEntry(name, function, FunctionScope.CATALOG, identifier)
        self._refresh()

    def drop(self, path: str, scope: FunctionScope, if_exists: bool = True) -> bool:
        name = self.normalize(path)
        entries = self._scopes[scope]
        if name not in entries:
            if if_exists:
                return False
            others = [s for s in FunctionScope if name in self._scopes[s]]
            hint = ""
            if others:
                keyword = {
                    FunctionScope.TEMPORARY_SYSTEM: "DROP TEMPORARY SYSTEM FUNCTION",
                    FunctionScope.TEMPORARY: "DROP TEMPORARY FUNCTION",
                    FunctionScope.CATALOG: "DROP FUNCTION",
                }[others[0]]
                hint = f" ('{name}' is a {others[0].value}: use {keyword})"
            raise ValidationException(f"The {self._describe(name, scope)} does not exist{hint}")
        del entries[name]
        self._refresh()
        return True

    def names(self) -> list[str]:
        """Every user-defined function's name, also one a built-in function shadows."""
        return sorted({name for entries in self._scopes.values() for name in entries})

    def _refresh(self) -> None:
        """Flink's resolution order: temporary system, built-in, temporary catalog, catalog functions."""
        from fluvial.table.builtins import AGGREGATES, BUILTINS

        merged: dict[str, Any] = {}
        for scope in (FunctionScope.CATALOG, FunctionScope.TEMPORARY):
            entries = self._scopes[scope].items()
            merged.update({n: e.function for n, e in entries if n not in BUILTINS and n not in AGGREGATES})
        merged.update({n: e.function for n, e in self._scopes[FunctionScope.TEMPORARY_SYSTEM].items()})
        self.lookup.clear()
        self.lookup.update(merged)  # the same dict object: statements in flight see the change


def as_function(function: Any, what: str) -> Any:
    """`function` as a UserDefinedFunctionWrapper: a wrapper itself, or an AggregateFunction /
    TableAggregateFunction (instance or class) wrapped with its own `get_result_type()`, as PyFlink wraps them."""
    from fluvial.table import udf as udfs

    if isinstance(function, udfs.UserDefinedFunctionWrapper):
        return function
    if isinstance(function, type) and issubclass(function, udfs.UserDefinedFunction):
        try:
            function = function()
        except TypeError as error:
            raise ValidationException(f"{what}: the class cannot be made without arguments ({error})") from None
    if isinstance(function, udfs.TableAggregateFunction):
        return _with_result_type(udfs.udtaf, function, what)
    if isinstance(function, udfs.AggregateFunction):
        return _with_result_type(udfs.udaf, function, what)
    if isinstance(function, (udfs.ScalarFunction, udfs.TableFunction)):
        table = isinstance(function, udfs.TableFunction)
        declared = _annotated_result(function, table)
        if declared is not None and isinstance(function, udfs.TableFunction):
            return udfs.udtf(function, result_types=declared)
        if declared is not None and isinstance(function, udfs.ScalarFunction):
            return udfs.udf(function, result_type=declared[0])
        maker = "udtf(..., result_types=[...])" if table else "udf(..., result_type=...)"
        raise ValidationException(
            f"{what} is a {type(function).__name__} without declared types; annotate its eval's result with Python "
            f"types (-> int, -> Iterator[tuple[str, int]]) or wrap it with {maker} and name the wrapped object"
        )
    raise ValidationException(
        f"{what} is {type(function).__name__} {function!r}, not a user-defined function; decorate it with "
        "@udf(result_type=...) (or udtf, udaf, udtaf) from pyflink.table.udf"
    )


def _python_type(annotation: Any) -> DataType | None:
    """Flink's inference of a result type from a class (Java's Long → BIGINT), for Python's types."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _python_type(inner[0]) if len(inner) == 1 else None
    simple = {
        bool: DataTypes.BOOLEAN(),
        int: DataTypes.BIGINT(),
        float: DataTypes.DOUBLE(),
        str: DataTypes.STRING(),
        bytes: DataTypes.BYTES(),
        decimal.Decimal: DataTypes.DECIMAL(38, 18),
        datetime.datetime: DataTypes.TIMESTAMP(3),
        datetime.date: DataTypes.DATE(),
        datetime.time: DataTypes.TIME(),
    }
    return simple.get(annotation)


def _annotated_result(function: Any, table: bool) -> list[DataType] | None:
    """The result types an `eval` declares by its return annotation: a Python type for a ScalarFunction; for a
    TableFunction an Iterator/Iterable/Generator of a type or of a tuple of types (one column each)."""
    try:
        annotation = typing.get_type_hints(type(function).eval).get("return")
    except Exception:  # noqa: BLE001 - an annotation that does not resolve declares nothing
        return None
    if annotation is None:
        return None
    if table:
        if typing.get_origin(annotation) not in (abc.Iterator, abc.Iterable, abc.Generator):
            return None
        annotation = typing.get_args(annotation)[0]
        if typing.get_origin(annotation) is tuple:
            columns = [_python_type(a) for a in typing.get_args(annotation)]
            return [c for c in columns if c is not None] if columns and None not in columns else None
    found = _python_type(annotation)
    return None if found is None else [found]


def _with_result_type(maker: Any, function: Any, what: str) -> Any:
    try:
        return maker(function)
    except TypeError as error:
        raise ValidationException(f"{what}: {error}") from None


def load_python_function(identifier: str, python_files: str | None) -> Any:
    """The function a `CREATE FUNCTION ... AS 'module.object' LANGUAGE PYTHON` names, imported with
    `python_files` (the `python.files` option) on sys.path."""
    from fluvial.datastream import python_dependencies

    module_name, _, attribute = identifier.rpartition(".")
    if not module_name or not attribute:
        raise ValidationException(
            f"A Python function is named by 'module.object', got '{identifier}'; e.g. AS 'my_udfs.add_one'"
        )
    entries = [python_dependencies.sys_path_entry(p) for p in (python_files or "").split(",") if p]
    release = python_dependencies.put_on_path(list(dict.fromkeys(entries)))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValidationException(
            f"Cannot import the module '{module_name}' of the Python function '{identifier}' ({error}); put its "
            "file or directory on the path with SET 'python.files' = '...' or add_python_file"
        ) from None
    finally:
        release()
    try:
        function = getattr(module, attribute)
    except AttributeError:
        raise ValidationException(
            f"The module '{module_name}' has no object '{attribute}' for the Python function '{identifier}'"
        ) from None
    return as_function(function, f"The Python function '{identifier}'")
