"""The text `DataStream.print()` writes, as PyFlink writes it.

PyFlink turns an untyped record (no output type, or `Types.PICKLED_BYTE_ARRAY()`) into `str(record)` before
printing, and prints a typed record with the JVM's `toString()` of the Java value that type maps to. So:

- untyped: `str(value)`, e.g. `('a', 1)` for a Python tuple, `<Row(1, 'a')>` for an untyped Row;
- `Types.ROW(...)`: Flink's Row, `+I[a, 1]`: the RowKind's short string, fields joined by `", "`;
- `Types.TUPLE(...)`: Flink's Tuple, `(a,1)`: fields joined by `","`, no space;
- inside a typed value, `None` is `null`, booleans are `true`/`false`, doubles and floats follow Java's
  `Double.toString`/`Float.toString` (`1.0E10`, `NaN`, `Infinity`), lists and arrays are `[a, b]`, maps
  `{k=v, k2=v2}`, and nested rows and tuples are formatted by the same rules.

A type is advisory: a value that does not fit its type (a string typed as a row) is printed with `str()`
rather than failing the job.

`print_prefix` is Flink's PrintSinkOutputWriter prefix: `"N> "` (N = subtask index + 1) only when the
printing operator runs with parallelism above 1, `"id> "` or `"id:N> "` with a sink identifier.
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from fluvial.common.print_prefix import print_prefix  # noqa: F401 - part of this module's API
from fluvial.common.row import Row, RowKind
from fluvial.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)

__all__ = ["format_for_print", "java_double_string", "java_float_string", "print_prefix"]

_ARRAY_TYPES = (PrimitiveArrayTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo)


def format_for_print(value: Any, type_info: TypeInformation | None = None) -> str:
    """One printed line for `value` (without the prefix), by the rules in this module's docstring."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return value if isinstance(value, str) else str(value)
    return _format(value, type_info)


def _format(value: Any, type_info: TypeInformation | None) -> str:
    """A value at any depth inside a typed record, as Java's `String.valueOf` would show it."""
    if value is None:
        return "null"
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return str(value)
    for type_class, formatter in _FORMATTERS:
        if isinstance(type_info, type_class):
            text = formatter(value, type_info)
            return str(value) if text is None else text
    return str(value)


# --- rows and tuples -------------------------------------------------------------------------------------


def _row_values(value: Any, names: list[str]) -> tuple[RowKind, list[Any]] | None:
    if isinstance(value, Row):
        fields = getattr(value, "_fields", None)
        if fields is not None and all(name in fields for name in names):
            return value.get_row_kind(), [value[name] for name in names]
        return value.get_row_kind(), list(value)
    if isinstance(value, Mapping):
        return RowKind.INSERT, [value.get(name) for name in names]
    if isinstance(value, (tuple, list)):
        return RowKind.INSERT, list(value)
    if hasattr(value, "__dict__"):
        return RowKind.INSERT, [getattr(value, name, None) for name in names]
    return None


def _typed_fields(values: list[Any], types: list[TypeInformation]) -> list[str]:
    # A value with more fields than its type prints the extra ones untyped rather than dropping them.
    padded: list[TypeInformation | None] = list(types) + [None] * (len(values) - len(types))
    return [_format(v, t) for v, t in zip(values, padded)]


def _format_row(value: Any, type_info: RowTypeInfo) -> str | None:
    found = _row_values(value, type_info.get_field_names())
    if found is None:
        return None
    kind, values = found
    return f"{kind.short_string()}[{', '.join(_typed_fields(values, type_info.get_field_types()))}]"


def _format_tuple(value: Any, type_info: TupleTypeInfo) -> str | None:
    if not isinstance(value, (tuple, list, Row)):
        return None
    return "(" + ",".join(_typed_fields(list(value), type_info.get_field_types())) + ")"


# --- collections -----------------------------------------------------------------------------------------


def _elements(value: Any) -> list[Any] | None:
    if isinstance(value, (bytes, bytearray)):
        return [b - 256 if b > 127 else b for b in value]  # Java bytes are signed
    if isinstance(value, (str, Mapping)) or not hasattr(value, "__iter__"):
        return None
    return list(value)


def _format_sequence(value: Any, element_type: TypeInformation) -> str | None:
    elements = _elements(value)
    if elements is None:
        return None
    return "[" + ", ".join(_format(e, element_type) for e in elements) + "]"


