"""Pristine copies of a job's operator functions, taken at submission before any subtask opens them.

Every parallel subtask, and every restarted attempt, starts from a copy of these — never from an object that
another subtask or an earlier attempt already opened and mutated (which may hold state handles or database
connections that cannot even be copied). This is Flink's "each subtask deserializes its own function". The
first subtask of the first attempt runs the user's own object, so a job in thread mode can read back what it
collected (a counting sink, in the benchmarks).
"""

from __future__ import annotations

import copy
import pickle
import types
from typing import Any


def pristine_functions(job_graph: Any) -> dict[int, Any]:
    templates = {}
    for vertex in job_graph.vertices:
        for node in vertex.nodes:
            function = node.operator.function if node.operator is not None else None
            if function is None or node.is_source or isinstance(function, types.FunctionType):
                continue  # plain functions and lambdas hold no state of their own
            templates[node.id] = _copy(function)
    return templates


def _copy(function: Any) -> Any:
    """Pickling runs in C (a function holding a large table copies in milliseconds, where deepcopy walks it in
    Python); objects pickle cannot take fall back to deepcopy, or stay shared."""
    try:
        return pickle.loads(pickle.dumps(function, protocol=5))
    except Exception:  # noqa: BLE001
        try:
            return copy.deepcopy(function)
        except Exception:  # noqa: BLE001 - such a function is shared (it must create its resources in open())
            return function
