"""The JSON documents of the REST API, with Flink's field names, built from plain data (JobDetails, metrics
snapshots). Pure functions: nothing here reaches a running job, so each is tested on data alone.

Beyond Flink, where the dashboard needs it (Flink's clients ignore unknown fields): a vertex lists its chained
`operators` and its `slotSharingGroup`; a plan node too; a subtask carries its watermarks and time gauges.
"""

from __future__ import annotations

from typing import Any

import fluvial
from fluvial.cluster.exception_history import ExceptionEntry
from fluvial.cluster.job_details import JobDetails, SubtaskDetails, VertexDetails
from fluvial.cluster.local_dispatcher import ClusterOverview, JobView, TaskManagerDetails
from fluvial.common.time import MIN_WATERMARK, current_millis
from fluvial.metrics.names import MetricName as M
from fluvial.metrics.snapshot import TaskMetricsSnapshot, vertex_hex_id
from fluvial.runtime.execution_state import ExecutionState

BACKPRESSURE_LOW = 0.10  # Flink's levels of the back-pressured time ratio: ok up to 10 %, low up to 50 %
BACKPRESSURE_HIGH = 0.50


def vertex_by_rest_id(details: JobDetails, rest_id: str) -> VertexDetails | None:
    """The vertex a REST path names: its 32-hex-digit id, or its plain number."""
    for vertex in details.vertices:
        if rest_id in (vertex_hex_id(details.job_id, vertex.id), str(vertex.id)):
            return vertex
    return None


# -- cluster ------------------------------------------------------------------------------------------------------


def overview_json(overview: ClusterOverview) -> dict[str, Any]:
    return {
        "taskmanagers": overview.task_managers,
        "slots-total": overview.slots_total,
        "slots-available": overview.slots_available,
        "jobs-running": overview.jobs_running,
        "jobs-finished": overview.jobs_finished,
        "jobs-cancelled": overview.jobs_cancelled,
        "jobs-failed": overview.jobs_failed,
        "flink-version": f"fluvial-{fluvial.__version__}",
        "flink-commit": "",
        "fluvial-version": fluvial.__version__,
    }


def config_json(refresh_interval_ms: int, history: bool = False) -> dict[str, Any]:
    """The dashboard's settings; `history`: served by the history server (archived jobs, nothing to act on)."""
    return {
        "refresh-interval": refresh_interval_ms,
        "timezone-name": "UTC",
        "timezone-offset": 0,
        "flink-version": f"fluvial-{fluvial.__version__}",
        "flink-revision": "",
        "features": {"web-submit": False, "web-cancel": not history, "web-rescale": False, "web-history": history},
    }


def task_managers_json(managers: list[TaskManagerDetails]) -> dict[str, Any]:
    return {
        "taskmanagers": [
            {
                "id": m.id,
                "path": m.path,
                "dataPort": m.data_port,
                "jmxPort": -1,
                "timeSinceLastHeartbeat": m.last_heartbeat,
                "slotsNumber": m.slots,
                "freeSlots": m.free_slots,
                "totalResource": {},
                "freeResource": {},
                "hardware": {
                    "cpuCores": m.cpu_cores,
                    "physicalMemory": m.physical_memory,
                    "freeMemory": 0,
                    "managedMemory": 0,
                },
                "memoryConfiguration": {},
            }
            for m in managers
        ]
    }


# -- jobs ---------------------------------------------------------------------------------------------------------


def jobs_json(jobs: list[JobDetails]) -> dict[str, Any]:
    return {"jobs": [{"id": job.job_id, "status": job.status.name} for job in jobs]}


def jobs_overview_json(jobs: list[JobDetails]) -> dict[str, Any]:
    now = current_millis()
    return {
        "jobs": [
            {
                "jid": job.job_id,
                "name": job.name,
                "state": job.status.name,
                "start-time": job.start_time,
                "end-time": job.end_time,
                "duration": job.duration(now),
                "last-modification": job.taken_at,
                "tasks": _task_counts(s for v in job.vertices for s in v.subtasks),
            }
            for job in jobs
        ]
    }


