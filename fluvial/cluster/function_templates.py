"""Pristine copies of a job's operator functions, taken at submission before any subtask opens them.

Every parallel subtask, and every restarted attempt, starts from a copy of these — never from an object that
another subtask or an earlier attempt already opened and mutated (which may hold state handles or database
connections that cannot even be copied). This is Flink's "each subtask deserializes its own function". The
first subtask of the first attempt runs the user's own object (or a stand-in that writes back to it:
`runtime.chain._own_object`), so a job in thread mode can read back what it collected (a counting sink, in
the benchmarks).
"""

from __future__ import annotations

import copy
import types
from typing import Any

from fluvial.datastream.transformations import USER_OBJECT_FIELDS


class PickledFunction:
    """A function frozen as pickle bytes: each `thaw()` builds a fresh copy. Kept as bytes (not as a copied
    object) because unpickling a function that holds a large table builds every object of it again, which
    costs more time, memory and cache than the one pickling pass."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def thaw(self) -> Any:
        from fluvial.common.wire import loads_code

        return loads_code(self.data)


def pristine_functions(job_graph: Any) -> dict[int, dict[str, Any]]:
    """Node id -> {field of its operator description (`transformations.USER_OBJECT_FIELDS`) -> the frozen
    object}, for the operators that hold objects of their own."""
    templates = {}
    for vertex in job_graph.vertices:
        for node in vertex.nodes:
            if node.operator is None or node.is_source:
                continue
            frozen = {}
            for field in USER_OBJECT_FIELDS:
                obj = getattr(node.operator, field, None)
                if obj is not None and not isinstance(obj, types.FunctionType):  # plain functions hold no state
                    frozen[field] = _freeze(obj)
            if frozen:
                templates[node.id] = frozen
    return templates


def _freeze(function: Any) -> Any:
    """Cloudpickle bytes (the wire format for code, `wire.dumps_code`): a class defined in the job's script is
    pickled by value, so a TaskManager process, whose `__main__` is not the script, can thaw it too. Else a deep
    copy taken now; else the function itself (it must create its resources in open())."""
    from fluvial.common.wire import dumps_code

    try:
        return PickledFunction(dumps_code(function))
    except Exception:  # noqa: BLE001 - try the next way
        pass
    try:
        return copy.deepcopy(function)
    except Exception:  # noqa: BLE001
        return function
