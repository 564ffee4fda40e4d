"""JobTimeline: when a job entered each status and when each subtask attempt started and ended (wall-clock ms),
kept by its JobMaster on its thread from the status changes and task reports it handles, for JobDetails."""

from __future__ import annotations

from fluvial.common.job_status import JobStatus
from fluvial.common.time import current_millis
from fluvial.runtime.execution_state import ExecutionState


class JobTimeline:
    def __init__(self) -> None:
        self.status_timestamps: dict[str, int] = {JobStatus.CREATED.name: current_millis()}
        self.running_since = -1
        self.subtasks: dict[tuple[int, int], tuple[int, int, int]] = {}  # (vertex, subtask) -> attempt, start, end

    def job_status(self, status: JobStatus) -> None:
        now = current_millis()
        self.status_timestamps.setdefault(status.name, now)
        if status is JobStatus.RUNNING:
            self.running_since = now

    def task_state(self, vertex_id: int, subtask_index: int, attempt: int, state: ExecutionState) -> None:
        key = (vertex_id, subtask_index)
        held_attempt, start, end = self.subtasks.get(key, (attempt, -1, -1))
        if attempt > held_attempt:
            start, end = -1, -1
        elif attempt < held_attempt:
            return  # a late report of an earlier attempt
        if state is ExecutionState.RUNNING and start < 0:
            start = current_millis()
        elif state.is_terminal and end < 0:
            end = current_millis()
        self.subtasks[key] = (attempt, start, end)
