"""One job of a session cluster, from its submission to its archive: it waits for slots, runs on a JobMaster,
and stays listed once it has ended (Flink's job store keeps finished jobs' archived execution graphs).

Phases, numbered:
1. WAITING: submitted, no slots yet; its details are built from its JobGraph (status CREATED, as Flink lists a
   job that waits for resources among the "scheduled" ones). STARTING: it has its slots, its JobMaster is being
   built (still CREATED); a cancel now is carried out once the JobMaster runs (`cancel_requested`).
2. RUNNING: it got its slots and a JobMaster; the JobMaster describes it, and keeps describing it (its archive)
   once it has ended.
3. ENDED_UNSTARTED: it ended without a JobMaster — cancelled while it waited, or it waited too long for slots,
   or its JobMaster could not be built — and its last details are kept as they were.
`result` completes once, when the job ends in any phase: with the JobExecutionResult, or the exception `execute()`
would raise (JobCancelledException, JobExecutionException).
Not thread-safe: the SessionDispatcher moves it between phases under its lock.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from fluvial.cluster.exception_history import entry_of
from fluvial.cluster.job_details import JobDetails, unscheduled_job_details
from fluvial.common.errors import JobCancelledException, JobExecutionException
from fluvial.common.executors import Cancellable
from fluvial.common.future import CompletableFuture, forward
from fluvial.common.job_status import JobStatus
from fluvial.common.time import current_millis
from fluvial.datastream.transformations import CollectSpec

if TYPE_CHECKING:
    from fluvial.cluster.job_master import JobMaster
    from fluvial.common.job_execution_result import JobExecutionResult
    from fluvial.graph.job_graph import JobGraph


class JobPhase(enum.Enum):
    WAITING = "waiting for slots"
    STARTING = "its JobMaster is being built"
    RUNNING = "running on a JobMaster"
    ENDED_UNSTARTED = "ended before it started"


class SessionJob:
    def __init__(self, job_graph: JobGraph, required_slots: int) -> None:
        self.job_graph = job_graph
        self.required_slots = required_slots
        self.submitted_at = current_millis()
        self.result: CompletableFuture[JobExecutionResult] = CompletableFuture()
        self.phase = JobPhase.WAITING
        self.job_master: JobMaster | None = None
        self.slot_timeout: Cancellable | None = None  # the pending slot.request.timeout mail while it waits
        self.cancel_requested = False  # cancelled while STARTING
        self.collect_ids = collect_ids_of(job_graph)
        self._archive: JobDetails | None = None  # phase 3's details

    @property
    def job_id(self) -> str:
        return self.job_graph.job_id

    @property
    def name(self) -> str:
        return self.job_graph.job_name

    def details(self, timeout: float) -> JobDetails:
        if self.job_master is not None:
            details: JobDetails = self.job_master.request_job().result(timeout)
            return details
        if self._archive is not None:
            return self._archive
        return unscheduled_job_details(
            self.job_graph, JobStatus.CREATED, {JobStatus.CREATED.name: self.submitted_at}, []
        )

    def starting(self) -> None:
        """It has its slots; its JobMaster is being built."""
        self.phase = JobPhase.STARTING
        self._cancel_slot_timeout()

    def started(self, job_master: JobMaster) -> None:
        """Phase 2: `job_master` runs it (and completes `result` when it ends)."""
        self.phase = JobPhase.RUNNING
        self.job_master = job_master
        self._cancel_slot_timeout()
        job_master.result.add_done_callback(lambda done: forward(done, self.result))

    def end_unstarted(self, status: JobStatus, error: BaseException | None = None) -> None:
        """Phase 3: it ends as CANCELED (cancelled while it waited) or FAILED (with `error`)."""
        self.phase = JobPhase.ENDED_UNSTARTED
        self._cancel_slot_timeout()
        exceptions = [entry_of(error)] if error is not None else []
        self._archive = unscheduled_job_details(
            self.job_graph,
            status,
            {JobStatus.CREATED.name: self.submitted_at, status.name: current_millis()},
            exceptions,
        )
        if status is JobStatus.CANCELED:
            self.result.set_exception(
                JobCancelledException(f"Job '{self.name}' ({self.job_id}) was cancelled", self.job_id)
            )
            return
        failure = JobExecutionException(f"Job '{self.name}' ({self.job_id}) failed: {error}", self.job_id)
        failure.__cause__ = error
        self.result.set_exception(failure)

    def _cancel_slot_timeout(self) -> None:
        if self.slot_timeout is not None:
            self.slot_timeout.cancel()
            self.slot_timeout = None


def collect_ids_of(job_graph: Any) -> list[str]:
    """The collect ids of the job's collect sinks (one per `execute_and_collect`)."""
    return [
        node.operator.collect_id
        for vertex in job_graph.vertices
        for node in vertex.nodes
        if isinstance(node.operator, CollectSpec)
    ]
