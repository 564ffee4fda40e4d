"""The one wire format: cloudpickle for code (user functions, job graphs), pickle protocol 5 for records.

Within a process records are never serialized; only buffers crossing a process boundary are.
"""

from __future__ import annotations

import copyreg
import io
import pickle
from collections.abc import Callable
from types import CodeType
from typing import Any

from fluvial.common.instance_layout import is_plain_instance, set_attributes

CodeReducer = Callable[[CodeType], tuple[Any, tuple[Any, ...]]]

_code_pickler: Any = None


def _pickler_class() -> Any:
    """cloudpickle's Pickler, except that functions keep the file they were written in: cloudpickle replaces it
    with "<dynamic-code>", and then a user's traceback from a TaskManager process names no file of theirs."""
    global _code_pickler
    if _code_pickler is None:
        from collections import ChainMap

        import cloudpickle
        from cloudpickle import cloudpickle as implementation

        reduce_code: CodeReducer | None = getattr(implementation, "_code_reduce", None)

        class CodePickler(cloudpickle.Pickler):
            if reduce_code is not None:  # a cloudpickle without it keeps its own rule
                dispatch_table = ChainMap(
                    {CodeType: _keeping_filename(reduce_code)}, cloudpickle.Pickler.dispatch_table
                )

            def reducer_override(self, obj: Any) -> Any:
                reduced = super().reducer_override(obj)
                return _reduce_keeping_inline_attributes(obj) if reduced is NotImplemented else reduced

        _code_pickler = CodePickler
    return _code_pickler


def _keeping_filename(reduce_code: CodeReducer) -> CodeReducer:
    """cloudpickle's reduction of a code object, with the file name the code was written in."""

    def code_keeping_filename(code: CodeType) -> tuple[Any, tuple[Any, ...]]:
        constructor, args = reduce_code(code)
        return constructor, tuple(code.co_filename if arg == "<dynamic-code>" else arg for arg in args)

    return code_keeping_filename


def _reduce_keeping_inline_attributes(obj: Any) -> Any:
    """Pickle's default rule for a plain instance (the class's `__new__`, then its attributes), except that the
    copy gets its attributes by setattr (`instance_layout`): in every copy a TaskManager or a restart unpickles,
    a user function's `self.count += 1` then costs what it costs in the user's own process. NotImplemented
    (pickle's usual rules) for anything else."""
    cls = type(obj)
    if not is_plain_instance(cls):
        return NotImplemented
    state = obj.__dict__
    # copyreg.__newobj__ is what pickle writes as its NEWOBJ opcode (typeshed does not list it)
    return (copyreg.__newobj__, (cls,), state or None, None, None, set_attributes)  # type: ignore[attr-defined]


def dumps_code(obj: Any) -> bytes:
    """cloudpickle bytes of `obj` (imported lazily: in-process jobs never pay for it)."""
    buffer = io.BytesIO()
    _pickler_class()(buffer, protocol=5).dump(obj)
    return buffer.getvalue()


def loads_code(data: bytes) -> Any:
    return pickle.loads(data)


def dumps_records(obj: Any) -> bytes:
    """Pickle protocol 5 without a memo: about twice as fast for buffers of small tuples and strings, and smaller
    (records are values: an object met twice arrives as two equal copies, as Flink's serializers hand them). A
    structure that refers to itself needs the memo, and takes plain pickle."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True
    try:
        pickler.dump(obj)
    except ValueError:  # fast mode refuses a cycle
        return pickle.dumps(obj, protocol=5)
    return buffer.getvalue()


def loads_records(data: bytes) -> Any:
    return pickle.loads(data)