def _format_array(value: Any, type_info: PrimitiveArrayTypeInfo) -> str | None:
    # Any of the three array types; they share `element_type`.
    return _format_sequence(value, type_info.element_type)


def _format_list(value: Any, type_info: ListTypeInfo) -> str | None:
    return _format_sequence(value, type_info.element_type)


def _format_map(value: Any, type_info: MapTypeInfo) -> str | None:
    if not isinstance(value, Mapping):
        return None
    key_type, value_type = type_info.key_type_info, type_info.value_type_info
    return "{" + ", ".join(f"{_format(k, key_type)}={_format(v, value_type)}" for k, v in value.items()) + "}"


# --- basic and time types --------------------------------------------------------------------------------


def _format_basic(value: Any, type_info: BasicTypeInfo) -> str | None:
    basic = type_info.basic_type
    if basic is BasicType.BOOLEAN and isinstance(value, bool):
        return "true" if value else "false"
    if basic in (BasicType.DOUBLE, BasicType.FLOAT) and isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            return None
        return java_float_string(number) if basic is BasicType.FLOAT else java_double_string(number)
    if basic is BasicType.INSTANT:
        return _java_instant(value)
    return None


def _format_date(value: Any, _: DateTypeInfo) -> str | None:
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    return None


def _format_time(value: Any, _: TimeTypeInfo) -> str | None:
    # java.sql.Time prints whole seconds only.
    if isinstance(value, (_dt.time, _dt.datetime)):
        return value.strftime("%H:%M:%S")
    return None


def _format_timestamp(value: Any, _: TimestampTypeInfo) -> str | None:
    # java.sql.Timestamp: `yyyy-mm-dd hh:mm:ss.f`, the fraction without trailing zeros but never empty.
    if not isinstance(value, _dt.datetime):
        return None
    fraction = f"{value.microsecond:06d}".rstrip("0") or "0"
    return f"{value.year:04d}-{value:%m-%d %H:%M:%S}.{fraction}"


def _java_instant(value: Any) -> str | None:
    """java.time.Instant: UTC, `T` separator, `Z`, fraction in groups of three digits when non-zero."""
    if isinstance(value, _dt.datetime):
        moment = value.astimezone(_dt.UTC) if value.tzinfo else value
    elif hasattr(value, "to_epoch_milli"):
        moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=value.to_epoch_milli())
    else:
        return None
    micros = moment.microsecond
    if micros == 0:
        fraction = ""
    elif micros % 1000 == 0:
        fraction = f".{micros // 1000:03d}"
    else:
        fraction = f".{micros:06d}"
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}{fraction}Z"


def java_double_string(number: float) -> str:
    """Java's `Double.toString`: plain digits for 1e-3 <= |x| < 1e7, else `d.dddE±n`; `NaN`, `Infinity`."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    text = repr(number)
    if 1e-3 <= abs(number) < 1e7:
        return text  # Python's repr is plain, shortest and has a ".0" in this range, as Java's is
    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    mantissa = "".join(map(str, digits))
    scientific = len(digits) - 1 + int(exponent)
    return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}E{scientific}"


def java_float_string(number: float) -> str:
    """Java's `Float.toString` of `number` rounded to 32 bits: the shortest digits that name that float."""
    try:
        single = struct.unpack("<f", struct.pack("<f", number))[0]
    except OverflowError:
        return "Infinity" if number > 0 else "-Infinity"
    if math.isnan(single) or math.isinf(single) or single == 0:
        return java_double_string(single)
    for precision in range(1, 10):
        candidate = float(f"{single:.{precision}g}")
        if struct.unpack("<f", struct.pack("<f", candidate))[0] == single:
            return java_double_string(candidate)
    return java_double_string(single)


_FORMATTERS: tuple[tuple[type | tuple[type, ...], Callable[[Any, Any], str | None]], ...] = (
    (RowTypeInfo, _format_row),
    (TupleTypeInfo, _format_tuple),
    (BasicTypeInfo, _format_basic),
    (ListTypeInfo, _format_list),
    (_ARRAY_TYPES, _format_array),
    (MapTypeInfo, _format_map),
    (DateTypeInfo, _format_date),
    (TimeTypeInfo, _format_time),
    (TimestampTypeInfo, _format_timestamp),
)
