"""Metrics as plain data: what a task reports and what the REST API and Prometheus read.

A snapshot holds names and numbers only (no metric objects, no references into a running task), so a
TaskManager in another process sends it to its JobMaster as it is (inside the `MetricsSnapshot` message), and
the JobMaster keeps the latest one of each subtask (`fluvial.metrics.store`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class UserMetricSample:
    """One value of a metric a user function registered (`fluvial.metrics.metricbase`)."""

    operator_id: str
    identifier: str  # the group path and name by '.', value groups included: 'my_group.my_counter'
    logical_name: str  # the same without value groups: what Prometheus names it by
    variables: dict[str, str]  # the '<key>' -> value pairs of its key/value groups
    value: float


@dataclass(slots=True)
class TaskMetricsSnapshot:
    """The metrics of one subtask attempt at one moment. `task` and each of `operators` map Flink's metric names
    (`fluvial.metrics.names`) to numbers; `operator_names` lists the chain's operators (id → name) head first."""

    job_id: str
    job_name: str
    vertex_id: int
    task_name: str
    subtask_index: int
    attempt: int
    task_manager_id: str
    host: str
    timestamp: int  # wall-clock ms when it was taken
    task: dict[str, float] = field(default_factory=dict)
    operators: dict[str, dict[str, float]] = field(default_factory=dict)
    operator_names: dict[str, str] = field(default_factory=dict)
    user: list[UserMetricSample] = field(default_factory=list)
    final: bool = False  # taken when the attempt ended: nothing will change any more

    @property
    def task_key(self) -> tuple[int, int]:
        return (self.vertex_id, self.subtask_index)


@dataclass(slots=True)
class JobMetricsSnapshot:
    """A job's metrics: its own (checkpoints, restarts, uptime; by Flink's names) and its subtasks' latest."""

    job_id: str
    job_name: str
    values: dict[str, float]
    tasks: list[TaskMetricsSnapshot]


def vertex_hex_id(job_id: str, vertex_id: int) -> str:
    """The 32-hex-digit id of a JobVertex in the REST API and Prometheus' `task_id` label, as Flink's JobVertexID
    looks: stable for the job, distinct between jobs."""
    import hashlib  # only where ids are shown (REST, Prometheus): a job alone never pays for the import

    return hashlib.blake2b(f"{job_id}/{vertex_id}".encode(), digest_size=16).hexdigest()
