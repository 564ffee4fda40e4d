"""Who a running subtask is: handed to sources, sinks and runtime contexts when they are built."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskInfo:
    job_id: str
    task_name: str
    subtask_index: int
    parallelism: int
    max_parallelism: int
    attempt_number: int = 0
    # the operator a source or sink is built for (its id is the same in every attempt of the job): what lets a
    # sink name the files of its own earlier attempts apart from those of another sink or job
    operator_id: str = ""

    @property
    def task_name_with_subtasks(self) -> str:
        return f"{self.task_name} ({self.subtask_index + 1}/{self.parallelism})"