def job_json(view: JobView) -> dict[str, Any]:
    details = view.details
    now = current_millis()
    tasks = _tasks_by_vertex(view.tasks)
    vertices = []
    for vertex in details.vertices:
        vertices.append(
            {
                "id": vertex_hex_id(details.job_id, vertex.id),
                "name": vertex.name,
                "maxParallelism": vertex.max_parallelism,
                "parallelism": vertex.parallelism,
                "status": vertex.status.name,
                "start-time": vertex.start_time,
                "end-time": vertex.end_time,
                "duration": _duration(vertex.start_time, vertex.end_time, now),
                "tasks": _task_counts(vertex.subtasks),
                "metrics": _io_metrics(tasks.get(vertex.id, {}).values()),
                "operators": vertex.operator_names,
                "slotSharingGroup": vertex.slot_sharing_group,
            }
        )
    return {
        "jid": details.job_id,
        "name": details.name,
        "isStoppable": details.checkpoints.enabled,
        "state": details.status.name,
        "job-type": "STREAMING",
        "start-time": details.start_time,
        "end-time": details.end_time,
        "duration": details.duration(now),
        "maxParallelism": max((v.max_parallelism for v in details.vertices), default=-1),
        "now": now,
        "timestamps": {status: details.status_timestamps.get(status, 0) for status in _JOB_STATUS_NAMES},
        "vertices": vertices,
        "status-counts": _state_counts(vertex.status for vertex in details.vertices),  # vertices, by state
        "plan": plan_json(details)["plan"],
        **_slot_wait_json(details.waiting_for_slots, now),
    }


def _slot_wait_json(wait: Any, now: int) -> dict[str, Any]:
    """fluvial's addition for a session cluster's job that waits for task slots: what it waits on, and a
    sentence saying so (what the client prints and the dashboard shows)."""
    if wait is None:
        return {}
    return {
        "waiting-for-slots": {
            "needed": wait.needed,
            "free": wait.free,
            "total": wait.total,
            "jobs-ahead": wait.jobs_ahead,
            "since": wait.since,
            "timeout": wait.timeout_ms,
            "description": wait.describe(now),
        }
    }


def plan_json(details: JobDetails) -> dict[str, Any]:
    """Flink's JobPlanInfo: one node per JobVertex, its inputs with their ship strategies."""
    nodes = []
    for vertex in details.vertices:
        inputs = [
            {
                "num": number,
                "id": vertex_hex_id(details.job_id, edge.source),
                "ship_strategy": edge.ship_strategy,
                "exchange": "pipelined_bounded",
                "distribution_pattern": edge.distribution_pattern,
                "side_output": edge.side_output,
            }
            for number, edge in enumerate(e for e in details.edges if e.target == vertex.id)
        ]
        node: dict[str, Any] = {
            "id": vertex_hex_id(details.job_id, vertex.id),
            "parallelism": vertex.parallelism,
            "operator": "",
            "operator_strategy": "",
            "description": vertex.name,
            "optimizer_properties": {},
            "operators": vertex.operator_names,
            "slotSharingGroup": vertex.slot_sharing_group,
        }
        if inputs:
            node["inputs"] = inputs
        nodes.append(node)
    return {"plan": {"jid": details.job_id, "name": details.name, "type": "STREAMING", "nodes": nodes}}


def vertex_json(view: JobView, vertex: VertexDetails) -> dict[str, Any]:
    now = current_millis()
    details = view.details
    tasks = _tasks_by_vertex(view.tasks).get(vertex.id, {})
    subtasks = []
    for subtask in vertex.subtasks:
        task = _current(tasks.get(subtask.subtask_index), subtask)
        manager = (
            view.task_managers[subtask.task_manager]
            if 0 <= subtask.task_manager < len(view.task_managers)
            else (str(subtask.task_manager) if subtask.task_manager >= 0 else None)
        )  # -1: no slot yet
        values = task.task if task is not None else {}
        subtasks.append(
            {
                "subtask": subtask.subtask_index,
                "status": subtask.state.name,
                "attempt": subtask.attempt,
                "endpoint": manager,
                "host": manager,
                "taskmanager-id": manager,
                "slot": subtask.slot,
                "start-time": subtask.start_time,
                "start_time": subtask.start_time,
                "end-time": subtask.end_time,
                "duration": _duration(subtask.start_time, subtask.end_time, now),
                "metrics": _io_metrics([task] if task is not None else []),
                "currentInputWatermark": _watermark(values.get(M.CURRENT_INPUT_WATERMARK.value)),
                "currentOutputWatermark": _output_watermark(task),
                **{
                    name.value: values.get(name.value, 0.0)
                    for name in (
                        M.BUSY_TIME,
                        M.BACK_PRESSURED_TIME,
                        M.IDLE_TIME,
                        M.NUM_RECORDS_IN_RATE,
                        M.NUM_RECORDS_OUT_RATE,
                    )
                },
            }
        )
    return {
        "id": vertex_hex_id(details.job_id, vertex.id),
        "name": vertex.name,
        "parallelism": vertex.parallelism,
        "maxParallelism": vertex.max_parallelism,
        "now": now,
        "subtasks": subtasks,
        "operators": vertex.operator_names,
        "slotSharingGroup": vertex.slot_sharing_group,
    }


