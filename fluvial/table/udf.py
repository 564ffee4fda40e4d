"""User-defined functions (PyFlink `pyflink.table.udf`): `udf` (scalar), `udtf` (table), `udaf` (aggregate),
`udtaf` (table aggregate), their base classes `ScalarFunction`, `AsyncScalarFunction`, `TableFunction`,
`AggregateFunction`, `TableAggregateFunction`, and the `FunctionContext` their `open` receives.

An async scalar function (an `AsyncScalarFunction`, or `udf` on an `async def` function) is not called per row
by the Calc's compiled code: the planner runs the Calc calling it on the task's event loop
(`table.runtime.async_calc`).

A wrapped function is picklable config: the planner puts it into a rex Call, and the task calls it per row
(`open` first, once per task). Arguments arrive as the columns' Python values, as in PyFlink; a table
function yields values (a scalar, a tuple or a Row per output row).
"""

from __future__ import annotations

import abc
import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from fluvial.table.expression import Expression, _expr
from fluvial.table.types import DataType, DataTypes

__all__ = [
    "udf",
    "udtf",
    "udaf",
    "udtaf",
    "ScalarFunction",
    "AsyncScalarFunction",
    "TableFunction",
    "AggregateFunction",
    "TableAggregateFunction",
    "FunctionContext",
    "UserDefinedFunctionWrapper",
]


class FunctionContext:
    """What `open` gets: job parameters and the metric group of the task."""

    def __init__(self, runtime_context: Any = None) -> None:
        self._runtime_context = runtime_context

    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None:
        if self._runtime_context is None:
            return default_value
        return self._runtime_context.get_job_parameter(key, default_value)

    def get_metric_group(self) -> Any:
        return None if self._runtime_context is None else self._runtime_context.get_metrics_group()


class UserDefinedFunction:
    def open(self, function_context: FunctionContext) -> None:
        pass

    def close(self) -> None:
        pass

    def is_deterministic(self) -> bool:
        return True


class ScalarFunction(UserDefinedFunction):
    """Subclass and implement `eval(*args)`."""

    def eval(self, *args: Any) -> Any:
        raise NotImplementedError


class AsyncScalarFunction(UserDefinedFunction):
    """Subclass and implement `async def eval(*args)`: a scalar function for I/O (a database lookup, a REST
    call) whose calls for many rows wait concurrently, at most `table.exec.async-scalar.max-concurrent-operations`
    per task, their results in input order."""

    @abc.abstractmethod
    async def eval(self, *args: Any) -> Any:
        raise NotImplementedError


class TableFunction(UserDefinedFunction):
    """Subclass and implement `eval(*args)` yielding rows."""

    def eval(self, *args: Any) -> Iterable[Any]:
        raise NotImplementedError


class ImperativeAggregateFunction(UserDefinedFunction):
    """What aggregate functions share: an accumulator (a mutable object: a list or a Row) that `accumulate`
    changes in place for each input row, `retract` (needed over an updating input, such as another
    aggregation's result) and `merge` (needed by session windows, whose windows merge)."""

    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def accumulate(self, accumulator: Any, *args: Any) -> None:
        raise NotImplementedError

    def retract(self, accumulator: Any, *args: Any) -> None:
        raise NotImplementedError

    def merge(self, accumulator: Any, accumulators: Iterable[Any]) -> None:
        raise NotImplementedError

    def get_result_type(self) -> Any:
        return None

    def get_accumulator_type(self) -> Any:
        return None


class AggregateFunction(ImperativeAggregateFunction):
    """Subclass and implement `create_accumulator`, `accumulate(acc, *args)` and `get_value(acc)`."""

    def get_value(self, accumulator: Any) -> Any:
        raise NotImplementedError


class TableAggregateFunction(ImperativeAggregateFunction):
    """Subclass and implement `create_accumulator`, `accumulate(acc, *args)` and `emit_value(acc)`, which
    yields the rows of the group's result (used by `flat_aggregate`)."""

    def emit_value(self, accumulator: Any) -> Iterable[Any]:
        raise NotImplementedError


def overrides(function: Any, method: str) -> bool:
    """Whether a user's aggregate function implements `method` (retract, merge) itself."""
    own = getattr(type(function), method, None)
    return own is not None and own is not getattr(ImperativeAggregateFunction, method)


def _type(value: Any) -> DataType | None:
    if value is None or isinstance(value, DataType):
        return value
    from fluvial.table.sql.types import parse_type

    return parse_type(str(value))


