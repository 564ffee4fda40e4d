"""JobDetails: what a JobMaster tells about its job at one moment (Flink's ArchivedExecutionGraph) — status and
its timestamps, the chained job graph with each subtask's attempt, state and slot, checkpoint statistics, the
exception history and the job's own metrics.

Plain data, built on the JobMaster's thread (`build_job_details`), so a REST handler reads it on its own
thread without touching the live scheduler, a finished job keeps its last details as its archive, and a
JobManager in another process could send it as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fluvial.cluster.exception_history import ExceptionEntry
from fluvial.common.failure_info import FailureInfo
from fluvial.common.job_status import JobStatus
from fluvial.common.time import current_millis
from fluvial.metrics.names import MetricName as M
from fluvial.runtime.execution_state import ExecutionState

if TYPE_CHECKING:
    from fluvial.cluster.job_master import JobMaster
    from fluvial.cluster.job_timeline import JobTimeline

_S = ExecutionState


@dataclass(slots=True)
class SubtaskDetails:
    subtask_index: int
    attempt: int
    state: ExecutionState
    task_manager: int  # the index of its TaskManager in the cluster's list
    slot: int
    start_time: int = -1  # wall-clock ms the attempt started running; -1: not yet
    end_time: int = -1  # wall-clock ms the attempt ended; -1: not yet


@dataclass(slots=True)
class VertexDetails:
    id: int
    name: str
    operator_ids: list[str]
    operator_names: list[str]
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    co_location_group: str | None
    is_source: bool
    subtasks: list[SubtaskDetails]

    @property
    def status(self) -> ExecutionState:
        return aggregate_state([subtask.state for subtask in self.subtasks])

    @property
    def start_time(self) -> int:
        starts = [s.start_time for s in self.subtasks if s.start_time >= 0]
        return min(starts) if starts else -1

    @property
    def end_time(self) -> int:
        if not all(s.state.is_terminal for s in self.subtasks):
            return -1
        return max((s.end_time for s in self.subtasks), default=-1)


@dataclass(slots=True)
class EdgeDetails:
    source: int
    target: int
    ship_strategy: str  # FORWARD, HASH, REBALANCE, RESCALE, BROADCAST, SHUFFLE, GLOBAL, CUSTOM
    distribution_pattern: str
    type_number: int
    side_output: str | None


@dataclass(slots=True)
class CheckpointDetails:
    enabled: bool
    triggered: int = 0
    completed: int = 0
    failed: int = 0
    restored: int = 0
    last_duration_ms: int = 0
    last_size_bytes: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)  # completed and failed (newest last), then in progress
    last_restored: dict[str, Any] | None = None  # id, restore_timestamp, is_savepoint, external_path
    settings: dict[str, Any] = field(default_factory=dict)  # interval, timeout, mode, ... for /checkpoints/config

    @property
    def in_progress(self) -> int:
        return max(0, self.triggered - self.completed - self.failed)


@dataclass(frozen=True, slots=True)
class SlotWait:
    """What a session cluster's job that waits for task slots waits on (fluvial's addition to Flink's job
    details, so the client and the dashboard can say why a job stays CREATED)."""

    needed: int  # slots the job needs
    free: int  # slots free now
    total: int  # slots of the cluster
    jobs_ahead: int  # jobs waiting before it
    since: int  # wall-clock ms it started waiting
    timeout_ms: int  # its slot.request.timeout

    def describe(self, now: int) -> str:
        ahead = (
            f", {self.jobs_ahead} job{'s' if self.jobs_ahead != 1 else ''} waiting before it" if self.jobs_ahead else ""
        )
        return (
            f"waiting for {self.needed} task slot{'s' if self.needed != 1 else ''} ({self.free} of the "
            f"cluster's {self.total} free{ahead}) for {max(0, now - self.since) / 1000:.0f} s of its "
            f"slot.request.timeout ({self.timeout_ms / 1000:.0f} s)"
        )


@dataclass(slots=True)
class JobDetails:
    job_id: str
    name: str
    status: JobStatus
    status_timestamps: dict[str, int]  # JobStatus name -> wall-clock ms it was first entered
    vertices: list[VertexDetails]
    edges: list[EdgeDetails]
    checkpoints: CheckpointDetails
    exceptions: list[ExceptionEntry]
    restarts: int
    taken_at: int  # wall-clock ms these details were taken
    running_since: int = -1  # wall-clock ms the job last switched to RUNNING
    failures: int = 0  # every failure seen, restarted from or not
    last_failure: FailureInfo | None = None  # the latest failure, whether the job restarted from it or not
    execution_config: dict[str, Any] = field(default_factory=dict)  # Flink's GET /jobs/:jobid/config "execution-config"
    waiting_for_slots: SlotWait | None = None  # a session cluster's job that waits for task slots

    @property
    def start_time(self) -> int:
        return self.status_timestamps.get(JobStatus.CREATED.name, -1)

    @property
    def end_time(self) -> int:
        if not self.status.is_globally_terminal:
            return -1
        return self.status_timestamps.get(self.status.name, -1)

    def duration(self, now: int | None = None) -> int:
        end = self.end_time if self.end_time >= 0 else (now if now is not None else current_millis())
        return max(0, end - self.start_time) if self.start_time >= 0 else 0

    def vertex(self, vertex_id: int) -> VertexDetails | None:
        return next((vertex for vertex in self.vertices if vertex.id == vertex_id), None)

    def metric_values(self, now: int | None = None) -> dict[str, float]:
        """The job's own metrics by Flink's names (numRestarts, uptime, the checkpoint figures)."""
        checkpoints = self.checkpoints
        restored = checkpoints.last_restored
        return {
            M.NUM_RESTARTS.value: self.restarts,
            M.UPTIME.value: self._uptime(now if now is not None else current_millis()),
            M.LAST_CHECKPOINT_DURATION.value: checkpoints.last_duration_ms,
            M.LAST_CHECKPOINT_SIZE.value: checkpoints.last_size_bytes,
            M.LAST_CHECKPOINT_RESTORE_TIMESTAMP.value: restored["restore_timestamp"] if restored else -1,
            M.NUMBER_OF_COMPLETED_CHECKPOINTS.value: checkpoints.completed,
            M.NUMBER_OF_FAILED_CHECKPOINTS.value: checkpoints.failed,
            M.NUMBER_OF_IN_PROGRESS_CHECKPOINTS.value: checkpoints.in_progress,
            M.TOTAL_NUMBER_OF_CHECKPOINTS.value: checkpoints.triggered,
        }

    def _uptime(self, now: int) -> int:
        """Flink's: milliseconds since the job last started running; 0 while it is not running, -1 once it has
        ended."""
        if self.status.is_globally_terminal:
            return -1
        if self.status is not JobStatus.RUNNING or self.running_since < 0:
            return 0
        return max(0, now - self.running_since)


def aggregate_state(states: list[ExecutionState]) -> ExecutionState:
    """A vertex's state from its subtasks' (Flink's aggregate job vertex state): all alike → that state; else
    the first that applies of FAILED, CANCELING, CANCELED, RUNNING, INITIALIZING, DEPLOYING, SCHEDULED, and
    RUNNING while some subtasks finished and others run."""
    if not states:
        return _S.CREATED
    distinct = set(states)
    if len(distinct) == 1:
        return states[0]
    for state in (_S.FAILED, _S.CANCELING, _S.CANCELED, _S.RUNNING, _S.INITIALIZING, _S.DEPLOYING, _S.SCHEDULED):
        if state in distinct:
            return state
    return _S.RUNNING if _S.FINISHED in distinct else _S.CREATED


def build_job_details(job_master: JobMaster, timeline: JobTimeline) -> JobDetails:
    """The details of `job_master`'s job now. Call on the JobMaster's thread: it reads the live scheduler,
    execution graph and checkpoint coordinator; `timeline` is its JobTimeline."""
    scheduler = job_master.scheduler
    job_graph = job_master.job_graph

    def subtasks_of(vertex: Any) -> list[SubtaskDetails]:
        subtasks = []
        for index in range(vertex.parallelism):
            execution = scheduler.graph.vertices[(vertex.id, index)]
            slot = scheduler.slot_of(execution.id)
            attempt, start, end = timeline.subtasks.get(execution.id, (execution.attempt, -1, -1))
            if attempt != execution.attempt:
                start, end = -1, -1
            subtasks.append(
                SubtaskDetails(index, execution.attempt, execution.state, slot.task_manager, slot.index, start, end)
            )
        return subtasks

    return JobDetails(
        job_graph.job_id,
        job_graph.job_name,
        scheduler.status,
        dict(timeline.status_timestamps),
        _vertices(job_graph, subtasks_of),
        _edges(job_graph),
        _checkpoint_details(job_master.checkpointing),
        _copy_exceptions(scheduler.exceptions.entries),
        scheduler.restarts,
        current_millis(),
        timeline.running_since,
        scheduler.failures,
        scheduler.last_failure_info,
        execution_config_of(job_graph),
    )


def unscheduled_job_details(
    job_graph: Any, status: JobStatus, status_timestamps: dict[str, int], exceptions: list[ExceptionEntry]
) -> JobDetails:
    """The details of a job no JobMaster runs: one waiting for slots (CREATED), or one that ended before it got
    them (CANCELED, FAILED). Its subtasks are in no slot (TaskManager and slot -1): CREATED while it waits,
    CANCELED once it has ended, as Flink cancels the subtasks of a job that ends."""
    state = ExecutionState.CREATED if status is JobStatus.CREATED else ExecutionState.CANCELED

    def subtasks_of(vertex: Any) -> list[SubtaskDetails]:
        return [SubtaskDetails(index, 0, state, -1, -1) for index in range(vertex.parallelism)]

    return JobDetails(
        job_graph.job_id,
        job_graph.job_name,
        status,
        dict(status_timestamps),
        _vertices(job_graph, subtasks_of),
        _edges(job_graph),
        CheckpointDetails(enabled=False),
        list(exceptions),
        0,
        current_millis(),
        execution_config=execution_config_of(job_graph),
    )


def execution_config_of(job_graph: Any) -> dict[str, Any]:
    """What Flink's job configuration page shows: the execution mode, restart strategy, parallelism, object reuse,
    the global job parameters ("user-config") — and fluvial's addition, every configuration key the job set."""
    execution_config = getattr(job_graph, "execution_config", None)
    configuration = getattr(job_graph, "configuration", None)
    tolerance = getattr(job_graph, "fault_tolerance", None)
    restart = getattr(tolerance, "restart_strategy", None)
    return {
        "execution-mode": "BATCH" if getattr(job_graph, "batch", False) else "PIPELINED",
        "restart-strategy": (restart.get_description() if hasattr(restart, "get_description") else str(restart))
        if restart is not None
        else "default (from the cluster's configuration)",
        "job-parallelism": max((vertex.parallelism for vertex in job_graph.vertices), default=1),
        "object-reuse-mode": bool(execution_config.is_object_reuse_enabled()) if execution_config else False,
        "user-config": execution_config.get_global_job_parameters() if execution_config else {},
        "configuration": dict(sorted(configuration.to_dict().items())) if configuration is not None else {},
    }


def _vertices(job_graph: Any, subtasks_of: Any) -> list[VertexDetails]:
    return [
        VertexDetails(
            vertex.id,
            vertex.name,
            [node.operator_id for node in vertex.nodes],
            list(vertex.operator_names),
            vertex.parallelism,
            vertex.max_parallelism,
            vertex.slot_sharing_group,
            vertex.co_location_group,
            vertex.is_source,
            subtasks_of(vertex),
        )
        for vertex in job_graph.vertices
    ]


def _edges(job_graph: Any) -> list[EdgeDetails]:
    return [
        EdgeDetails(
            edge.source,
            edge.target,
            edge.ship_strategy,
            edge.distribution_pattern.value,
            edge.type_number,
            edge.output_tag.tag_id if edge.output_tag is not None else None,
        )
        for edge in job_graph.edges
    ]


def _checkpoint_details(checkpointing: Any) -> CheckpointDetails:
    if checkpointing is None:
        return CheckpointDetails(enabled=False)
    stats = checkpointing.stats
    settings = checkpointing.settings
    return CheckpointDetails(
        enabled=True,
        triggered=stats.triggered,
        completed=stats.completed,
        failed=stats.failed,
        restored=stats.restored,
        last_duration_ms=stats.last_duration_ms,
        last_size_bytes=stats.last_size_bytes,
        history=[dict(entry) for entry in stats.history] + checkpointing.in_progress(),
        last_restored=dict(stats.last_restored) if stats.last_restored else None,
        settings={
            "interval": settings.interval_ms,
            "timeout": settings.timeout_ms,
            "min_pause": settings.min_pause_ms,
            "max_concurrent": settings.max_concurrent,
            "tolerable_failed_checkpoints": settings.tolerable_failures,
            "mode": "EXACTLY_ONCE" if settings.exactly_once else "AT_LEAST_ONCE",
            "num_retained": settings.num_retained,
            "unaligned_checkpoints": settings.unaligned,
            "aligned_checkpoint_timeout": settings.aligned_checkpoint_timeout_ms,
            "checkpoint_storage": type(settings.storage).__name__,
        },
    )


def _copy_exceptions(entries: list[ExceptionEntry]) -> list[ExceptionEntry]:
    return [
        ExceptionEntry(
            e.exception_name, e.message, e.stacktrace, e.timestamp, e.task_name, e.operator_name, list(e.concurrent)
        )
        for e in entries
    ]
