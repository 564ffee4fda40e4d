"""`Expression` (PyFlink `pyflink.table.expression`): the unresolved expression tree the Table API builds.

An Expression is inert data: a field reference (`col("a")`), a literal (`lit(1)`), a call of a built-in or
user function (`col("a") + 1`, `col("a").sum`, `call("upper", col("s"))`), an alias, a cast. The planner
(`fluvial.table.planner.resolve`) resolves one against a table's schema into a typed `rex` tree, which the
runtime compiles once per task. SQL text is converted to the same tree, carrying line and column positions
for its error messages.
"""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from enum import Enum
from typing import Any

from fluvial.table.types import DataType, DataTypes

__all__ = ["Expression", "TimeIntervalUnit", "TimePointUnit", "JsonValueOnEmptyOrError", "SqlPosition"]


class TimeIntervalUnit(Enum):
    YEAR = 0
    YEAR_TO_MONTH = 1
    QUARTER = 2
    MONTH = 3
    WEEK = 4
    DAY = 5
    DAY_TO_HOUR = 6
    DAY_TO_MINUTE = 7
    DAY_TO_SECOND = 8
    HOUR = 9
    SECOND = 10
    HOUR_TO_MINUTE = 11
    HOUR_TO_SECOND = 12
    MINUTE = 13
    MINUTE_TO_SECOND = 14


class TimePointUnit(Enum):
    YEAR = 0
    MONTH = 1
    DAY = 2
    HOUR = 3
    MINUTE = 4
    SECOND = 5
    QUARTER = 6
    WEEK = 7
    MILLISECOND = 8
    MICROSECOND = 9


class JsonValueOnEmptyOrError(Enum):
    NULL = 0
    ERROR = 1
    DEFAULT = 2


SqlPosition = tuple[int, int]  # (line, column), both from 1, of SQL text

_MILLIS = {"milli": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000, "week": 7 * 86_400_000}
_MONTHS = {"month": 1, "quarter": 3, "year": 12}