def watermarks_json(view: JobView, vertex: VertexDetails) -> list[dict[str, str]]:
    """Flink's: each subtask's input watermark, as `<subtask>.currentInputWatermark` metrics (values as text)."""
    tasks = _tasks_by_vertex(view.tasks).get(vertex.id, {})
    entries = []
    for subtask in vertex.subtasks:
        task = _current(tasks.get(subtask.subtask_index), subtask)
        if task is not None:
            value = task.task.get(M.CURRENT_INPUT_WATERMARK.value, MIN_WATERMARK)
            entries.append(
                {"id": f"{subtask.subtask_index}.{M.CURRENT_INPUT_WATERMARK.value}", "value": str(int(value))}
            )
    return entries


def backpressure_json(view: JobView, vertex: VertexDetails) -> dict[str, Any]:
    """Flink's, from each subtask's back-pressured, idle and busy time per second."""
    tasks = _tasks_by_vertex(view.tasks).get(vertex.id, {})
    subtasks = []
    ratios: list[float] = []
    for subtask in vertex.subtasks:
        task = _current(tasks.get(subtask.subtask_index), subtask)
        values = task.task if task is not None else {}
        ratio = values.get(M.BACK_PRESSURED_TIME.value, 0.0) / 1000
        ratios.append(round(ratio, 4))
        subtasks.append(
            {
                "subtask": subtask.subtask_index,
                "attempt-number": subtask.attempt,
                "backpressure-level": backpressure_level(ratio),
                "ratio": round(ratio, 4),
                "idleRatio": round(values.get(M.IDLE_TIME.value, 0.0) / 1000, 4),
                "busyRatio": round(values.get(M.BUSY_TIME.value, 0.0) / 1000, 4),
            }
        )
    worst = max(ratios, default=0.0)
    taken = max((tasks[i].timestamp for i in tasks), default=view.details.taken_at)
    return {
        "status": "ok",
        "backpressure-level": backpressure_level(worst),
        "end-timestamp": taken,
        "subtasks": subtasks,
    }


def backpressure_level(ratio: float) -> str:
    if ratio <= BACKPRESSURE_LOW:
        return "ok"
    return "low" if ratio <= BACKPRESSURE_HIGH else "high"


def checkpoints_json(details: JobDetails) -> dict[str, Any]:
    checkpoints = details.checkpoints
    history = [_checkpoint_entry(entry, details) for entry in reversed(checkpoints.history)]
    completed = [e for e in history if e["status"] == "COMPLETED"]
    failed = [e for e in history if e["status"] == "FAILED"]
    return {
        "counts": {
            "restored": checkpoints.restored,
            "total": checkpoints.triggered,
            "triggered": checkpoints.triggered,
            "in_progress": checkpoints.in_progress,
            "completed": checkpoints.completed,
            "failed": checkpoints.failed,
        },
        "summary": _checkpoint_summary(completed),
        "latest": {
            "completed": next((e for e in completed if not e["is_savepoint"]), None),
            "savepoint": next((e for e in completed if e["is_savepoint"]), None),
            "failed": failed[0] if failed else None,
            "restored": checkpoints.last_restored,
        },
        "history": history,
    }


def checkpoint_config_json(details: JobDetails) -> dict[str, Any]:
    settings = details.checkpoints.settings
    if not details.checkpoints.enabled:
        return {"enabled": False}
    return {
        "mode": settings["mode"],
        "interval": settings["interval"],
        "timeout": settings["timeout"],
        "min_pause": settings["min_pause"],
        "max_concurrent": settings["max_concurrent"],
        "tolerable_failed_checkpoints": settings["tolerable_failed_checkpoints"],
        "checkpoint_storage": settings["checkpoint_storage"],
        "unaligned_checkpoints": settings.get("unaligned_checkpoints", False),
        "aligned_checkpoint_timeout": settings.get("aligned_checkpoint_timeout", 0),
        "externalization": {"enabled": True, "delete_on_cancellation": False},
        "state_retained": settings["num_retained"],
    }


