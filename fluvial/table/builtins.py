"""Flink's built-in scalar functions: each one's type rule and its Python implementation.

The list (SQL names; the Table API's methods map onto them):
- comparison and logic: `=`, `<>`, `<`, `<=`, `>`, `>=`, AND, OR, NOT, IS [NOT] NULL, IS [NOT] TRUE/FALSE,
  BETWEEN, IN, LIKE, SIMILAR TO;
- arithmetic: `+`, `-`, `*`, `/`, `%`/MOD, POWER, ABS, SQRT, EXP, LN, LOG10, LOG2, LOG, SIGN, ROUND, FLOOR,
  CEIL/CEILING, TRUNCATE, SIN, COS, TAN, PI, E, RAND;
- string: `||`/CONCAT, CONCAT_WS, UPPER, LOWER, INITCAP, CHAR_LENGTH/CHARACTER_LENGTH, SUBSTRING/SUBSTR,
  TRIM/LTRIM/RTRIM, REPLACE, POSITION, LOCATE, LPAD, RPAD, REPEAT, REVERSE, LEFT, RIGHT, SPLIT_INDEX,
  REGEXP_REPLACE, REGEXP_EXTRACT, REGEXP, ASCII, CHR, MD5, SHA256, TO_BASE64, FROM_BASE64, UUID;
- temporal: PROCTIME, CURRENT_TIMESTAMP, NOW, LOCALTIMESTAMP, CURRENT_DATE, CURRENT_TIME, DATE_FORMAT, TO_TIMESTAMP,
  TO_TIMESTAMP_LTZ, TO_DATE, UNIX_TIMESTAMP, FROM_UNIXTIME, EXTRACT, YEAR, QUARTER, MONTH, WEEK, DAYOFYEAR,
  DAYOFMONTH, HOUR, MINUTE, SECOND, FLOOR/CEIL(ts TO unit), timestamp ± interval;
- conditional: CASE, IF, COALESCE/IFNULL, NULLIF, GREATEST, LEAST;
- JSON: JSON_VALUE, JSON_EXISTS, JSON_QUERY, IS JSON.

A function is strict unless said otherwise: a NULL operand makes a NULL result without calling it.
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
import random
import re
import uuid as _uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from fluvial.table import builtin_functions as impl
from fluvial.table.types import DataType, DataTypes, TypeFamily, common_type
from fluvial.table.values import cast_value

__all__ = ["Builtin", "BUILTINS", "lookup", "SignatureError", "AGGREGATES"]


class SignatureError(TypeError):
    """Operand types a function does not take; the planner adds the position."""


@dataclass(frozen=True, slots=True)
class Builtin:
    name: str
    infer: Callable[[list[DataType]], DataType]
    impl: Callable[..., Any] | None
    strict: bool = True
    deterministic: bool = True


BUILTINS: dict[str, Builtin] = {}
AGGREGATES = frozenset(
    {
        "count",
        "count_star",
        "sum",
        "sum0",
        "avg",
        "min",
        "max",
        "first_value",
        "last_value",
        "listagg",
        "stddev_pop",
        "stddev_samp",
        "var_pop",
        "var_samp",
        "collect",
    }
)


def _register(
    names: str,
    infer: Callable[[list[DataType]], DataType],
    impl: Callable[..., Any] | None,
    strict: bool = True,
    deterministic: bool = True,
) -> None:
    for name in names.split():
        BUILTINS[name] = Builtin(name, infer, impl, strict, deterministic)


def lookup(name: str) -> Builtin | None:
    return BUILTINS.get(name.lower())


def _nullable(types: list[DataType]) -> bool:
    return any(t.nullable for t in types)


def _sig(name: str, types: list[DataType], form: str) -> SignatureError:
    shown = ", ".join(f"<{t.summary(False)}>" for t in types)
    return SignatureError(f"Cannot apply '{name}' to arguments of type '{name}({shown})'. Supported form(s): {form}")


# -- type rules ---------------------------------------------------------------------------------------------------


def _with_null(t: DataType, operands: list[DataType]) -> DataType:
    from dataclasses import replace

    return replace(t.without_time_attribute(), nullable=_nullable(operands))


_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}


def _as_decimal(t: DataType) -> tuple[int, int]:
    if t.name == "DECIMAL":
        return t.precision or 10, t.scale or 0
    return _INTEGER_DIGITS.get(t.name, 19), 0


def _decimal_result(symbol: str, a: DataType, b: DataType) -> DataType:
    """Flink's (Calcite's) DECIMAL precision and scale of `a symbol b`, capped at 38 digits."""
    (p1, s1), (p2, s2) = _as_decimal(a), _as_decimal(b)
    if symbol in ("+", "-"):
        scale = max(s1, s2)
        precision = max(p1 - s1, p2 - s2) + scale + 1
    elif symbol == "*":
        precision, scale = p1 + p2 + 1, s1 + s2  # Flink's findMultiplicationDecimalType
    elif symbol == "/":
        integer_digits = p1 - s1 + s2
        scale = max(6, s1 + p2 + 1)
        precision = integer_digits + scale
        if precision > 38:
            scale = max(6, 38 - integer_digits)
            precision = 38
    else:  # %
        scale = max(s1, s2)
        precision = min(p1 - s1, p2 - s2) + scale
    if precision > 38:
        scale = max(0, scale - (precision - 38))
        precision = 38
    return DataTypes.DECIMAL(precision, scale)


def _arith(symbol: str) -> Callable[[list[DataType]], DataType]:
    def infer(types: list[DataType]) -> DataType:
        a, b = types
        if a.is_numeric() and b.is_numeric() or "NULL" in (a.name, b.name):
            result = common_type([a, b])
            if "DECIMAL" in (a.name, b.name) and result.name == "DECIMAL":
                result = _decimal_result(symbol, a, b)
            return _with_null(result, types)
        if symbol in ("+", "-") and a.is_timestamp() and b.family is TypeFamily.INTERVAL:
            from dataclasses import replace

            return replace(a, nullable=_nullable(types))  # a rowtime stays a rowtime, as in Flink
        if symbol == "+" and b.is_timestamp() and a.family is TypeFamily.INTERVAL:
            return _with_null(b, types)
        if symbol in ("+", "-") and a.name == "DATE" and b.family is TypeFamily.INTERVAL:
            return _with_null(a, types)
        raise SignatureError(
            f"Cannot apply '{symbol}' to arguments of type '<{a.summary(False)}> {symbol} <{b.summary(False)}>'. "
            f"Supported form(s): '<NUMERIC> {symbol} <NUMERIC>'"
        )

    return infer


def _comparable(a: DataType, b: DataType) -> bool:
    if "NULL" in (a.name, b.name):
        return True
    if a.family is b.family:
        return a.family is not TypeFamily.DATETIME or a.name == b.name or (a.is_timestamp() and b.is_timestamp())
    return False


def _comparison(symbol: str) -> Callable[[list[DataType]], DataType]:
    def infer(types: list[DataType]) -> DataType:
        a, b = types
        if not _comparable(a, b):
            raise SignatureError(
                f"Cannot apply '{symbol}' to arguments of type '<{a.summary(False)}> {symbol} "
                f"<{b.summary(False)}>'. Supported form(s): '<COMPARABLE_TYPE> {symbol} <COMPARABLE_TYPE>'"
            )
        return DataTypes.BOOLEAN(_nullable(types))

    return infer


def _boolean_op(name: str) -> Callable[[list[DataType]], DataType]:
    def infer(types: list[DataType]) -> DataType:
        for t in types:
            if t.name not in ("BOOLEAN", "NULL"):
                shown = f" {name} ".join(f"<{x.summary(False)}>" for x in types)
                raise SignatureError(
                    f"Cannot apply '{name}' to arguments of type '{shown}'. "
                    f"Supported form(s): '<BOOLEAN> {name} <BOOLEAN>'"
                )
        return DataTypes.BOOLEAN(_nullable(types))

    return infer


def _fixed(result: DataType, nullable_from_operands: bool = True) -> Callable[[list[DataType]], DataType]:
    def infer(types: list[DataType]) -> DataType:
        from dataclasses import replace

        return replace(result, nullable=_nullable(types) if nullable_from_operands else result.nullable)

    return infer


def _strings(name: str, result: DataType) -> Callable[[list[DataType]], DataType]:
    def infer(types: list[DataType]) -> DataType:
        if not types or not (types[0].is_string() or types[0].name == "NULL"):
            raise _sig(name.upper(), types, f"'{name.upper()}(<CHARACTER>)'")
        from dataclasses import replace

        return replace(result, nullable=_nullable(types))

    return infer


def _same_string(name: str) -> Callable[[list[DataType]], DataType]:
    """UPPER, LOWER, INITCAP: the argument's own character type (CHAR(1) stays CHAR(1))."""

    def infer(types: list[DataType]) -> DataType:
        if not types or not (types[0].is_string() or types[0].name == "NULL"):
            raise _sig(name.upper(), types, f"'{name.upper()}(<CHARACTER>)'")
        return _with_null(types[0] if types[0].is_string() else DataTypes.STRING(), types)

    return infer


