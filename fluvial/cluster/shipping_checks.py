"""Before a job goes to TaskManager processes: every user function must travel there (cloudpickle), and every
file it reads or writes must be one those processes reach. A function that cannot travel, or a `memory://`
location (a file system inside one process), is a clear error at submission — naming the operator or setting,
what failed and the fix — not a pickling traceback from a deployment, nor output lost with a process.
`fluvial.cluster.code_shipping.prepare_for_shipping` runs these checks before it captures the job's classes."""

from __future__ import annotations

from types import FunctionType, ModuleType
from typing import Any

from fluvial.common.errors import ConfigurationError, InvalidJobError
from fluvial.common.wire import dumps_code


def check_locations_reach_task_managers(job_graph: Any) -> None:
    """`memory://` lives in one process: the client's files there are not in a TaskManager, what a TaskManager
    writes there ends with it, and a replacement cannot restore from a dead one's checkpoint there."""
    from fluvial.datastream.connectors.file_systems import scheme

    for what, location in storage_locations(job_graph) + connector_locations(job_graph):
        if scheme(location) == "memory":
            raise ConfigurationError(
                f"{what} '{location}' is in memory://, a file system inside one process, and this job's "
                "TaskManagers are other processes: files there would not be shared between them and this one, and "
                "would be lost with their process. Use a local path or an object store URL (or, for a job on this "
                "machine alone, TaskManagers as threads of this process: local.taskmanager.mode: thread)"
            )


def storage_locations(job_graph: Any) -> list[tuple[str, str]]:
    """(what, path) of the job's checkpoint storage, the savepoint it restores, and its savepoint directory."""
    from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage

    paths = []
    tolerance = job_graph.fault_tolerance
    checkpoints = tolerance.checkpoints if tolerance is not None else None
    if checkpoints is not None and checkpoints.enabled and isinstance(checkpoints.storage, FileSystemCheckpointStorage):
        paths.append(("the checkpoint storage", checkpoints.storage.checkpoint_path))
    if tolerance is not None and tolerance.savepoint_path:
        paths.append(("the savepoint to restore (execution.savepoint.path)", tolerance.savepoint_path))
    configuration = job_graph.configuration
    if configuration is not None and configuration.get("state.savepoints.dir"):
        paths.append(("state.savepoints.dir", configuration.get("state.savepoints.dir")))
    return paths


def connector_locations(job_graph: Any) -> list[tuple[str, str]]:
    """(what, path) of every file the job's sources read and its sinks write (`Source/Sink.locations()`)."""
    from fluvial.datastream.transformations import SinkSpec, SourceSpec

    found = []
    for vertex in job_graph.vertices:
        for node in vertex.nodes:
            spec = node.operator
            if isinstance(spec, (SourceSpec, SinkSpec)):
                found += [(f"the path of operator '{node.name}'", location) for location in spec.function.locations()]
    return found


def check_functions_can_be_shipped(job_graph: Any) -> None:
    for vertex in job_graph.vertices:
        for node in vertex.nodes:
            if node.operator is None:
                continue
            try:
                dumps_code(node.operator)
            except Exception as error:  # noqa: BLE001 - re-raised with the culprit and the fix
                culprit = unpicklable_part(node.operator) or repr(node.operator)[:120]
                raise InvalidJobError(
                    f"operator '{node.name}' cannot be sent to a TaskManager process: {culprit} cannot be pickled "
                    f"({type(error).__name__}: {error}). Create connections, locks, files and clients in the "
                    "function's open(), not in __init__ or a closure (or run in one process: "
                    "local.taskmanager.mode: thread)"
                ) from None  # the message says what pickling said; its frames are cloudpickle's, not the user's


_MAX_DEPTH = 6


def unpicklable_part(value: Any, depth: int = 0) -> str | None:
    """What the user wrote that does not pickle, reachable from `value` — the variable a function captures, the
    attribute of the user's object — described in the user's terms; None when `value` pickles. fluvial's own
    objects (operator descriptions, wrappers such as the one `output_type` adds) are looked through, unnamed."""
    if _pickles(value):
        return None
    if isinstance(value, FunctionType):
        return _function_part(value, depth)
    if depth < _MAX_DEPTH:
        for name, field in _fields(value):
            inner = unpicklable_part(field, depth + 1)
            if inner is None:
                continue
            if inner != _object(field) or _is_fluvials(value) or isinstance(value, (dict, list, tuple, set, frozenset)):
                return inner  # the deeper part names itself; fluvial's wrappers and containers are looked through
            return f"the attribute {_type_name(value)}.{name} ({_type_name(field)})"
    return _object(value)


def _function_part(function: FunctionType, depth: int) -> str:
    code = function.__code__
    where = f"{function.__qualname__} ({code.co_filename}, line {code.co_firstlineno})"
    cells = dict(
        zip(code.co_freevars, (cell.cell_contents for cell in function.__closure__ or () if _has_contents(cell)))
    )
    used_globals = {name: function.__globals__[name] for name in code.co_names if name in function.__globals__}
    for name, captured in (*cells.items(), *used_globals.items()):
        if isinstance(captured, ModuleType):
            continue
        inner = unpicklable_part(captured, depth + 1) if depth < _MAX_DEPTH else None
        if inner is not None:
            detail = "" if inner == _object(captured) else f": {inner}"
            return f"the variable '{name}' ({_type_name(captured)}), which the function {where} uses{detail},"
    return f"the function {where}"


def _pickles(value: Any) -> bool:
    try:
        dumps_code(value)
    except Exception:  # noqa: BLE001 - any failure means it does not travel
        return False
    return True


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - reading it is the test: an empty cell raises
    except ValueError:  # an empty cell: a variable not yet assigned
        return False
    return True


def _fields(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [(repr(key), item) for key, item in value.items()]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [(f"[{index}]", item) for index, item in enumerate(value)]
    fields = getattr(value, "__dict__", None)
    if fields:
        return list(fields.items())
    return [(name, getattr(value, name)) for name in getattr(type(value), "__slots__", ()) if hasattr(value, name)]


def _is_fluvials(value: Any) -> bool:
    return type(value).__module__.split(".", 1)[0] == "fluvial"


def _type_name(value: Any) -> str:
    kind = type(value)
    return (
        kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}.{kind.__qualname__}"
    )


def _object(value: Any) -> str:
    return f"a {_type_name(value)} object"