class Expression:
    """One node of an unresolved expression. `kind` is one of `field`, `literal`, `call`, `alias`, `cast`,
    `star`, `window_ref`; `name` is the field or function name; `args` the operand expressions."""

    __slots__ = ("kind", "name", "args", "value", "data_type", "aliases", "sql_position")

    def __init__(
        self,
        kind: str,
        name: str | None = None,
        args: tuple[Expression, ...] = (),
        value: Any = None,
        data_type: DataType | None = None,
        aliases: tuple[str, ...] = (),
        sql_position: SqlPosition | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.args = args
        self.value = value
        self.data_type = data_type
        self.aliases = aliases
        self.sql_position = sql_position

    # -- building -----------------------------------------------------------------------------------------------

    def _call(self, name: str, *others: Any) -> Expression:
        return Expression("call", name, (self, *(_expr(o) for o in others)))

    def __repr__(self) -> str:
        return self.to_string()

    def to_string(self) -> str:
        """Flink's `asSummaryString()` of the expression, used for explain output."""
        if self.kind == "field":
            return str(self.name)
        if self.kind == "literal":
            return repr(self.value) if isinstance(self.value, str) else str(self.value)
        if self.kind == "alias":
            return f"as({self.args[0].to_string()}, {', '.join(repr(a) for a in self.aliases)})"
        if self.kind == "cast":
            return f"cast({self.args[0].to_string()}, {self.data_type})"
        if self.kind == "star":
            return "*"
        return f"{self.name}({', '.join(a.to_string() for a in self.args)})"

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        raise TypeError("an Expression has no truth value; combine conditions with & and |, not 'and'/'or'")

    # -- operators ----------------------------------------------------------------------------------------------

    def __add__(self, o: Any) -> Expression:
        return self._call("plus", o)

    def __radd__(self, o: Any) -> Expression:
        return _expr(o)._call("plus", self)

    def __sub__(self, o: Any) -> Expression:
        return self._call("minus", o)

    def __rsub__(self, o: Any) -> Expression:
        return _expr(o)._call("minus", self)

    def __mul__(self, o: Any) -> Expression:
        return self._call("times", o)

    def __rmul__(self, o: Any) -> Expression:
        return _expr(o)._call("times", self)

    def __truediv__(self, o: Any) -> Expression:
        return self._call("divide", o)

    def __rtruediv__(self, o: Any) -> Expression:
        return _expr(o)._call("divide", self)

    def __mod__(self, o: Any) -> Expression:
        return self._call("mod", o)

    def __rmod__(self, o: Any) -> Expression:
        return _expr(o)._call("mod", self)

    def __pow__(self, o: Any) -> Expression:
        return self._call("power", o)

    def __rpow__(self, o: Any) -> Expression:
        return _expr(o)._call("power", self)

    def __neg__(self) -> Expression:
        return self._call("minus_prefix")

    def __abs__(self) -> Expression:
        return self._call("abs")

    def __eq__(self, o: Any) -> Expression:  # type: ignore[override]
        return self._call("equals", o)

    def __ne__(self, o: Any) -> Expression:  # type: ignore[override]
        return self._call("not_equals", o)

    def __lt__(self, o: Any) -> Expression:
        return self._call("less_than", o)

    def __le__(self, o: Any) -> Expression:
        return self._call("less_than_or_equal", o)

    def __gt__(self, o: Any) -> Expression:
        return self._call("greater_than", o)

    def __ge__(self, o: Any) -> Expression:
        return self._call("greater_than_or_equal", o)

    def __and__(self, o: Any) -> Expression:
        return self._call("and", o)

    def __rand__(self, o: Any) -> Expression:
        return _expr(o)._call("and", self)

    def __or__(self, o: Any) -> Expression:
        return self._call("or", o)

    def __ror__(self, o: Any) -> Expression:
        return _expr(o)._call("or", self)

    def __invert__(self) -> Expression:
        return self._call("not")

    # -- naming and types ---------------------------------------------------------------------------------------

    def over(self, alias: Any) -> Expression:
        """This aggregate over the over window named `alias` (`col("b").sum.over(col("w"))`)."""
        name = alias.name if isinstance(alias, Expression) else str(alias)
        return Expression("call", "__over__", (self,), value=name)

    def alias(self, name: str, *extra_names: str) -> Expression:
        return Expression("alias", args=(self,), aliases=(name, *extra_names))

    def cast(self, data_type: DataType) -> Expression:
        return Expression("cast", "cast", (self,), data_type=data_type)

    def try_cast(self, data_type: DataType) -> Expression:
        return Expression("cast", "try_cast", (self,), data_type=data_type)

    # -- ordering (order_by) ------------------------------------------------------------------------------------

    @property
    def asc(self) -> Expression:
        return self._call("asc")

    @property
    def desc(self) -> Expression:
        return self._call("desc")

    # -- aggregates (properties, as PyFlink's) -------------------------------------------------------------------

    @property
    def sum(self) -> Expression:
        return self._call("sum")

    @property
    def sum0(self) -> Expression:
        return self._call("sum0")

    @property
    def min(self) -> Expression:
        return self._call("min")

    @property
    def max(self) -> Expression:
        return self._call("max")

    @property
    def count(self) -> Expression:
        return self._call("count")

    @property
    def avg(self) -> Expression:
        return self._call("avg")

    @property
    def first_value(self) -> Expression:
        return self._call("first_value")

    @property
    def last_value(self) -> Expression:
        return self._call("last_value")

    @property
    def distinct(self) -> Expression:
        return self._call("distinct")

    # -- window properties -----------------------------------------------------------------------------------------

    @property
    def start(self) -> Expression:
        return self._call("window_start")

    @property
    def end(self) -> Expression:
        return self._call("window_end")

    @property
    def rowtime(self) -> Expression:
        return self._call("window_rowtime")

    @property
    def proctime(self) -> Expression:
        """In `from_data_stream(ds, col("a"), col("pt").proctime)`: declares `pt` a processing-time attribute,
        appended to the stream's columns as PyFlink does."""
        return self._call("proctime_field")

    # -- intervals ----------------------------------------------------------------------------------------------

    def _interval(self, unit: str) -> Expression:
        if self.kind != "literal" or not isinstance(self.value, int):
            raise TypeError(f"an interval takes an integer literal, as lit(5).{unit}s; got {self.to_string()}")
        if unit in _MONTHS:
            return Expression("literal", value=self.value * _MONTHS[unit], data_type=DataType("INTERVAL_YEAR_MONTH"))
        return Expression("literal", value=self.value * _MILLIS[unit], data_type=DataType("INTERVAL_DAY_TIME"))

    millis = property(lambda self: self._interval("milli"))
    milli = millis
    seconds = property(lambda self: self._interval("second"))
    second = seconds
    minutes = property(lambda self: self._interval("minute"))
    minute = minutes
    hours = property(lambda self: self._interval("hour"))
    hour = hours
    days = property(lambda self: self._interval("day"))
    day = days
    weeks = property(lambda self: self._interval("week"))
    week = weeks
    months = property(lambda self: self._interval("month"))
    month = months
    quarters = property(lambda self: self._interval("quarter"))
    quarter = quarters
    years = property(lambda self: self._interval("year"))
    year = years

    # -- predicates ---------------------------------------------------------------------------------------------

    @property
    def is_null(self) -> Expression:
        return self._call("is_null")

    @property
    def is_not_null(self) -> Expression:
        return self._call("is_not_null")

    @property
    def is_true(self) -> Expression:
        return self._call("is_true")

    @property
    def is_false(self) -> Expression:
        return self._call("is_false")

    @property
    def is_not_true(self) -> Expression:
        return self._call("is_not_true")

    @property
    def is_not_false(self) -> Expression:
        return self._call("is_not_false")

    def between(self, lower: Any, upper: Any) -> Expression:
        return self._call("between", lower, upper)

    def not_between(self, lower: Any, upper: Any) -> Expression:
        return self._call("not_between", lower, upper)

    def in_(self, *values: Any) -> Expression:
        return self._call("in", *values)

    def then(self, if_true: Any, if_false: Any) -> Expression:
        return self._call("if", if_true, if_false)

    def if_null(self, null_replacement: Any) -> Expression:
        return self._call("coalesce", null_replacement)

    # -- math ---------------------------------------------------------------------------------------------------

    @property
    def exp(self) -> Expression:
        return self._call("exp")

    @property
    def log10(self) -> Expression:
        return self._call("log10")

    @property
    def log2(self) -> Expression:
        return self._call("log2")

    @property
    def ln(self) -> Expression:
        return self._call("ln")

    def log(self, base: Any = None) -> Expression:
        return self._call("ln") if base is None else _expr(base)._call("log", self)

    @property
    def sqrt(self) -> Expression:
        return self._call("sqrt")

    @property
    def abs(self) -> Expression:
        return self._call("abs")

    @property
    def sign(self) -> Expression:
        return self._call("sign")

    def round(self, places: Any = 0) -> Expression:
        return self._call("round", places)

    def floor(self, time_interval_unit: Any = None) -> Expression:
        return self._call("floor") if time_interval_unit is None else self._call("floor", _unit(time_interval_unit))

    def ceil(self, time_interval_unit: Any = None) -> Expression:
        return self._call("ceil") if time_interval_unit is None else self._call("ceil", _unit(time_interval_unit))

    def truncate(self, n: Any = 0) -> Expression:
        return self._call("truncate", n)

    # -- strings ------------------------------------------------------------------------------------------------

    def substring(self, begin_index: Any, length: Any = None) -> Expression:
        return self._call("substring", begin_index) if length is None else self._call("substring", begin_index, length)

    substr = substring

    def trim_leading(self, character: Any = None) -> Expression:
        return self._call("ltrim", " " if character is None else character)

    def trim_trailing(self, character: Any = None) -> Expression:
        return self._call("rtrim", " " if character is None else character)

    def trim(self, character: Any = None) -> Expression:
        return self._call("trim", " " if character is None else character)

    def replace(self, search: Any = None, replacement: Any = None) -> Expression:
        return self._call("replace", search, replacement)

    @property
    def char_length(self) -> Expression:
        return self._call("char_length")

    @property
    def upper_case(self) -> Expression:
        return self._call("upper")

    @property
    def lower_case(self) -> Expression:
        return self._call("lower")

    @property
    def init_cap(self) -> Expression:
        return self._call("initcap")

    def like(self, pattern: Any = None) -> Expression:
        return self._call("like", pattern)

    def similar(self, pattern: Any = None) -> Expression:
        return self._call("similar", pattern)

    def position(self, haystack: Any = None) -> Expression:
        return self._call("position", haystack)

    def lpad(self, length: Any, pad: Any) -> Expression:
        return self._call("lpad", length, pad)

    def rpad(self, length: Any, pad: Any) -> Expression:
        return self._call("rpad", length, pad)

    def regexp_replace(self, regex: Any, replacement: Any) -> Expression:
        return self._call("regexp_replace", regex, replacement)

    def regexp_extract(self, regex: Any, extract_index: Any = None) -> Expression:
        args = (regex,) if extract_index is None else (regex, extract_index)
        return self._call("regexp_extract", *args)

    def repeat(self, n: Any) -> Expression:
        return self._call("repeat", n)

    def ltrim(self) -> Expression:
        return self._call("ltrim", " ")

    def rtrim(self) -> Expression:
        return self._call("rtrim", " ")

    @property
    def to_base64(self) -> Expression:
        return self._call("to_base64")

    @property
    def from_base64(self) -> Expression:
        return self._call("from_base64")

    @property
    def md5(self) -> Expression:
        return self._call("md5")

    @property
    def sha256(self) -> Expression:
        return self._call("sha256")

    def json_value(
        self,
        path: str,
        returning_type: DataType | None = None,
        on_empty: Any = None,
        default_on_empty: Any = None,
        on_error: Any = None,
        default_on_error: Any = None,
    ) -> Expression:
        expr = self._call("json_value", path)
        return expr if returning_type is None else expr.cast(returning_type)

    # -- time ---------------------------------------------------------------------------------------------------

    @property
    def to_date(self) -> Expression:
        return self.cast(DataTypes.DATE())

    @property
    def to_time(self) -> Expression:
        return self.cast(DataTypes.TIME())

    @property
    def to_timestamp(self) -> Expression:
        return self.cast(DataTypes.TIMESTAMP(3))

    def extract(self, time_interval_unit: Any) -> Expression:
        return self._call("extract", _unit(time_interval_unit))


def _unit(unit: Any) -> Expression:
    return Expression(
        "literal", value=unit.name if isinstance(unit, Enum) else str(unit).upper(), data_type=DataType("SYMBOL")
    )


def _expr(value: Any) -> Expression:
    """A Python value as an expression: expressions as they are, anything else a literal."""
    if isinstance(value, Expression):
        return value
    return literal(value)


def literal(value: Any, data_type: DataType | None = None) -> Expression:
    if data_type is None:
        data_type = _literal_type(value)
    return Expression("literal", value=value, data_type=data_type)


def _literal_type(value: Any) -> DataType:
    if value is None:
        return DataTypes.NULL()
    if isinstance(value, bool):
        return DataTypes.BOOLEAN(False)
    if isinstance(value, int):
        return DataTypes.INT(False) if -(2**31) <= value < 2**31 else DataTypes.BIGINT(False)
    if isinstance(value, float):
        return DataTypes.DOUBLE(False)
    if isinstance(value, str):
        return DataTypes.CHAR(max(len(value), 1), False)
    if isinstance(value, Decimal):
        sign, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        return DataTypes.DECIMAL(max(len(digits), scale, 1), scale, False)
    if isinstance(value, _dt.datetime):
        return DataTypes.TIMESTAMP(6, False)
    if isinstance(value, _dt.date):
        return DataTypes.DATE(False)
    if isinstance(value, _dt.time):
        return DataTypes.TIME(0, False)
    from fluvial.table.types import infer_type

    return infer_type(value).not_null()
