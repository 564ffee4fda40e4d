"""Flink's built-in scalar functions: each one's type rule and its Python implementation.

The list (SQL names; the Table API's methods map onto them):
- comparison and logic: `=`, `<>`, `<`, `<=`, `>`, `>=`, AND, OR, NOT, IS [NOT] NULL, IS [NOT] TRUE/FALSE,
  BETWEEN, IN, LIKE, SIMILAR TO;
- arithmetic: `+`, `-`, `*`, `/`, `%`/MOD, POWER, ABS, SQRT, EXP, LN, LOG10, LOG2, LOG, SIGN, ROUND, FLOOR,
  CEIL/CEILING, TRUNCATE, SIN, COS, TAN, PI, E, RAND;
- string: `||`/CONCAT, CONCAT_WS, UPPER, LOWER, INITCAP, CHAR_LENGTH/CHARACTER_LENGTH, SUBSTRING/SUBSTR,
  TRIM/LTRIM/RTRIM, REPLACE, POSITION, LOCATE, LPAD, RPAD, REPEAT, REVERSE, LEFT, RIGHT, SPLIT_INDEX,
  REGEXP_REPLACE, REGEXP_EXTRACT, REGEXP, ASCII, CHR, MD5, SHA256, TO_BASE64, FROM_BASE64, UUID;
- temporal: CURRENT_TIMESTAMP, NOW, LOCALTIMESTAMP, CURRENT_DATE, CURRENT_TIME, DATE_FORMAT, TO_TIMESTAMP,
  TO_TIMESTAMP_LTZ, TO_DATE, UNIX_TIMESTAMP, FROM_UNIXTIME, EXTRACT, YEAR, QUARTER, MONTH, WEEK, DAYOFYEAR,
  DAYOFMONTH, HOUR, MINUTE, SECOND, FLOOR/CEIL(ts TO unit), timestamp ± interval;
- conditional: CASE, IF, COALESCE/IFNULL, NULLIF, GREATEST, LEAST;
- JSON: JSON_VALUE, JSON_EXISTS, JSON_QUERY, IS JSON.

A function is strict unless said otherwise: a NULL operand makes a NULL result without calling it.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import math
import random
import re
import uuid as _uuid
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Callable

from fluvial.table.types import DataType, DataTypes, TypeFamily, common_type
from fluvial.table.values import cast_value, epoch_millis, from_epoch_millis, sql_string

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
AGGREGATES = frozenset({"count", "count_star", "sum", "sum0", "avg", "min", "max", "first_value", "last_value",
                        "listagg", "stddev_pop", "stddev_samp", "var_pop", "var_samp", "collect"})


def _register(names: str, infer: Callable[[list[DataType]], DataType], impl: Callable[..., Any] | None,
              strict: bool = True, deterministic: bool = True) -> None:
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
        precision, scale = p1 + p2, s1 + s2
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
            f"Supported form(s): '<NUMERIC> {symbol} <NUMERIC>'")
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
                f"<{b.summary(False)}>'. Supported form(s): '<COMPARABLE_TYPE> {symbol} <COMPARABLE_TYPE>'")
        return DataTypes.BOOLEAN(_nullable(types))
    return infer


def _boolean_op(name: str) -> Callable[[list[DataType]], DataType]:
    def infer(types: list[DataType]) -> DataType:
        for t in types:
            if t.name not in ("BOOLEAN", "NULL"):
                shown = f" {name} ".join(f"<{x.summary(False)}>" for x in types)
                raise SignatureError(f"Cannot apply '{name}' to arguments of type '{shown}'. "
                                     f"Supported form(s): '<BOOLEAN> {name} <BOOLEAN>'")
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


def _always_boolean(types: list[DataType]) -> DataType:
    return DataTypes.BOOLEAN(False)


# -- implementations ------------------------------------------------------------------------------------------------

def _plus(a: Any, b: Any) -> Any:
    if isinstance(a, (_dt.date, _dt.datetime)) and isinstance(b, int):
        return a + _dt.timedelta(milliseconds=b)
    if isinstance(b, (_dt.date, _dt.datetime)) and isinstance(a, int):
        return b + _dt.timedelta(milliseconds=a)
    return a + b


def _minus(a: Any, b: Any) -> Any:
    if isinstance(a, (_dt.date, _dt.datetime)) and isinstance(b, int):
        return a - _dt.timedelta(milliseconds=b)
    return a - b


def _divide(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("/ by zero")
        quotient = abs(a) // abs(b)
        return quotient if (a >= 0) == (b >= 0) else -quotient
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(a) / Decimal(b)  # the planner's cast to the result's DECIMAL(p, s) rounds it
    if b == 0:
        return math.copysign(math.inf, a) if a != 0 else math.nan
    return a / b


def _mod(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return int(math.fmod(a, b))
    return math.fmod(a, b)


def _round(value: Any, places: int = 0) -> Any:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return value
        return float(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))
    if isinstance(value, Decimal):
        return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    if places >= 0:
        return value
    unit = 10 ** (-places)
    return int(Decimal(value / unit).quantize(Decimal(1), rounding=ROUND_HALF_UP)) * unit


def _truncate(value: Any, places: int = 0) -> Any:
    if isinstance(value, int):
        return value
    unit = 10 ** places
    return math.trunc(value * unit) / unit


def _time_unit_floor(value: Any, unit: str, ceil: bool = False) -> Any:
    if isinstance(value, (int, float, Decimal)):
        return math.ceil(value) if ceil else math.floor(value)
    fields = {"SECOND": dict(microsecond=0), "MINUTE": dict(second=0, microsecond=0),
              "HOUR": dict(minute=0, second=0, microsecond=0), "DAY": dict(hour=0, minute=0, second=0, microsecond=0)}
    if unit in fields:
        floored = value.replace(**fields[unit])
        if ceil and floored != value:
            step = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}[unit]
            floored += _dt.timedelta(seconds=step)
        return floored
    if unit == "MONTH":
        return value.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "YEAR":
        return value.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    raise ValueError(f"FLOOR/CEIL to {unit} is not supported; use SECOND, MINUTE, HOUR, DAY, MONTH or YEAR")


def _floor(value: Any, unit: str | None = None) -> Any:
    if unit is None:
        return value if isinstance(value, int) else (
            value.to_integral_value(rounding="ROUND_FLOOR") if isinstance(value, Decimal) else float(math.floor(value)))
    return _time_unit_floor(value, unit)


def _ceil(value: Any, unit: str | None = None) -> Any:
    if unit is None:
        return value if isinstance(value, int) else (
            value.to_integral_value(rounding="ROUND_CEILING") if isinstance(value, Decimal) else float(math.ceil(value)))
    return _time_unit_floor(value, unit, ceil=True)


def _substring(s: str, start: int, length: int | None = None) -> str:
    begin = start - 1 if start > 0 else (len(s) + start if start < 0 else 0)
    begin = max(begin, 0)
    if length is None:
        return s[begin:]
    if length < 0:
        raise ValueError("SUBSTRING length must not be negative")
    return s[begin:begin + length]


def _trim(s: str, chars: str = " ") -> str:
    return s.strip(chars)


def _like(s: str, pattern: str, escape: str | None = None) -> bool:
    regex = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape and ch == escape and i + 1 < len(pattern):
            regex.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        regex.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(regex), s, re.DOTALL) is not None


def _similar(s: str, pattern: str) -> bool:
    return re.fullmatch(pattern.replace("%", ".*").replace("_", "."), s, re.DOTALL) is not None


def _position(needle: str, haystack: str) -> int:
    return haystack.find(needle) + 1


def _locate(needle: str, haystack: str, start: int = 1) -> int:
    return haystack.find(needle, start - 1) + 1


def _lpad(s: str, length: int, pad: str) -> str | None:
    if length < 0:
        return None
    if len(s) >= length:
        return s[:length]
    if not pad:
        return None
    fill = (pad * length)[: length - len(s)]
    return fill + s


def _rpad(s: str, length: int, pad: str) -> str | None:
    if length < 0:
        return None
    if len(s) >= length:
        return s[:length]
    if not pad:
        return None
    return s + (pad * length)[: length - len(s)]


def _java_regex(pattern: str) -> str:
    return pattern


def _regexp_replace(s: str, regex: str, replacement: str) -> str:
    return re.sub(_java_regex(regex), re.sub(r"\$(\d+)", r"\\\1", replacement), s)


def _regexp_extract(s: str, regex: str, index: int = 1) -> str | None:
    match = re.search(_java_regex(regex), s)
    if match is None or index > (match.re.groups or 0):
        return None
    return match.group(index)


def _split_index(s: str, separator: str, index: int) -> str | None:
    parts = s.split(separator)
    return parts[index] if 0 <= index < len(parts) else None


def _initcap(s: str) -> str:
    return re.sub(r"[A-Za-z0-9]+", lambda m: m.group(0)[0].upper() + m.group(0)[1:].lower(), s)


def _concat(*parts: Any) -> str | None:
    if any(p is None for p in parts):
        return None
    return "".join(p if isinstance(p, str) else sql_string(p) for p in parts)


def _concat_ws(separator: Any, *parts: Any) -> str | None:
    if separator is None:
        return None
    return separator.join(p if isinstance(p, str) else sql_string(p) for p in parts if p is not None)


def _coalesce(*values: Any) -> Any:
    for v in values:
        if v is not None:
            return v
    return None


def _nullif(a: Any, b: Any) -> Any:
    return None if a is not None and a == b else a


def _greatest(*values: Any) -> Any:
    return None if any(v is None for v in values) else max(values)


def _least(*values: Any) -> Any:
    return None if any(v is None for v in values) else min(values)


_JAVA_DATE_FORMAT = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
                     ("ss", "%S"), ("SSS", "%f")]


def _java_format(fmt: str) -> str:
    out = fmt
    for java, py in _JAVA_DATE_FORMAT:
        out = out.replace(java, py)
    return out


def _date_format(value: Any, fmt: str) -> str:
    if isinstance(value, str):
        value = _dt.datetime.fromisoformat(value.replace("T", " "))
    text = value.strftime(_java_format(fmt))
    if "SSS" in fmt:
        text = text.replace(f"{value.microsecond:06d}", f"{value.microsecond // 1000:03d}")
    return text


def _to_timestamp(s: str, fmt: str | None = None) -> _dt.datetime | None:
    try:
        if fmt is None:
            return _dt.datetime.fromisoformat(s.replace("T", " "))
        return _dt.datetime.strptime(s, _java_format(fmt))
    except ValueError:
        return None


def _to_date(s: str, fmt: str | None = None) -> _dt.date | None:
    stamp = _to_timestamp(s, fmt)
    return None if stamp is None else stamp.date()


def _to_timestamp_ltz(number: Any, precision: int = 3) -> _dt.datetime:
    millis = int(number) if precision == 3 else int(number) * 1000
    return from_epoch_millis(millis).replace(tzinfo=_dt.timezone.utc)


def _unix_timestamp(s: str | None = None, fmt: str | None = None) -> int:
    if s is None:
        return int(_dt.datetime.now(_dt.timezone.utc).timestamp())
    stamp = _to_timestamp(s, fmt or "yyyy-MM-dd HH:mm:ss")
    return epoch_millis(stamp) // 1000 if stamp is not None else None  # type: ignore[return-value]


def _from_unixtime(seconds: int, fmt: str = "yyyy-MM-dd HH:mm:ss") -> str:
    return from_epoch_millis(int(seconds) * 1000).strftime(_java_format(fmt))


def _extract(unit: str, value: Any) -> int:
    unit = unit.upper()
    if unit == "QUARTER":
        return (value.month - 1) // 3 + 1
    if unit == "WEEK":
        return value.isocalendar()[1]
    if unit == "DOY":
        return value.timetuple().tm_yday
    if unit == "DOW":
        return value.isoweekday() % 7 + 1
    if unit == "MILLISECOND":
        return value.second * 1000 + value.microsecond // 1000
    if unit == "EPOCH":
        return epoch_millis(value) // 1000
    return getattr(value, unit.lower())


def _json_path(document: Any, path: str) -> tuple[bool, Any]:
    """Follow a JSON path of the lax mode (`$.a.b[0]`); (found, value)."""
    if not path.startswith("$"):
        raise ValueError(f"a JSON path starts with '$', got {path!r}")
    current = document
    for name, index in re.findall(r"\.([A-Za-z_][\w]*)|\[(\d+)\]", re.sub(r"^\$\s*(lax|strict)?\s*", "$", path)[1:]):
        if name:
            if not isinstance(current, dict) or name not in current:
                return False, None
            current = current[name]
        else:
            if not isinstance(current, list) or int(index) >= len(current):
                return False, None
            current = current[int(index)]
    return True, current


def _parse_json(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return _INVALID


_INVALID = object()


def _json_value(text: str, path: str) -> str | None:
    document = _parse_json(text)
    if document is _INVALID:
        return None
    found, value = _json_path(document, path)
    if not found or isinstance(value, (dict, list)) or value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _json_exists(text: str, path: str) -> bool:
    document = _parse_json(text)
    return document is not _INVALID and _json_path(document, path)[0]


def _json_query(text: str, path: str) -> str | None:
    document = _parse_json(text)
    if document is _INVALID:
        return None
    found, value = _json_path(document, path)
    if not found or not isinstance(value, (dict, list)):
        return None
    return json.dumps(value, separators=(",", ":"))


def _is_json(text: str) -> bool:
    return _parse_json(text) is not _INVALID


def _hash(algorithm: str) -> Callable[[Any], str]:
    def run(value: Any) -> str:
        data = value.encode() if isinstance(value, str) else bytes(value)
        return hashlib.new(algorithm, data).hexdigest()
    return run


def _current_timestamp() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=_dt.datetime.now().microsecond // 1000 * 1000)


def _register_all() -> None:
    S, B, I, BI, D = DataTypes.STRING(), DataTypes.BOOLEAN(), DataTypes.INT(), DataTypes.BIGINT(), DataTypes.DOUBLE()
    _register("plus", _arith("+"), _plus)
    _register("minus", _arith("-"), _minus)
    _register("times", _arith("*"), lambda a, b: a * b)
    _register("divide", _arith("/"), _divide)
    _register("mod", _arith("%"), _mod)
    _register("minus_prefix", _first, lambda a: -a)
    _register("plus_prefix", _first, lambda a: a)
    for name, symbol, op in (("equals", "=", lambda a, b: a == b), ("not_equals", "<>", lambda a, b: a != b),
                             ("less_than", "<", lambda a, b: a < b), ("less_than_or_equal", "<=", lambda a, b: a <= b),
                             ("greater_than", ">", lambda a, b: a > b),
                             ("greater_than_or_equal", ">=", lambda a, b: a >= b)):
        _register(name, _comparison(symbol), op)
    _register("and", _boolean_op("AND"), None, strict=False)
    _register("or", _boolean_op("OR"), None, strict=False)
    _register("not", _boolean_op("NOT"), lambda a: not a)
    for name in ("is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false"):
        _register(name, _always_boolean, None, strict=False)
    _register("between", lambda ts: DataTypes.BOOLEAN(_nullable(ts)), lambda v, lo, hi: lo <= v <= hi)
    _register("not_between", lambda ts: DataTypes.BOOLEAN(_nullable(ts)), lambda v, lo, hi: not lo <= v <= hi)
    _register("in", lambda ts: DataTypes.BOOLEAN(_nullable(ts)), None, strict=False)
    _register("like", _strings("like", B), _like)
    _register("similar", _strings("similar", B), _similar)
    _register("if", lambda ts: _common(ts[1:]).nullable_(), None, strict=False)
    _register("case", lambda ts: _common(ts[1:-1:2] + [ts[-1]]), None, strict=False)
    _register("coalesce ifnull", lambda ts: _with_null(_common(ts), [ts[-1]]), _coalesce, strict=False)
    _register("nullif", lambda ts: _with_null(ts[0], [DataTypes.NULL()]), _nullif, strict=False)
    _register("greatest", _common, _greatest, strict=False)
    _register("least", _common, _least, strict=False)
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
    _register("round", _first, _round)
    _register("truncate", _first, _truncate)
    _register("floor", _first, _floor)
    _register("ceil ceiling", _first, _ceil)
    _register("pi", _fixed(DataTypes.DOUBLE(False)), lambda: math.pi)
    _register("e", _fixed(DataTypes.DOUBLE(False)), lambda: math.e)
    _register("rand", _fixed(DataTypes.DOUBLE(False)), lambda seed=None: random.random(), deterministic=False)
    # strings
    _register("upper", _same_string("upper"), str.upper)
    _register("lower", _same_string("lower"), str.lower)
    _register("initcap", _same_string("initcap"), _initcap)
    _register("char_length character_length", _strings("char_length", I), len)
    _register("substring substr", _strings("substring", S), _substring)
    _register("trim btrim", _strings("trim", S), _trim)
    _register("ltrim", _strings("ltrim", S), lambda s, c=" ": s.lstrip(c))
    _register("rtrim", _strings("rtrim", S), lambda s, c=" ": s.rstrip(c))
    _register("replace", _strings("replace", S), lambda s, a, b: s.replace(a, b))
    _register("position", _fixed(I), _position)
    _register("locate", _fixed(I), _locate)
    _register("lpad", _strings("lpad", S), _lpad)
    _register("rpad", _strings("rpad", S), _rpad)
    _register("repeat", _strings("repeat", S), lambda s, n: s * max(n, 0))
    _register("reverse", _strings("reverse", S), lambda s: s[::-1])
    _register("left", _strings("left", S), lambda s, n: s[:max(n, 0)])
    _register("right", _strings("right", S), lambda s, n: s[len(s) - n:] if n > 0 else "")
    _register("split_index", _strings("split_index", S), _split_index)
    _register("regexp_replace", _strings("regexp_replace", S), _regexp_replace)
    _register("regexp_extract", _strings("regexp_extract", S), _regexp_extract)
    _register("regexp", _strings("regexp", B), lambda s, r: re.search(r, s) is not None)
    _register("ascii", _strings("ascii", I), lambda s: ord(s[0]) if s else 0)
    _register("chr", _fixed(S), lambda n: chr(n % 256))
    _register("concat", _concat_type, _concat, strict=False)
    _register("concat_ws", _fixed(S), _concat_ws, strict=False)
    _register("md5", _strings("md5", DataTypes.CHAR(32)), _hash("md5"))
    _register("sha256", _strings("sha256", DataTypes.CHAR(64)), _hash("sha256"))
    _register("sha1", _strings("sha1", DataTypes.CHAR(40)), _hash("sha1"))
    _register("to_base64", _fixed(S), lambda s: base64.b64encode(s.encode() if isinstance(s, str) else s).decode())
    _register("from_base64", _fixed(S), lambda s: base64.b64decode(s).decode())
    _register("uuid", _fixed(DataTypes.STRING(False)), lambda: str(_uuid.uuid4()), deterministic=False)
    # time
    ts3 = DataTypes.TIMESTAMP_LTZ(3, False)
    _register("current_timestamp now current_row_timestamp", lambda ts: ts3, _current_timestamp, deterministic=False)
    _register("localtimestamp", lambda ts: DataTypes.TIMESTAMP(3, False),
              lambda: _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None), deterministic=False)
    _register("current_date", lambda ts: DataTypes.DATE(False), lambda: _dt.datetime.now(_dt.timezone.utc).date(),
              deterministic=False)
    _register("current_time localtime", lambda ts: DataTypes.TIME(0, False),
              lambda: _dt.datetime.now(_dt.timezone.utc).time().replace(microsecond=0), deterministic=False)
    _register("date_format", _fixed(S), _date_format)
    _register("to_timestamp", lambda ts: DataTypes.TIMESTAMP(3), _to_timestamp)
    _register("to_date", lambda ts: DataTypes.DATE(), _to_date)
    _register("to_timestamp_ltz", lambda ts: DataTypes.TIMESTAMP_LTZ(3, _nullable(ts)), _to_timestamp_ltz)
    _register("unix_timestamp", _fixed(BI), _unix_timestamp)
    _register("from_unixtime", _fixed(S), _from_unixtime)
    _register("extract", lambda ts: DataTypes.BIGINT(ts[1].nullable), _extract)
    for unit in ("year", "quarter", "month", "week", "hour", "minute", "second"):
        _register(unit, lambda ts: DataTypes.BIGINT(_nullable(ts)), (lambda u: lambda v: _extract(u, v))(unit))
    _register("dayofmonth", lambda ts: DataTypes.BIGINT(_nullable(ts)), lambda v: v.day)
    _register("dayofyear", lambda ts: DataTypes.BIGINT(_nullable(ts)), lambda v: v.timetuple().tm_yday)
    _register("dayofweek", lambda ts: DataTypes.BIGINT(_nullable(ts)), lambda v: v.isoweekday() % 7 + 1)
    # json
    _register("json_value", lambda ts: DataTypes.STRING(), _json_value)
    _register("json_exists", lambda ts: DataTypes.BOOLEAN(), _json_exists)
    _register("json_query", lambda ts: DataTypes.STRING(), _json_query)
    _register("is_json", lambda ts: DataTypes.BOOLEAN(False), _is_json)
    # constructors
    _register("row", lambda ts: DataTypes.ROW([DataTypes.FIELD(f"EXPR${i}", t) for i, t in enumerate(ts)], False),
              None, strict=False)
    _register("array", lambda ts: DataTypes.ARRAY(_common(ts), False), lambda *vs: list(vs), strict=False)
    _register("map", lambda ts: DataTypes.MAP(_common(ts[0::2]), _common(ts[1::2]), False),
              lambda *vs: dict(zip(vs[0::2], vs[1::2])), strict=False)
    _register("cardinality", lambda ts: DataTypes.INT(_nullable(ts)), len)
    _register("element_at item", lambda ts: (ts[0].element_type or DataTypes.NULL()), None, strict=False)


_register_all()


def cast_function(target: DataType, source: DataType, try_: bool) -> Callable[[Any], Any]:
    """CAST's implementation for one (source, target) pair."""
    return lambda value: cast_value(value, target, source, try_)