class UserDefinedFunctionWrapper:
    """A Python function or UserDefinedFunction with its declared types; calling it with expressions gives an
    Expression (`length(col("data"))`)."""

    def __init__(
        self,
        func: Any,
        input_types: Any,
        result_types: list[DataType],
        kind: str,
        deterministic: bool | None,
        name: str | None,
    ) -> None:
        self._func = func
        self._input_types = input_types
        self._result_types = result_types
        self._result_type = result_types[0] if result_types else None
        self._kind = kind
        self._deterministic = deterministic if deterministic is not None else True
        self._name = name or getattr(func, "__name__", type(func).__name__)
        self._alias_names: tuple[str, ...] = ()
        self._accumulator_type: Any = None
        self._row_names: tuple[str, ...] | None = None
        self._pandas = False  # a vectorized (pandas) udf or udaf
        self._async = kind == "scalar" and _is_async(func)  # an async scalar function (see the module)
        self._opened = False

    def __call__(self, *args: Any) -> Expression:
        op = {"scalar": "__udf__", "table": "__udtf__", "aggregate": "__udaf__", "table_aggregate": "__udtaf__"}
        return Expression("call", op[self._kind], tuple(_expr(a) for a in args), value=self)

    def alias(self, *names: str) -> UserDefinedFunctionWrapper:
        copy = UserDefinedFunctionWrapper(
            self._func, self._input_types, self._result_types, self._kind, self._deterministic, self._name
        )
        copy._alias_names = tuple(names)
        copy._accumulator_type = self._accumulator_type
        copy._pandas = self._pandas
        return copy

    def _taking_row(self, names: list[str]) -> UserDefinedFunctionWrapper:
        """This function called with one Row of the columns `names` (PyFlink's `map(f)` and `flat_map(f)`)."""
        copy = self.alias(*self._alias_names)
        copy._row_names = tuple(names)
        return copy

    def _invoke(self, *args: Any) -> Any:
        """The per-row call (opens a UserDefinedFunction once per task first)."""
        if self._row_names is not None:
            from fluvial.common.row import RowKind, _create_row

            args = (_create_row(list(self._row_names), list(args), RowKind.INSERT),)
        return self._callable()(*args)

    def _callable(self) -> Callable[..., Any]:
        """The function to call: a UserDefinedFunction's `eval` (opened once per task first), or the function."""
        func: Any = self._func
        if isinstance(func, UserDefinedFunction):
            if not self._opened:
                func.open(FunctionContext())
                self._opened = True
            return func.eval
        return func

    def _invoke_vectorized(self, *series: Any) -> Any:
        """A pandas udf's call for a buffer: one Series per argument, or (`map(f)`) one DataFrame of the row's
        columns, as PyFlink passes it."""
        if self._row_names is not None:
            import pandas as pd

            series = (pd.DataFrame(dict(zip(self._row_names, series))),)
        return self._callable()(*series)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_opened"] = False
        return state


def _is_async(func: Any) -> bool:
    if isinstance(func, AsyncScalarFunction):
        if not inspect.iscoroutinefunction(func.eval):
            raise TypeError(f"{type(func).__name__}.eval must be declared 'async def' (an AsyncScalarFunction)")
        return True
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(getattr(func, "eval", None))


def _wrap(kind: str, f: Any, input_types: Any, result_types: list[DataType], deterministic: Any, name: Any) -> Any:
    if f is None:
        return functools.partial(
            _wrap, kind, input_types=input_types, result_types=result_types, deterministic=deterministic, name=name
        )
    return UserDefinedFunctionWrapper(f, input_types, result_types, kind, deterministic, name)


def udf(
    f: Callable | ScalarFunction | None = None,
    input_types: Any = None,
    result_type: Any = None,
    deterministic: bool | None = None,
    name: str | None = None,
    func_type: str = "general",
) -> Any:
    """A scalar function: `@udf(result_type=DataTypes.BIGINT())`. `func_type="pandas"`: a vectorized function,
    called once per buffer of rows with one `pandas.Series` per argument, returning a Series as long (needs the
    `pandas` extra). An `AsyncScalarFunction` or an `async def` function gives an async scalar function."""
    if func_type not in ("general", "pandas"):
        raise ValueError(f"func_type is 'general' or 'pandas', not {func_type!r}")
    if result_type is None:
        raise TypeError("udf needs result_type, e.g. @udf(result_type=DataTypes.BIGINT())")
    wrapped = _wrap("scalar", f, input_types, [_type(result_type)], deterministic, name)
    return _vectorized(wrapped) if func_type == "pandas" else wrapped