def _concat_type(types: list[DataType]) -> DataType:
    """`a || b`: CHAR(m + n) of CHARs, VARCHAR(m + n) of bounded strings, else STRING (Calcite's rule)."""
    from fluvial.table.types import MAX_LENGTH

    if types and all(t.is_string() for t in types):
        length = sum(t.precision or 0 for t in types)
        if length < MAX_LENGTH and all((t.precision or MAX_LENGTH) < MAX_LENGTH for t in types):
            kind = DataTypes.CHAR if all(t.name == "CHAR" for t in types) else DataTypes.VARCHAR
            return kind(length, _nullable(types))
    return DataTypes.STRING(_nullable(types))


def _first(types: list[DataType]) -> DataType:
    return _with_null(types[0], types)


def _common(types: list[DataType]) -> DataType:
    try:
        return common_type([t for t in types])
    except TypeError as error:
        raise SignatureError(f"Cannot find a common type of {error}") from None


def _map_value(*keys_and_values: Any) -> dict[Any, Any]:
    """MAP[k1, v1, k2, v2, ...]: a key given twice keeps its first value, as Flink's maps look it up."""
    out: dict[Any, Any] = {}
    for key, value in zip(keys_and_values[0::2], keys_and_values[1::2]):
        out.setdefault(key, value)
    return out


