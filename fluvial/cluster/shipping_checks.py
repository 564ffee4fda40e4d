"""Before a job goes to TaskManager processes: every user function must travel there (cloudpickle), and every
file it reads or writes must be one those processes reach. A function that cannot travel, or a `memory://`
location (a file system inside one process), is a clear error at submission — naming the operator or setting,
what failed and the fix — not a pickling traceback from a deployment, nor output lost with a process.
`fluvial.cluster.code_shipping.prepare_for_shipping` runs these checks before it captures the job's classes."""

from __future__ import annotations

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
                "machine alone, TaskManagers as threads of this process: local.taskmanager.mode: thread)")


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
