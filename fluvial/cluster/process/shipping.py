"""Before a job goes to TaskManager processes: every user function must travel there (cloudpickle). One that
cannot is a clear error at submission — naming the operator, the object that failed and the fix — not a
pickling traceback from deep in a deployment."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.wire import dumps_code


def prepare_for_shipping(job_graph: Any, modules: Iterable[ModuleType] = ()) -> None:
    """Before a job goes to TaskManagers in other processes: check that its functions travel, and give it the
    classes of the job's script (and of `modules`, for a cluster that cannot import them), which the
    TaskManagers install before the job's first record (`main_classes`)."""
    from fluvial.cluster.process.main_classes import capture_main_classes

    check_functions_can_be_shipped(job_graph)
    job_graph.main_classes = capture_main_classes(modules)


def check_functions_can_be_shipped(job_graph: Any) -> None:
    for vertex in job_graph.vertices:
        for node in vertex.nodes:
            if node.operator is None:
                continue
            try:
                dumps_code(node.operator)
            except Exception as error:  # noqa: BLE001 - re-raised with the culprit and the fix
                culprit = _unpicklable_part(node.operator)
                raise InvalidJobError(
                    f"operator '{node.name}' cannot be sent to a TaskManager process: {culprit} cannot be pickled "
                    f"({type(error).__name__}: {error}). Create connections, locks, files and clients in the "
                    "function's open(), not in __init__ or a closure (or run in one process: "
                    "local.taskmanager.mode: thread)"
                ) from error


def _unpicklable_part(spec: Any, depth: int = 0) -> str:
    """The innermost attribute, reachable from the operator's description, that does not pickle."""
    fields = getattr(spec, "__dict__", None) or {name: getattr(spec, name, None)
                                                 for name in getattr(spec, "__slots__", ())}
    if depth < 4:
        for name, value in fields.items():
            try:
                dumps_code(value)
            except Exception:  # noqa: BLE001
                inner = _unpicklable_part(value, depth + 1)
                return inner if inner != repr(value)[:120] else f"{type(spec).__name__}.{name} = {inner}"
    return repr(spec)[:120]
