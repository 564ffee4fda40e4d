"""SQL values in Python: CAST between types, and the text Flink shows for a value.

Two renderings, as Flink has two: `sql_string` is `CAST(x AS STRING)` and the tableau result's cell text
(`TRUE`, `2024-01-01 00:00:05.000`, doubles as Java prints them); `row_string` is `Row.toString()` of the print
connector and of `to_data_stream().print()` (`true`, `2024-01-01T00:00:05`, `null`).
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from fluvial.common.print_format import java_double_string, java_float_string
from fluvial.common.row import Row
from fluvial.table.types import DataType

__all__ = ["cast_value", "sql_string", "row_string", "epoch_millis", "from_epoch_millis", "float32"]

_EPOCH = _dt.datetime(1970, 1, 1)


def epoch_millis(value: Any) -> int:
    """A TIMESTAMP (naive, read as UTC) or TIMESTAMP_LTZ (aware) value as epoch milliseconds: event time."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC).replace(tzinfo=None)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if hasattr(value, "to_epoch_milli"):
        return value.to_epoch_milli()
    return int(value)


def from_epoch_millis(millis: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=millis)


def _fraction(value: _dt.datetime | _dt.time, precision: int) -> str:
    if precision <= 0:
        return ""
    digits = f"{value.microsecond:06d}" + "000"
    return "." + digits[:precision]


def sql_string(value: Any, data_type: DataType | None = None) -> str:
    """`CAST(value AS STRING)` by Flink's rules."""
    name = data_type.name if data_type is not None else None
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return java_float_string(value) if name == "FLOAT" else java_double_string(value)
    if isinstance(value, Decimal):
        if data_type is not None and data_type.scale is not None:
            value = value.quantize(Decimal(1).scaleb(-data_type.scale), rounding=ROUND_HALF_UP)
        return format(value, "f")
    if isinstance(value, _dt.datetime):
        value = _local(value)
        precision = data_type.precision if data_type is not None and data_type.precision is not None else 6
        return f"{value.year:04d}-{value:%m-%d %H:%M:%S}{_fraction(value, precision)}"
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, _dt.time):
        precision = data_type.precision if data_type is not None and data_type.precision is not None else 0
        return f"{value:%H:%M:%S}{_fraction(value, precision)}"
    if isinstance(value, (bytes, bytearray)):
        return "x'" + bytes(value).hex() + "'"
    if isinstance(value, Row):
        types = data_type.field_types() if data_type is not None and data_type.fields else [None] * len(value)
        return "(" + ", ".join(_inner(v, t) for v, t in zip(value, types)) + ")"
    if isinstance(value, (list, tuple)):
        element = data_type.element_type if data_type is not None else None
        return "[" + ", ".join(_inner(v, element) for v in value) + "]"
    if isinstance(value, dict):
        key = data_type.key_type if data_type is not None else None
        element = data_type.element_type if data_type is not None else None
        return "{" + ", ".join(f"{_inner(k, key)}={_inner(v, element)}" for k, v in value.items()) + "}"
    return str(value)


def _inner(value: Any, data_type: DataType | None) -> str:
    return "NULL" if value is None else sql_string(value, data_type)


def _local(value: _dt.datetime) -> _dt.datetime:
    """An aware (TIMESTAMP_LTZ) value in the session's time zone (UTC), naive for printing."""
    if value.tzinfo is None:
        return value
    return value.astimezone(_dt.UTC).replace(tzinfo=None)


def row_string(value: Any, data_type: DataType | None = None) -> str:
    """A field as Java's `Row.toString()` shows the external value (LocalDateTime, Instant, Boolean...)."""
    if value is None:
        return "null"
    name = data_type.name if data_type is not None else None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_string(value) if name == "FLOAT" else java_double_string(value)
    if isinstance(value, _dt.datetime):
        if name == "TIMESTAMP_LTZ" or value.tzinfo is not None:
            return _java_instant(_local(value))
        return _java_local_date_time(value)
    if isinstance(value, _dt.time):
        return _java_local_time(value)
    if isinstance(value, Decimal):
        return sql_string(value, data_type)
    if isinstance(value, Row):
        types = data_type.field_types() if data_type is not None and data_type.fields else [None] * len(value)
        return (
            value.get_row_kind().short_string() + "[" + ", ".join(row_string(v, t) for v, t in zip(value, types)) + "]"
        )
    if isinstance(value, (list, tuple)):
        element = data_type.element_type if data_type is not None else None
        return "[" + ", ".join(row_string(v, element) for v in value) + "]"
    if isinstance(value, dict):
        key = data_type.key_type if data_type is not None else None
        element = data_type.element_type if data_type is not None else None
        return "{" + ", ".join(f"{row_string(k, key)}={row_string(v, element)}" for k, v in value.items()) + "}"
    if isinstance(value, (bytes, bytearray)):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
    return str(value)