def exceptions_json(details: JobDetails, max_exceptions: int | None = None) -> dict[str, Any]:
    entries = list(reversed(details.exceptions))  # newest first, as Flink lists them
    truncated = max_exceptions is not None and len(entries) > max_exceptions
    if max_exceptions is not None:
        entries = entries[:max_exceptions]
    root = entries[0] if entries else None
    return {
        "root-exception": root.stacktrace if root else None,
        "timestamp": root.timestamp if root else None,
        "all-exceptions": [
            {"exception": e.stacktrace, "task": e.task_name, "location": e.operator_name, "timestamp": e.timestamp}
            for e in entries
        ],
        "truncated": truncated,
        "exceptionHistory": {"entries": [_exception_entry(e) for e in entries], "truncated": truncated},
    }


def metric_list_json(values: dict[str, float], requested: str | None) -> list[dict[str, Any]]:
    """Flink's metric lists: without `get`, the available ids; with `get=a,b`, those ids and their values."""
    if requested is None:
        return [{"id": name} for name in values]
    wanted = [name.strip() for name in requested.split(",") if name.strip()]
    return [{"id": name, "value": _metric_text(values[name])} for name in wanted if name in values]


def vertex_metric_values(view: JobView, vertex: VertexDetails) -> dict[str, float]:
    """A vertex's metrics as Flink's REST API names them: `<subtask>.<metric>` for task metrics and
    `<subtask>.<operator name>.<metric>` for operator and user metrics."""
    values: dict[str, float] = {}
    tasks = _tasks_by_vertex(view.tasks).get(vertex.id, {})
    for subtask in vertex.subtasks:
        task = _current(tasks.get(subtask.subtask_index), subtask)
        if task is None:
            continue
        index = subtask.subtask_index
        values.update({f"{index}.{name}": value for name, value in task.task.items()})
        for operator_id, metrics in task.operators.items():
            name = task.operator_names.get(operator_id, operator_id)
            values.update({f"{index}.{name}.{metric}": value for metric, value in metrics.items()})
        for sample in task.user:
            name = task.operator_names.get(sample.operator_id, sample.operator_id)
            values[f"{index}.{name}.{sample.identifier}"] = sample.value
    return values


# -- pieces -------------------------------------------------------------------------------------------------------

_JOB_STATUS_NAMES = (
    "INITIALIZING",
    "CREATED",
    "RUNNING",
    "FAILING",
    "FAILED",
    "CANCELLING",
    "CANCELED",
    "FINISHED",
    "RESTARTING",
    "SUSPENDED",
    "RECONCILING",
)


def _task_counts(subtasks: Any) -> dict[str, int]:
    """Subtasks by state, lower-case, with their total (Flink's `tasks`)."""
    states = [subtask.state for subtask in subtasks]
    counts = {state.name.lower(): states.count(state) for state in ExecutionState}
    return {"total": len(states), **counts, "reconciling": 0}


def _state_counts(states: Any) -> dict[str, int]:
    """States by name, upper-case (Flink's `status-counts`)."""
    states = list(states)
    return {state.name: states.count(state) for state in ExecutionState} | {"RECONCILING": 0}


def _duration(start: int, end: int, now: int) -> int:
    if start < 0:
        return -1
    return max(0, (end if end >= 0 else now) - start)


def _tasks_by_vertex(tasks: list[TaskMetricsSnapshot]) -> dict[int, dict[int, TaskMetricsSnapshot]]:
    by_vertex: dict[int, dict[int, TaskMetricsSnapshot]] = {}
    for task in tasks:
        by_vertex.setdefault(task.vertex_id, {})[task.subtask_index] = task
    return by_vertex


def _current(task: TaskMetricsSnapshot | None, subtask: SubtaskDetails) -> TaskMetricsSnapshot | None:
    """The snapshot of the subtask's current attempt; an earlier attempt's figures are not its figures."""
    return task if task is not None and task.attempt == subtask.attempt else None