def _vectorized(wrapped: Any) -> Any:
    """Marks a scalar udf (or, used as a decorator factory, the udf it will make) as a pandas function."""
    if isinstance(wrapped, UserDefinedFunctionWrapper):
        if wrapped._async:
            raise ValueError(
                f"the async scalar function {wrapped._name} cannot be a pandas udf: use func_type='general' (the "
                "default) for async functions"
            )
        if isinstance(wrapped._func, UserDefinedFunction) and not isinstance(wrapped._func, ScalarFunction):
            raise TypeError(f"a pandas udf is a ScalarFunction or a function of pandas.Series; got {wrapped._func!r}")
        wrapped._pandas = True
        return wrapped
    return lambda f: _vectorized(wrapped(f))


def udtf(
    f: Callable | TableFunction | None = None,
    input_types: Any = None,
    result_types: Any = None,
    deterministic: bool | None = None,
    name: str | None = None,
) -> Any:
    """A table function: `@udtf(result_types=[DataTypes.STRING()])`, yielding rows."""
    if result_types is None:
        raise TypeError("udtf needs result_types, e.g. @udtf(result_types=[DataTypes.STRING()])")
    types = result_types if isinstance(result_types, list) else [result_types]
    return _wrap("table", f, input_types, [_type(t) for t in types], deterministic, name)


def _aggregate_wrapper(
    kind: str, f: Any, input_types: Any, result_type: Any, accumulator_type: Any, deterministic: Any, name: Any
) -> UserDefinedFunctionWrapper:
    base = AggregateFunction if kind == "aggregate" else TableAggregateFunction
    if not isinstance(f, base):
        what = "udaf takes an AggregateFunction" if kind == "aggregate" else "udtaf takes a TableAggregateFunction"
        raise TypeError(f"{what} instance (a subclass of pyflink.table.udf.{base.__name__}); got {f!r}")
    result = result_type if result_type is not None else f.get_result_type()
    if result is None:
        raise TypeError(f"{type(f).__name__} needs a result type: pass result_type= or implement get_result_type()")
    wrapper = UserDefinedFunctionWrapper(f, input_types, [_type(result)], kind, deterministic, name)  # type: ignore[list-item]
    wrapper._accumulator_type = accumulator_type if accumulator_type is not None else f.get_accumulator_type()
    return wrapper


def udaf(
    f: AggregateFunction | None = None,
    input_types: Any = None,
    result_type: Any = None,
    accumulator_type: Any = None,
    deterministic: bool | None = None,
    name: str | None = None,
    func_type: str = "general",
) -> Any:
    """An aggregate function for GROUP BY, window aggregations and `aggregate`: `udaf(WeightedAvg(),
    result_type=DataTypes.BIGINT())`, or the result type from the function's `get_result_type()`.

    `func_type="pandas"`: a vectorized aggregate, a Python function called once per window with one
    `pandas.Series` per argument (`udaf(lambda v: v.mean(), result_type=..., func_type="pandas")`); Flink runs
    these in window aggregations only, when streaming."""
    if func_type not in ("general", "pandas"):
        raise ValueError(f"func_type is 'general' or 'pandas', not {func_type!r}")
    if func_type == "pandas" and f is not None:
        if result_type is None:
            raise TypeError("a pandas udaf needs result_type, e.g. udaf(f, result_type=DataTypes.DOUBLE(), ...)")
        if not callable(f) or isinstance(f, ImperativeAggregateFunction):
            raise TypeError(f"a pandas udaf is a function of pandas.Series (func_type='pandas'); got {f!r}")
        wrapper = UserDefinedFunctionWrapper(f, input_types, [_type(result_type)], "aggregate", deterministic, name)  # type: ignore[list-item]
        wrapper._pandas = True
        return wrapper
    if f is None:  # used as a decorator: @udaf(result_type=...)
        return functools.partial(udaf, **{k: v for k, v in locals().items() if k != "f"})
    return _aggregate_wrapper("aggregate", f, input_types, result_type, accumulator_type, deterministic, name)


def udtaf(
    f: TableAggregateFunction | None = None,
    input_types: Any = None,
    result_type: Any = None,
    accumulator_type: Any = None,
    deterministic: bool | None = None,
    name: str | None = None,
    func_type: str = "general",
) -> Any:
    """A table aggregate function for `flat_aggregate`: each group's result is the rows its `emit_value`
    yields (a ROW result type names their columns)."""
    if func_type != "general":
        raise NotImplementedError("vectorized (pandas) UDTAFs do not exist in Flink: use func_type='general'")
    if f is None:  # used as a decorator: @udtaf(result_type=...)
        return functools.partial(udtaf, **{k: v for k, v in locals().items() if k != "f"})
    return _aggregate_wrapper("table_aggregate", f, input_types, result_type, accumulator_type, deterministic, name)


_ = DataTypes