def _java_local_time(value: _dt.time) -> str:
    text = f"{value:%H:%M}"
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}" if value.microsecond % 1000 == 0 else f".{value.microsecond:06d}"
    return text


def _java_instant(value: _dt.datetime) -> str:
    """java.time.Instant.toString: seconds always, the fraction in groups of three digits."""
    text = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}"
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}" if value.microsecond % 1000 == 0 else f".{value.microsecond:06d}"
    return text + "Z"


def _java_local_date_time(value: _dt.datetime) -> str:
    return f"{value.year:04d}-{value:%m-%d}T{_java_local_time(value.time())}"


# -- CAST ---------------------------------------------------------------------------------------------------------


class CastError(ValueError):
    """A value that CAST cannot convert (a string that is no number): the job fails, as Flink's does."""


def cast_value(value: Any, target: DataType, source: DataType | None = None, try_: bool = False) -> Any:
    """`CAST(value AS target)`; `try_` (TRY_CAST) gives NULL where CAST fails."""
    if value is None:
        return None
    try:
        return _cast(value, target, source)
    except (ValueError, TypeError, InvalidOperation, OverflowError) as error:
        if try_:
            return None
        raise CastError(f"cannot cast {value!r} to {target.summary(False)}: {error}") from None


def _cast(value: Any, target: DataType, source: DataType | None) -> Any:
    name = target.name
    if name in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        if isinstance(value, str):
            return int(value.strip())
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float):
            if math.isnan(value):
                return 0
            return int(value)
        if isinstance(value, Decimal):
            return int(value)
        if isinstance(value, _dt.datetime):
            return epoch_millis(value) // 1000
        return int(value)
    if name in ("FLOAT", "DOUBLE"):
        number = float(value.strip()) if isinstance(value, str) else float(value)
        return float32(number) if name == "FLOAT" else number
    if name == "DECIMAL":
        number = (
            Decimal(value.strip())
            if isinstance(value, str)
            else Decimal(str(value))
            if isinstance(value, float)
            else Decimal(value)
        )
        return number.quantize(Decimal(1).scaleb(-(target.scale or 0)), rounding=ROUND_HALF_UP)
    if name in ("VARCHAR", "CHAR"):
        text = value if isinstance(value, str) else sql_string(value, source)
        if name == "CHAR" and target.precision:
            return text[: target.precision].ljust(target.precision)
        if target.precision and len(text) > target.precision:
            return text[: target.precision]
        return text
    if name == "BOOLEAN":
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("true", "t", "yes", "y", "1"):
                return True
            if lowered in ("false", "f", "no", "n", "0"):
                return False
            raise ValueError("not a boolean")
        return bool(value)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if isinstance(value, str):
            result = _dt.datetime.fromisoformat(value.strip().replace("T", " "))
        elif isinstance(value, _dt.datetime):
            result = value
        elif isinstance(value, _dt.date):
            result = _dt.datetime(value.year, value.month, value.day)
        elif hasattr(value, "to_epoch_milli"):
            result = from_epoch_millis(value.to_epoch_milli())
        elif isinstance(value, (int, float, Decimal)):
            result = from_epoch_millis(int(Decimal(value) * 1000))
        else:
            raise TypeError(f"{type(value).__name__} is no timestamp")
        result = _local(result)
        return _truncate(result, target.precision)
    if name == "DATE":
        if isinstance(value, str):
            return _dt.date.fromisoformat(value.strip())
        if isinstance(value, _dt.datetime):
            return _local(value).date()
        return value
    if name == "TIME":
        if isinstance(value, str):
            return _dt.time.fromisoformat(value.strip())
        if isinstance(value, _dt.datetime):
            return value.time()
        return value
    if name in ("BINARY", "VARBINARY"):
        return value.encode() if isinstance(value, str) else bytes(value)
    return value


def float32(value: float) -> float:
    """A FLOAT value: the double nearest to the 32-bit float nearest to `value` (Java's float)."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _truncate(value: _dt.datetime, precision: int | None) -> _dt.datetime:
    if precision is None or precision >= 6:
        return value
    unit = 10 ** (6 - precision)
    return value.replace(microsecond=value.microsecond // unit * unit)