def _same_type(types: list[DataType]) -> DataType:
    """The element (or key, or value) type of an ARRAY/MAP value constructor: the arguments' common type."""
    try:
        return common_type(list(types))
    except TypeError as error:
        raise SignatureError(
            f"Parameters must be of the same type: there is no common type of {error}; CAST them to one type"
        ) from None


def _always_boolean(types: list[DataType]) -> DataType:
    return DataTypes.BOOLEAN(False)


def _register_all() -> None:
    S, B, I, BI, D = DataTypes.STRING(), DataTypes.BOOLEAN(), DataTypes.INT(), DataTypes.BIGINT(), DataTypes.DOUBLE()  # noqa: E741 - INT, beside S, B, BI, D
    _register("plus", _arith("+"), impl.plus)
    _register("minus", _arith("-"), impl.minus)
    _register("times", _arith("*"), lambda a, b: a * b)
    _register("divide", _arith("/"), impl.divide)
    _register("mod", _arith("%"), impl.mod)
    _register("minus_prefix", _first, lambda a: -a)
    _register("plus_prefix", _first, lambda a: a)
    for name, symbol, op in (
        ("equals", "=", lambda a, b: a == b),
        ("not_equals", "<>", lambda a, b: a != b),
        ("less_than", "<", lambda a, b: a < b),
        ("less_than_or_equal", "<=", lambda a, b: a <= b),
        ("greater_than", ">", lambda a, b: a > b),
        ("greater_than_or_equal", ">=", lambda a, b: a >= b),
    ):
        _register(name, _comparison(symbol), op)
    _register("and", _boolean_op("AND"), None, strict=False)
    _register("or", _boolean_op("OR"), None, strict=False)
    _register("not", _boolean_op("NOT"), lambda a: not a)
    for name in ("is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false"):
        _register(name, _always_boolean, None, strict=False)
    _register("between", lambda ts: DataTypes.BOOLEAN(_nullable(ts)), lambda v, lo, hi: lo <= v <= hi)
    _register("not_between", lambda ts: DataTypes.BOOLEAN(_nullable(ts)), lambda v, lo, hi: not lo <= v <= hi)
    _register("in", lambda ts: DataTypes.BOOLEAN(_nullable(ts)), None, strict=False)
    _register("like", _strings("like", B), impl.like)
    _register("similar", _strings("similar", B), impl.similar)
    _register("if", lambda ts: _common(ts[1:]).nullable_(), None, strict=False)
    _register("case", lambda ts: _common(ts[1:-1:2] + [ts[-1]]), None, strict=False)
    _register("coalesce ifnull", lambda ts: _with_null(_common(ts), [ts[-1]]), impl.coalesce, strict=False)
    _register("nullif", lambda ts: _with_null(ts[0], [DataTypes.NULL()]), impl.nullif, strict=False)
    _register("greatest", _common, impl.greatest, strict=False)
    _register("least", _common, impl.least, strict=False)
    # math
    _register("power", _fixed(D), lambda a, b: float(a) ** float(b))
    _register("abs", _first, abs)
    _register("sqrt", _fixed(D), lambda a: math.sqrt(a))
    _register("exp", _fixed(D), lambda a: math.exp(a))
    _register("ln", _fixed(D), lambda a: math.log(a))
    _register("log10", _fixed(D), lambda a: math.log10(a))
    _register("log2", _fixed(D), lambda a: math.log2(a))
    _register("log", _fixed(D), lambda a, b=None: math.log(a) if b is None else math.log(b) / math.log(a))
    _register("sin", _fixed(D), math.sin)
    _register("cos", _fixed(D), math.cos)
    _register("tan", _fixed(D), math.tan)
    _register("sign", _first, lambda a: (a > 0) - (a < 0) if isinstance(a, int) else float((a > 0) - (a < 0)))
    _register("round", _first, impl.round_to)
    _register("truncate", _first, impl.truncate)
    _register("floor", _first, impl.floor)
    _register("ceil ceiling", _first, impl.ceil)
    _register("pi", _fixed(DataTypes.DOUBLE(False)), lambda: math.pi)
    _register("e", _fixed(DataTypes.DOUBLE(False)), lambda: math.e)
    _register("rand", _fixed(DataTypes.DOUBLE(False)), lambda seed=None: random.random(), deterministic=False)
    # strings
    _register("upper", _same_string("upper"), str.upper)
    _register("lower", _same_string("lower"), str.lower)
    _register("initcap", _same_string("initcap"), impl.initcap)
    _register("char_length character_length", _strings("char_length", I), len)
    _register("substring substr", _strings("substring", S), impl.substring)
    _register("trim btrim", _strings("trim", S), impl.trim)
    _register("ltrim", _strings("ltrim", S), lambda s, c=" ": s.lstrip(c))
    _register("rtrim", _strings("rtrim", S), lambda s, c=" ": s.rstrip(c))
    _register("replace", _strings("replace", S), lambda s, a, b: s.replace(a, b))
    _register("position", _fixed(I), impl.position)
    _register("locate", _fixed(I), impl.locate)
    _register("lpad", _strings("lpad", S), impl.lpad)
    _register("rpad", _strings("rpad", S), impl.rpad)
    _register("repeat", _strings("repeat", S), lambda s, n: s * max(n, 0))
    _register("reverse", _strings("reverse", S), lambda s: s[::-1])
    _register("left", _strings("left", S), lambda s, n: s[: max(n, 0)])
    _register("right", _strings("right", S), lambda s, n: s[len(s) - n :] if n > 0 else "")
    _register("split_index", _strings("split_index", S), impl.split_index)
    _register("regexp_replace", _strings("regexp_replace", S), impl.regexp_replace)
    _register("regexp_extract", _strings("regexp_extract", S), impl.regexp_extract)
    _register("regexp", _strings("regexp", B), lambda s, r: re.search(r, s) is not None)
    _register("ascii", _strings("ascii", I), lambda s: ord(s[0]) if s else 0)
    _register("chr", _fixed(S), lambda n: chr(n % 256))
    _register("concat", _concat_type, impl.concat, strict=False)
    _register("concat_ws", _fixed(S), impl.concat_ws, strict=False)
    _register("md5", _strings("md5", DataTypes.CHAR(32)), impl.hash_hex("md5"))
    _register("sha256", _strings("sha256", DataTypes.CHAR(64)), impl.hash_hex("sha256"))
    _register("sha1", _strings("sha1", DataTypes.CHAR(40)), impl.hash_hex("sha1"))
    _register("to_base64", _fixed(S), lambda s: base64.b64encode(s.encode() if isinstance(s, str) else s).decode())
    _register("from_base64", _fixed(S), lambda s: base64.b64decode(s).decode())
    _register("uuid", _fixed(DataTypes.STRING(False)), lambda: str(_uuid.uuid4()), deterministic=False)
    # time
    ts3 = DataTypes.TIMESTAMP_LTZ(3, False)
    _register(
        "current_timestamp now current_row_timestamp", lambda ts: ts3, impl.current_timestamp, deterministic=False
    )
    # PROCTIME(): a processing-time attribute (Flink's TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*); a row's value is
    # the wall time when it is computed, while windows and OVER frames over it use their operator's clock.
    _register(
        "proctime",
        lambda ts: replace(ts3, time_attribute="PROCTIME"),
        impl.current_timestamp,
        deterministic=False,
    )
    _register(
        "localtimestamp",
        lambda ts: DataTypes.TIMESTAMP(3, False),
        lambda: _dt.datetime.now(_dt.UTC).replace(tzinfo=None),
        deterministic=False,
    )
    _register(
        "current_date", lambda ts: DataTypes.DATE(False), lambda: _dt.datetime.now(_dt.UTC).date(), deterministic=False
    )
    _register(
        "current_time localtime",
        lambda ts: DataTypes.TIME(0, False),
        lambda: _dt.datetime.now(_dt.UTC).time().replace(microsecond=0),
        deterministic=False,
    )
    _register("date_format", _fixed(S), impl.date_format)
    _register("to_timestamp", lambda ts: DataTypes.TIMESTAMP(3), impl.to_timestamp)
    _register("to_date", lambda ts: DataTypes.DATE(), impl.to_date)
    _register("to_timestamp_ltz", lambda ts: DataTypes.TIMESTAMP_LTZ(3, _nullable(ts)), impl.to_timestamp_ltz)
    _register("unix_timestamp", _fixed(BI), impl.unix_timestamp)
    _register("from_unixtime", _fixed(S), impl.from_unixtime)
    _register("extract", lambda ts: DataTypes.BIGINT(ts[1].nullable), impl.extract)
    for unit in ("year", "quarter", "month", "week", "hour", "minute", "second"):
        _register(unit, lambda ts: DataTypes.BIGINT(_nullable(ts)), (lambda u: lambda v: impl.extract(u, v))(unit))
    _register("dayofmonth", lambda ts: DataTypes.BIGINT(_nullable(ts)), lambda v: v.day)
    _register("dayofyear", lambda ts: DataTypes.BIGINT(_nullable(ts)), lambda v: v.timetuple().tm_yday)
    _register("dayofweek", lambda ts: DataTypes.BIGINT(_nullable(ts)), lambda v: v.isoweekday() % 7 + 1)
    # json
    _register("json_value", lambda ts: DataTypes.STRING(), impl.json_value)
    _register("json_exists", lambda ts: DataTypes.BOOLEAN(), impl.json_exists)
    _register("json_query", lambda ts: DataTypes.STRING(), impl.json_query)
    _register("is_json", lambda ts: DataTypes.BOOLEAN(False), impl.is_json)
    # constructors
    _register(
        "row",
        lambda ts: DataTypes.ROW([DataTypes.FIELD(f"EXPR${i}", t) for i, t in enumerate(ts)], False),
        None,
        strict=False,
    )
    _register("array", lambda ts: DataTypes.ARRAY(_same_type(ts), False), lambda *vs: list(vs), strict=False)
    _register(
        "map",
        lambda ts: DataTypes.MAP(_same_type(ts[0::2]), _same_type(ts[1::2]), False),
        _map_value,
        strict=False,
    )
    _register("cardinality", lambda ts: DataTypes.INT(_nullable(ts)), len)
    # an index past the end or a missing key is NULL: the element type made nullable (Calcite's ITEM)
    _register(
        "element_at item",
        lambda ts: replace(ts[0].element_type, nullable=True) if ts[0].element_type else DataTypes.NULL(),
        None,
        strict=False,
    )


_register_all()


def cast_function(target: DataType, source: DataType, try_: bool) -> Callable[[Any], Any]:
    """CAST's implementation for one (source, target) pair."""
    return lambda value: cast_value(value, target, source, try_)
