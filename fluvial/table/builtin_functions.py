"""The Python implementations of Flink's built-in scalar functions (`fluvial.table.builtins` holds their type
rules and registers them). Each takes and returns Python values; a strict function is never called with NULL."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from fluvial.table.values import epoch_millis, from_epoch_millis, sql_string


def plus(a: Any, b: Any) -> Any:
    if isinstance(a, (_dt.date, _dt.datetime)) and isinstance(b, int):
        return a + _dt.timedelta(milliseconds=b)
    if isinstance(b, (_dt.date, _dt.datetime)) and isinstance(a, int):
        return b + _dt.timedelta(milliseconds=a)
    return a + b


def minus(a: Any, b: Any) -> Any:
    if isinstance(a, (_dt.date, _dt.datetime)) and isinstance(b, int):
        return a - _dt.timedelta(milliseconds=b)
    return a - b


def divide(a: Any, b: Any) -> Any:
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


def mod(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return int(math.fmod(a, b))
    return math.fmod(a, b)


def round_to(value: Any, places: int = 0) -> Any:
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


def truncate(value: Any, places: int = 0) -> Any:
    if isinstance(value, int):
        return value
    unit = 10**places
    return math.trunc(value * unit) / unit


def time_unit_floor(value: Any, unit: str, ceil: bool = False) -> Any:
    if isinstance(value, (int, float, Decimal)):
        return math.ceil(value) if ceil else math.floor(value)
    fields = {
        "SECOND": dict(microsecond=0),
        "MINUTE": dict(second=0, microsecond=0),
        "HOUR": dict(minute=0, second=0, microsecond=0),
        "DAY": dict(hour=0, minute=0, second=0, microsecond=0),
    }
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


def floor(value: Any, unit: str | None = None) -> Any:
    if unit is None:
        return (
            value
            if isinstance(value, int)
            else (
                value.to_integral_value(rounding="ROUND_FLOOR")
                if isinstance(value, Decimal)
                else float(math.floor(value))
            )
        )
    return time_unit_floor(value, unit)


def ceil(value: Any, unit: str | None = None) -> Any:
    if unit is None:
        return (
            value
            if isinstance(value, int)
            else (
                value.to_integral_value(rounding="ROUND_CEILING")
                if isinstance(value, Decimal)
                else float(math.ceil(value))
            )
        )
    return time_unit_floor(value, unit, ceil=True)


def substring(s: str, start: int, length: int | None = None) -> str:
    begin = start - 1 if start > 0 else (len(s) + start if start < 0 else 0)
    begin = max(begin, 0)
    if length is None:
        return s[begin:]
    if length < 0:
        raise ValueError("SUBSTRING length must not be negative")
    return s[begin : begin + length]


def trim(s: str, chars: str = " ") -> str:
    return s.strip(chars)


def like(s: str, pattern: str, escape: str | None = None) -> bool:
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


def similar(s: str, pattern: str) -> bool:
    return re.fullmatch(pattern.replace("%", ".*").replace("_", "."), s, re.DOTALL) is not None


def position(needle: str, haystack: str) -> int:
    return haystack.find(needle) + 1


def locate(needle: str, haystack: str, start: int = 1) -> int:
    return haystack.find(needle, start - 1) + 1


def _pad(s: str, length: int, pad: str, left: bool) -> str | None:
    """LPAD/RPAD: `s` cut or filled with `pad` to `length`; NULL for a negative length or an empty pad."""
    if length < 0:
        return None
    if len(s) >= length:
        return s[:length]
    if not pad:
        return None
    fill = (pad * length)[: length - len(s)]
    return fill + s if left else s + fill


def lpad(s: str, length: int, pad: str) -> str | None:
    return _pad(s, length, pad, left=True)


def rpad(s: str, length: int, pad: str) -> str | None:
    return _pad(s, length, pad, left=False)


def java_regex(pattern: str) -> str:
    return pattern


def regexp_replace(s: str, regex: str, replacement: str) -> str:
    return re.sub(java_regex(regex), re.sub(r"\$(\d+)", r"\\\1", replacement), s)


def regexp_extract(s: str, regex: str, index: int = 1) -> str | None:
    match = re.search(java_regex(regex), s)
    if match is None or index > (match.re.groups or 0):
        return None
    return match.group(index)


def split_index(s: str, separator: str, index: int) -> str | None:
    parts = s.split(separator)
    return parts[index] if 0 <= index < len(parts) else None


def initcap(s: str) -> str:
    return re.sub(r"[A-Za-z0-9]+", lambda m: m.group(0)[0].upper() + m.group(0)[1:].lower(), s)


def concat(*parts: Any) -> str | None:
    if any(p is None for p in parts):
        return None
    return "".join(p if isinstance(p, str) else sql_string(p) for p in parts)


def concat_ws(separator: Any, *parts: Any) -> str | None:
    if separator is None:
        return None
    return separator.join(p if isinstance(p, str) else sql_string(p) for p in parts if p is not None)


def coalesce(*values: Any) -> Any:
    for v in values:
        if v is not None:
            return v
    return None


def nullif(a: Any, b: Any) -> Any:
    return None if a is not None and a == b else a


def greatest(*values: Any) -> Any:
    return None if any(v is None for v in values) else max(values)


def least(*values: Any) -> Any:
    return None if any(v is None for v in values) else min(values)


_JAVA_DATE_FORMAT = [
    ("yyyy", "%Y"),
    ("yy", "%y"),
    ("MM", "%m"),
    ("dd", "%d"),
    ("HH", "%H"),
    ("mm", "%M"),
    ("ss", "%S"),
    ("SSS", "%f"),
]


def java_format(fmt: str) -> str:
    out = fmt
    for java, py in _JAVA_DATE_FORMAT:
        out = out.replace(java, py)
    return out


def date_format(value: Any, fmt: str) -> str:
    if isinstance(value, str):
        value = _dt.datetime.fromisoformat(value.replace("T", " "))
    text = value.strftime(java_format(fmt))
    if "SSS" in fmt:
        text = text.replace(f"{value.microsecond:06d}", f"{value.microsecond // 1000:03d}")
    return text


def to_timestamp(s: str, fmt: str | None = None) -> _dt.datetime | None:
    try:
        if fmt is None:
            return _dt.datetime.fromisoformat(s.replace("T", " "))
        return _dt.datetime.strptime(s, java_format(fmt))
    except ValueError:
        return None


def to_date(s: str, fmt: str | None = None) -> _dt.date | None:
    stamp = to_timestamp(s, fmt)
    return None if stamp is None else stamp.date()


def to_timestamp_ltz(number: Any, precision: int = 3) -> _dt.datetime:
    millis = int(number) if precision == 3 else int(number) * 1000
    return from_epoch_millis(millis).replace(tzinfo=_dt.UTC)


def unix_timestamp(s: str | None = None, fmt: str | None = None) -> int:
    if s is None:
        return int(_dt.datetime.now(_dt.UTC).timestamp())
    stamp = to_timestamp(s, fmt or "yyyy-MM-dd HH:mm:ss")
    return epoch_millis(stamp) // 1000 if stamp is not None else None  # type: ignore[return-value]


def from_unixtime(seconds: int, fmt: str = "yyyy-MM-dd HH:mm:ss") -> str:
    return from_epoch_millis(int(seconds) * 1000).strftime(java_format(fmt))


def extract(unit: str, value: Any) -> int:
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


def json_path(document: Any, path: str) -> tuple[bool, Any]:
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


def parse_json(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return _INVALID


_INVALID = object()


def json_value(text: str, path: str) -> str | None:
    document = parse_json(text)
    if document is _INVALID:
        return None
    found, value = json_path(document, path)
    if not found or isinstance(value, (dict, list)) or value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def json_exists(text: str, path: str) -> bool:
    document = parse_json(text)
    return document is not _INVALID and json_path(document, path)[0]


def json_query(text: str, path: str) -> str | None:
    document = parse_json(text)
    if document is _INVALID:
        return None
    found, value = json_path(document, path)
    if not found or not isinstance(value, (dict, list)):
        return None
    return json.dumps(value, separators=(",", ":"))


def is_json(text: str) -> bool:
    return parse_json(text) is not _INVALID


def hash_hex(algorithm: str) -> Callable[[Any], str]:
    def run(value: Any) -> str:
        data = value.encode() if isinstance(value, str) else bytes(value)
        return hashlib.new(algorithm, data).hexdigest()

    return run


def current_timestamp() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=_dt.datetime.now().microsecond // 1000 * 1000)