def _io_metrics(tasks: Any) -> dict[str, Any]:
    tasks = [task for task in tasks if task is not None]
    total = {
        name: int(sum(task.task.get(name.value, 0) for task in tasks))
        for name in (
            M.NUM_RECORDS_IN,
            M.NUM_RECORDS_OUT,
            M.NUM_BYTES_IN,
            M.NUM_BYTES_OUT,
            M.ACC_BUSY_TIME,
            M.ACC_IDLE_TIME,
            M.ACC_BACK_PRESSURED_TIME,
        )
    }
    complete = bool(tasks)
    return {
        "read-bytes": total[M.NUM_BYTES_IN],
        "read-bytes-complete": complete,
        "write-bytes": total[M.NUM_BYTES_OUT],
        "write-bytes-complete": complete,
        "read-records": total[M.NUM_RECORDS_IN],
        "read-records-complete": complete,
        "write-records": total[M.NUM_RECORDS_OUT],
        "write-records-complete": complete,
        "accumulated-backpressured-time": total[M.ACC_BACK_PRESSURED_TIME],
        "accumulated-idle-time": total[M.ACC_IDLE_TIME],
        "accumulated-busy-time": total[M.ACC_BUSY_TIME],
    }


def _watermark(value: float | None) -> int | None:
    """A watermark as a number, or None while there is none (Flink's Long.MIN_VALUE)."""
    if value is None or value <= MIN_WATERMARK:
        return None
    return int(value)


def _output_watermark(task: TaskMetricsSnapshot | None) -> int | None:
    """The subtask's output: the last watermark its chain's last operator emitted."""
    if task is None or not task.operators:
        return None
    last = list(task.operators.values())[-1]
    return _watermark(last.get(M.CURRENT_OUTPUT_WATERMARK.value))


def _checkpoint_entry(entry: dict, details: JobDetails) -> dict[str, Any]:
    subtasks = sum(vertex.parallelism for vertex in details.vertices)
    status = entry["status"]
    document = {
        "className": f".{status.title().replace('_', '')}CheckpointStatistics",
        "id": entry["id"],
        "status": status,
        "is_savepoint": entry["is_savepoint"],
        "checkpoint_type": entry.get("checkpoint_type", "SAVEPOINT" if entry["is_savepoint"] else "CHECKPOINT"),
        "persisted_data": entry.get("persisted_data", 0),
        "alignment_duration": entry.get("alignment_duration", 0),
        "trigger_timestamp": entry["trigger_timestamp"],
        "latest_ack_timestamp": entry.get("latest_ack_timestamp", -1),
        "state_size": entry["state_size"],
        "checkpointed_size": entry.get("checkpointed_size", entry["state_size"]),
        "end_to_end_duration": entry["end_to_end_duration"],
        "num_subtasks": entry.get("num_subtasks", subtasks),
        "num_acknowledged_subtasks": entry.get("num_acknowledged_subtasks", subtasks if status == "COMPLETED" else 0),
    }
    if status == "COMPLETED":
        document["external_path"] = entry.get("external_path")
        document["discarded"] = False
    elif status == "FAILED":
        document["failure_timestamp"] = entry["trigger_timestamp"] + entry["end_to_end_duration"]
        document["failure_message"] = entry.get("failure_message")
    return document


def _checkpoint_summary(completed: list[dict]) -> dict[str, Any]:
    def stats(field_name: str) -> dict[str, Any]:
        values = [entry.get(field_name, 0) for entry in completed]
        if not values:
            return {"min": 0, "max": 0, "avg": 0}
        return {"min": min(values), "max": max(values), "avg": sum(values) // len(values)}

    return {
        "state_size": stats("state_size"),
        "checkpointed_size": stats("checkpointed_size"),
        "end_to_end_duration": stats("end_to_end_duration"),
        "persisted_data": stats("persisted_data"),
        "alignment_duration": stats("alignment_duration"),
    }


def _exception_entry(entry: ExceptionEntry) -> dict[str, Any]:
    return {
        "exceptionName": entry.exception_name,
        "message": entry.message,
        "stacktrace": entry.stacktrace,
        "timestamp": entry.timestamp,
        "taskName": entry.task_name,
        "operatorName": entry.operator_name,
        "location": entry.operator_name,
        "endpoint": None,
        "taskManagerId": None,
        "failureLabels": {},
        "concurrentExceptions": [_exception_entry(e) for e in entry.concurrent],
    }


def _metric_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
