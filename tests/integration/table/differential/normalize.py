"""Python values of both engines as comparable JSON values (shared by the recorder and the test)."""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from typing import Any


def normalize(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return float(f"{value:.10g}")
    if isinstance(value, Decimal):
        return f"D{value}"
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC).replace(tzinfo=None)
        return f"T{value.isoformat()}"
    if isinstance(value, (_dt.date, _dt.time)):
        return f"T{value.isoformat()}"
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {str(normalize(k)): normalize(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return "B" + bytes(value).hex()
    return repr(value)


def normalize_row(values: list[Any]) -> list[Any]:
    return [normalize(v) for v in values]
