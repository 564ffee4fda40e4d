"""Slots: how many a job needs and which slot each subtask runs in (DESIGN 2.2, seed 002).

Each slot sharing group gets as many slots as its highest parallelism; subtask i of every vertex of the group
goes to the group's slot i. That makes subtasks of different vertices share slots, and makes co-location
(subtask i of co-located vertices in one slot) hold by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from fluvial.common.errors import ResourceError
from fluvial.graph.job_graph import JobGraph


@dataclass(frozen=True, slots=True, order=True)
class SlotId:
    task_manager: int
    index: int

    def __str__(self) -> str:
        return f"TM{self.task_manager}/slot{self.index}"


def offered_slots(task_managers: int, slots_per_task_manager: int) -> list[SlotId]:
    """Free slots in allocation order: spread round robin over TaskManagers, so parallel subtasks of one
    group land on different TaskManagers (different processes) first."""
    return [SlotId(tm, index) for index in range(slots_per_task_manager) for tm in range(task_managers)]


def assign_slots(job_graph: JobGraph, free: list[SlotId]) -> dict[tuple[int, int], SlotId]:
    """(vertex id, subtask index) → slot. Fails, naming both numbers, when the job needs more than offered."""
    needs = job_graph.slot_sharing_groups()
    required = sum(needs.values())
    if required > len(free):
        detail = ", ".join(f"'{group}' needs {n}" for group, n in needs.items())
        raise ResourceError(
            f"the job needs {required} task slots (per slot sharing group, its highest parallelism: {detail}) "
            f"but the cluster offers {len(free)}: raise taskmanager.numberOfTaskSlots or "
            "local.number-taskmanager, or lower the parallelism"
        )
    pool = iter(free)
    group_slots = {group: [next(pool) for _ in range(n)] for group, n in needs.items()}
    return {
        (vertex.id, index): group_slots[vertex.slot_sharing_group][index]
        for vertex in job_graph.vertices
        for index in range(vertex.parallelism)
    }
