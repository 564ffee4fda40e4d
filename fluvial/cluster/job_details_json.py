"""JobDetails as JSON and back: what `GET /jobs/:jobid/details` serves and a remote JobClient's
`get_job_details()` reads.

JSON, never a pickle: a client must not run whatever bytes answer at a cluster's address. The JobDetails are
plain dataclasses of strings, numbers, enums (by name), lists and JSON-like dicts, so each field is written as
is and read back by the type its dataclass declares; anything else in the answer is refused with a ValueError.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from functools import cache
from typing import Any

from fluvial.cluster.job_details import JobDetails


def details_to_json(details: JobDetails) -> dict[str, Any]:
    encoded: dict[str, Any] = _encode(details)  # a dataclass encodes as a dict
    return encoded


def details_from_json(data: Any) -> JobDetails:
    """The JobDetails `data` encodes, or ValueError naming the field that does not fit."""
    details: JobDetails = _decode(data, JobDetails, "details")
    return details


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _encode(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [_encode(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _encode(item) for key, item in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # a value of a free-form dict (checkpoint settings) that JSON has no form for


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(data: Any, kind: Any, where: str) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return _plain(data, where)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        (inner,) = [arg for arg in args if arg is not type(None)]
        return _decode(data, inner, where)
    if origin is list:
        _expect(data, list, where)
        return [_decode(item, args[0], f"{where}[{i}]") for i, item in enumerate(data)]
    if origin is dict or kind is dict:
        _expect(data, dict, where)
        value_kind = args[1] if args else Any
        return {key: _decode(item, value_kind, f"{where}.{key}") for key, item in data.items()}
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        _expect(data, str, where)
        try:
            return kind[data]
        except KeyError:
            raise ValueError(f"{where}: {data!r} is not a {kind.__name__}") from None
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        _expect(data, dict, where)
        hints = _hints(kind)
        values = {
            field.name: _decode(data[field.name], hints[field.name], f"{where}.{field.name}")
            for field in dataclasses.fields(kind)
            if field.init and field.name in data
        }
        try:
            return kind(**values)
        except TypeError as error:
            raise ValueError(f"{where}: {error}") from None
    if kind is float:
        _expect(data, (int, float), where)
        return float(data)
    if kind in (str, int, bool):
        _expect(data, kind, where)
        return data
    raise ValueError(f"{where}: no JSON form for {kind!r}")


def _plain(data: Any, where: str) -> Any:
    if data is None or isinstance(data, (str, int, float, bool)):
        return data
    if isinstance(data, list):
        return [_plain(item, where) for item in data]
    if isinstance(data, dict):
        return {str(key): _plain(item, where) for key, item in data.items()}
    raise ValueError(f"{where}: {type(data).__name__} is not JSON")


def _expect(data: Any, kind: type | tuple[type, ...], where: str) -> None:
    if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
        raise ValueError(f"{where}: expected {getattr(kind, '__name__', kind)}, got {type(data).__name__}")
