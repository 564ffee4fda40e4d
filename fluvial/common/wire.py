"""The one wire format: cloudpickle for code (user functions, job graphs), pickle protocol 5 for records.

Within a process records are never serialized; only buffers crossing a process boundary are.
"""

from __future__ import annotations

import pickle
from typing import Any


def dumps_code(obj: Any) -> bytes:
    import cloudpickle  # imported lazily: in-process jobs never pay for it

    return cloudpickle.dumps(obj, protocol=5)


def loads_code(data: bytes) -> Any:
    return pickle.loads(data)


def dumps_records(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=5)


def loads_records(data: bytes) -> Any:
    return pickle.loads(data)
