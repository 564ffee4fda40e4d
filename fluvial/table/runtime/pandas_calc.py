"""Vectorized (pandas) scalar UDFs: a Calc whose expressions call `udf(..., func_type="pandas")` functions runs
per buffer of rows (Flink's PythonCalc for pandas functions, evaluated per Arrow batch).

The flat_map operator hands the whole RecordBatch to `map_batch`: each pandas call is evaluated once for the
buffer — its operands computed per row, gathered into one `pandas.Series` per argument with the dtypes PyFlink's
Arrow batches give, the function called, its Series checked for length and turned back into Python values
(NaN/None/NaT become NULL) — then the rest of the Calc (projections and the condition) runs per row over the
row's values extended by those results. A pandas call nested in another's operands is evaluated first.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from fluvial.common.row import Row, _create_row
from fluvial.datastream.functions import FlatMapFunction
from fluvial.table.errors import TableException
from fluvial.table.planner.rex import Call, Rex
from fluvial.table.runtime.codegen import calls_any, lift_calls
from fluvial.table.types import DataType

__all__ = ["PandasCalcFunction", "has_pandas_call", "pandas_series"]

# the numpy dtype PyFlink's Arrow batches give a column of these types (others: object, or pandas' inference)
_DTYPES = {
    "FLOAT": "float32",
    "DOUBLE": "float64",
    "TINYINT": "int8",
    "SMALLINT": "int16",
    "INT": "int32",
    "INTEGER": "int32",
    "BIGINT": "int64",
    "BOOLEAN": "bool",
    "STRING": "object",
    "VARCHAR": "object",
    "CHAR": "object",
}


def pandas_series(values: Sequence[Any], data_type: DataType) -> Any:
    """One argument column as PyFlink hands it to a pandas function: ints with a NULL become float64 (NaN), a
    BOOLEAN column with a NULL object."""
    import pandas as pd

    dtype = _DTYPES.get(data_type.name)
    if dtype in ("bool", "int8", "int16", "int32", "int64") and None in values:
        dtype = "object" if dtype == "bool" else "float64"
    if data_type.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return pd.Series(pd.to_datetime(list(values)))
    return pd.Series(list(values), dtype=dtype)


def _is_pandas(call: Call) -> bool:
    return call.op == "__udf__" and getattr(call.function, "_pandas", False)


def has_pandas_call(rexes: Iterable[Rex | None]) -> bool:
    return any(calls_any(r, _is_pandas) for r in rexes)


class PandasCalcFunction(FlatMapFunction):
    """Projection and filter with pandas UDF calls (see the module), row kinds kept."""

    def __init__(
        self, names: Sequence[str], width: int, projections: Sequence[Rex] | None, condition: Rex | None
    ) -> None:
        self.names = list(names)
        self.width = width  # the input's columns
        self.projections = None if projections is None else tuple(projections)
        self.condition = condition
        self._compiled: Any = None

    def open(self, runtime_context: Any) -> None:
        self._compiled = lift_calls(self.projections, self.condition, self.width, _is_pandas)

    def map_batch(self, values: list[Row]) -> list[Row | None]:
        """One output row per input row (None where the condition drops it), for the operator's buffer."""
        if self._compiled is None:
            self.open(None)
        calls, calc = self._compiled
        columns = [list(row._values) for row in values]
        for call, operands in calls:
            args = [operands(c) for c in columns]
            series = [
                pandas_series([a[i] for a in args], o.type) if args else pandas_series([], o.type)
                for i, o in enumerate(call.operands)
            ]
            results = _results(call, call.function._invoke_vectorized(*series), len(columns))
            for c, r in zip(columns, results):
                c.append(r)
        out: list[Row | None] = []
        for row, c in zip(values, columns):
            projected = calc(c)
            out.append(None if projected is None else _create_row(self.names, projected, row._row_kind))
        return out

    def flat_map(self, value: Row) -> Iterable[Row]:
        """A row alone (where no operator hands a buffer): a buffer of one."""
        return [r for r in self.map_batch([value]) if r is not None]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_compiled"] = None
        return state


def _results(call: Call, result: Any, length: int) -> list[Any]:
    """The Python values of a pandas function's result column: its length checked, NULLs for NaN/None/NaT."""
    import pandas as pd

    name = call.function._name
    if call.type.name == "ROW" and isinstance(result, pd.DataFrame):  # map(f): a row per line of the frame
        if len(result) != length:
            raise TableException(
                f"The result length '{len(result)}' of Pandas UDF '{name}' is not equal to the input length '{length}'"
            )
        fields = [
            _results(replace(call, type=t), result.iloc[:, i], length) for i, t in enumerate(call.type.field_types())
        ]
        return [Row(*values) for values in zip(*fields)]
    if not isinstance(result, pd.Series):
        if isinstance(result, (str, bytes)) or not hasattr(result, "__len__"):
            raise TableException(
                f"The result type of Pandas UDF '{name}' must be pandas.Series, got {type(result).__name__}: "
                "return a Series as long as the argument Series"
            )
        result = pd.Series(result)
    if len(result) != length:
        raise TableException(
            f"The result length '{len(result)}' of Pandas UDF '{name}' is not equal to the input length '{length}'"
        )
    nulls = result.isna().tolist()
    return [None if null else _python(v, call.type) for v, null in zip(result.tolist(), nulls)]


def _python(value: Any, data_type: DataType) -> Any:
    """A result value as the declared result type holds it (the Arrow conversion PyFlink does)."""
    name = data_type.name
    if name in ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"):
        return int(value)
    if name in ("FLOAT", "DOUBLE"):
        return float(value)
    if name == "BOOLEAN":
        return bool(value)
    if name == "DECIMAL":
        return decimal.Decimal(str(value))
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ") and hasattr(value, "to_pydatetime"):
        return value.to_pydatetime()
    return value
