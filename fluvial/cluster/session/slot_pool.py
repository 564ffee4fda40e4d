"""The session cluster's slots: every slot of every TaskManager, which job holds it, and the jobs waiting for
some (Flink's SlotManager, as a session cluster with a fixed set of TaskManagers needs it).

Rules, numbered:
1. A job takes all the slots it needs (`JobGraph.required_slots()`) at once when it starts, and gives them all
   back when it ends; it never holds part of what it needs (so two waiting jobs can never deadlock each other).
2. Free slots are handed out in `offered_slots` order — slot 0 of every TaskManager, then slot 1, ... — so the
   parallel subtasks of a job spread over TaskManager processes (over cores) first.
3. A job that needs more slots than the cluster has can never run: `request` says NEVER_FITS, naming nothing
   held. One that fits only once others end waits in a queue.
4. Waiting jobs are served in the order they asked (first come, first served): a job that needs many slots is
   never overtaken for ever by smaller ones. A job leaves the queue when it is granted its slots, or is
   withdrawn (cancelled, or it waited longer than `slot.request.timeout`).
Not thread-safe: its owner (the SessionDispatcher) calls it under its lock.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from dataclasses import dataclass

from fluvial.cluster.slots import SlotId, offered_slots


class SlotRequestResult(enum.Enum):
    GRANTED = "granted"  # the slots are the job's now
    QUEUED = "queued"  # it waits until enough slots are free (rule 4)
    NEVER_FITS = "never fits"  # it needs more slots than the cluster has (rule 3)


@dataclass(frozen=True, slots=True)
class SlotGrant:
    job_id: str
    slots: tuple[SlotId, ...]


class SlotPool:
    def __init__(self, task_managers: int, slots_per_task_manager: int) -> None:
        if task_managers < 1 or slots_per_task_manager < 1:
            raise ValueError(
                f"a session cluster needs at least one TaskManager with one slot, got "
                f"{task_managers} TaskManagers with {slots_per_task_manager} slots each"
            )
        self.task_managers = task_managers
        self.slots_per_task_manager = slots_per_task_manager
        self._order = offered_slots(task_managers, slots_per_task_manager)
        self._holder: dict[SlotId, str] = {}  # slot -> the job that holds it
        self._held: dict[str, tuple[SlotId, ...]] = {}  # job -> its slots
        self._waiting: OrderedDict[str, int] = OrderedDict()  # job -> slots it needs, in the order they asked

    @property
    def total(self) -> int:
        return len(self._order)

    @property
    def free(self) -> int:
        return self.total - len(self._holder)

    def free_by_task_manager(self) -> list[int]:
        """Free slots of each TaskManager, by index."""
        free = [self.slots_per_task_manager] * self.task_managers
        for slot in self._holder:
            free[slot.task_manager] -= 1
        return free

    def slots_of(self, job_id: str) -> tuple[SlotId, ...]:
        return self._held.get(job_id, ())

    def waiting(self) -> list[str]:
        """The jobs waiting for slots, first in line first."""
        return list(self._waiting)

    def request(self, job_id: str, required: int) -> tuple[SlotRequestResult, SlotGrant | None]:
        """Rules 1, 3, 4: the job's slots now (GRANTED and the grant), later (QUEUED), or never (NEVER_FITS)."""
        if required < 1:
            raise ValueError(f"job {job_id} asks for {required} slots; a job needs at least one")
        if job_id in self._held or job_id in self._waiting:
            raise ValueError(f"job {job_id} already holds or waits for slots")
        if required > self.total:
            return SlotRequestResult.NEVER_FITS, None
        if not self._waiting and required <= self.free:
            return SlotRequestResult.GRANTED, self._grant(job_id, required)
        self._waiting[job_id] = required
        return SlotRequestResult.QUEUED, None

    def release(self, job_id: str) -> list[SlotGrant]:
        """The job ended: its slots are free again. Returns the grants this made to waiting jobs (rule 4)."""
        for slot in self._held.pop(job_id, ()):
            del self._holder[slot]
        return self._serve_waiting()

    def withdraw(self, job_id: str) -> list[SlotGrant]:
        """A waiting job stops waiting (cancelled, timed out). Jobs behind it may fit now: their grants."""
        if self._waiting.pop(job_id, None) is None:
            return []
        return self._serve_waiting()

    def _serve_waiting(self) -> list[SlotGrant]:
        grants = []
        while self._waiting:
            job_id, required = next(iter(self._waiting.items()))
            if required > self.free:
                break
            del self._waiting[job_id]
            grants.append(self._grant(job_id, required))
        return grants

    def _grant(self, job_id: str, required: int) -> SlotGrant:
        slots = tuple([slot for slot in self._order if slot not in self._holder][:required])
        for slot in slots:
            self._holder[slot] = job_id
        self._held[job_id] = slots
        return SlotGrant(job_id, slots)
