"""Metrics in Prometheus' text format, named as Flink's Prometheus reporter names them, so that Flink's Grafana
dashboards and PromQL queries work unchanged.

Flink's naming, kept:
- `flink_` + the metric's logical scope + `_` + its name: `flink_jobmanager_job_numRestarts`,
  `flink_taskmanager_job_task_busyTimeMsPerSecond`, `flink_taskmanager_job_task_operator_numRecordsIn`; a user
  metric adds its groups (`..._operator_mygroup_mycounter`), key/value groups by their key only;
- the scope's variables are labels: `host`, `job_id`, `job_name` for a job; plus `tm_id`, `task_id`,
  `task_name`, `task_attempt_id`, `task_attempt_num`, `subtask_index` for a task; plus `operator_id`,
  `operator_name` for an operator; plus a user key/value group's key;
- every character outside `[a-zA-Z0-9:_]`, in names and label values, becomes `_`;
- counters, meters and gauges are all Prometheus gauges (Flink's counters may go down).
"""

from __future__ import annotations

import hashlib
import re
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from fluvial.metrics.snapshot import JobMetricsSnapshot, TaskMetricsSnapshot, vertex_hex_id

CONTENT_TYPE = CONTENT_TYPE_LATEST
JOB_SCOPE = "flink_jobmanager_job_"
TASK_MANAGER_SCOPE = "flink_taskmanager_"
TASK_SCOPE = "flink_taskmanager_job_task_"
OPERATOR_SCOPE = "flink_taskmanager_job_task_operator_"
_INVALID = re.compile(r"[^a-zA-Z0-9:_]")


def sanitize(text: str) -> str:
    return _INVALID.sub("_", text)


@dataclass(slots=True)
class _Family:
    help: str
    label_names: list[str] = field(default_factory=list)
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, labels: dict[str, str], value: float) -> None:
        for name in labels:
            if name not in self.label_names:
                self.label_names.append(name)
        self.samples.append((labels, float(value)))

    def metric(self, name: str) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, self.help, labels=self.label_names)
        for labels, value in self.samples:
            family.add_metric([labels.get(label, "") for label in self.label_names], value)
        return family


class _Snapshots:
    """A prometheus-client collector over snapshots taken for one scrape."""

    def __init__(self, families: dict[str, _Family]) -> None:
        self._families = families

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for name, family in self._families.items():
            yield family.metric(name)


def render(
    jobs: Iterable[JobMetricsSnapshot],
    host: str | None = None,
    task_managers: Iterable[tuple[str, dict[str, float]]] = (),
) -> bytes:
    """The text exposition of `jobs` (their own metrics and their subtasks' latest snapshots) and of each
    TaskManager's process (`(tm_id, {"Status.Python.CPU.Load": ...})`: `flink_taskmanager_Status_Python_...`,
    labelled `host` and `tm_id` as Flink's `flink_taskmanager_Status_JVM_...`)."""
    host = host or socket.gethostname() or "localhost"
    families: dict[str, _Family] = {}

    def add(scope: str, name: str, logical: str, labels: dict[str, str], value: float) -> None:
        metric_name = scope + sanitize(name)
        family = families.get(metric_name)
        if family is None:
            family = families[metric_name] = _Family(f"{name} (scope: {logical})")
        family.add({label: sanitize(str(value_)) for label, value_ in labels.items()}, value)

    for tm_id, values in task_managers:
        for name, value in values.items():
            add(TASK_MANAGER_SCOPE, name, "taskmanager", {"host": host, "tm_id": tm_id}, value)
    for job in jobs:
        job_labels = {"host": host, "job_id": job.job_id, "job_name": job.job_name}
        for name, value in job.values.items():
            add(JOB_SCOPE, name, "jobmanager.job", job_labels, value)
        for task in job.tasks:
            _add_task(add, task)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshots(families))  # type: ignore[arg-type]
    return generate_latest(registry)


def _add_task(add, task: TaskMetricsSnapshot) -> None:  # noqa: ANN001 - the closure of `render`
    labels = {
        "host": task.host,
        "tm_id": task.task_manager_id,
        "job_id": task.job_id,
        "job_name": task.job_name,
        "task_id": vertex_hex_id(task.job_id, task.vertex_id),
        "task_name": task.task_name,
        "task_attempt_id": _attempt_id(task),
        "task_attempt_num": str(task.attempt),
        "subtask_index": str(task.subtask_index),
    }
    for name, value in task.task.items():
        add(TASK_SCOPE, name, "taskmanager.job.task", labels, value)
    for operator_id, values in task.operators.items():
        operator_labels = {
            **labels,
            "operator_id": operator_id,
            "operator_name": task.operator_names.get(operator_id, operator_id),
        }
        for name, value in values.items():
            add(OPERATOR_SCOPE, name, "taskmanager.job.task.operator", operator_labels, value)
    for sample in task.user:
        user_labels = {
            **labels,
            "operator_id": sample.operator_id,
            "operator_name": task.operator_names.get(sample.operator_id, sample.operator_id),
            **{key.strip("<>"): value for key, value in sample.variables.items()},
        }
        add(
            OPERATOR_SCOPE,
            sample.logical_name.replace(".", "_"),
            "taskmanager.job.task.operator",
            user_labels,
            sample.value,
        )


def _attempt_id(task: TaskMetricsSnapshot) -> str:
    """A 32-hex-digit id of the subtask attempt, as Flink's ExecutionAttemptID looks."""
    text = f"{task.job_id}/{task.vertex_id}/{task.subtask_index}/{task.attempt}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
