"""Key selectors that only index their record run as `operator.itemgetter`.

PyFlink programs key nearly every stream by a field: `key_by(lambda pair: pair[0])`, or a KeySelector whose
`get_key` returns `value[1]`. The hash partitioner and every keyed operator call the selector once per record,
and a Python call costs more than the lookup it makes. A selector whose whole body is "return the argument
indexed by a constant" is therefore replaced by `itemgetter(constant)`: the same `value[constant]`, made in C.
The answer, and the error a record that cannot be indexed raises (a TypeError, an IndexError, a KeyError from
the same `__getitem__`), are the same; only the selector's own frame is missing from a traceback, and failures
are labelled with the key_by as written (`key_by_name`). Anything else — defaults, closures, a second
statement, a generator — is called as written.
"""

from __future__ import annotations

import dis
import inspect
import operator
import types
from collections.abc import Callable
from typing import Any

_SKIPPED = frozenset({"RESUME", "NOP", "CACHE", "COPY_FREE_VARS", "MAKE_CELL"})
# *args, **kwargs, generators and coroutines are never a lookup (compiler flags such as `from __future__
# import annotations` may be set on any function)
_NOT_A_LOOKUP = (
    inspect.CO_VARARGS
    | inspect.CO_VARKEYWORDS
    | inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ITERABLE_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
)


def fast_key(selector: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`selector`, or the itemgetter that does exactly what it does (see the module's docstring)."""
    function, argument = selector, 0
    if isinstance(selector, types.MethodType):  # a KeySelector's bound get_key(self, value)
        function, argument = selector.__func__, 1
    if type(function) is not types.FunctionType:
        return selector
    index = _indexed_by_constant(function, argument)
    return selector if index is None else operator.itemgetter(index[0])


def _indexed_by_constant(function: types.FunctionType, argument: int) -> tuple[Any] | None:
    """(constant,) when `function`'s body is `return <argument>[constant]`, else None."""
    code = function.__code__
    if (
        code.co_argcount != argument + 1
        or code.co_kwonlyargcount
        or code.co_flags & _NOT_A_LOOKUP
        or function.__defaults__
        or function.__closure__
    ):
        return None
    body = [instruction for instruction in dis.get_instructions(code) if instruction.opname not in _SKIPPED]
    if len(body) != 4:
        return None
    load, constant, subscript, returned = body
    if (
        load.opname != "LOAD_FAST"
        or load.arg != argument
        or constant.opname != "LOAD_CONST"
        or subscript.opname != "BINARY_SUBSCR"
        or returned.opname != "RETURN_VALUE"
    ):
        return None
    return (constant.argval,)
