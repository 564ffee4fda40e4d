"""SlotSharingGroup (PyFlink `pyflink.datastream.SlotSharingGroup`): a name plus optional resource hints."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SlotSharingGroup:
    name: str
    cpu_cores: float | None = None
    task_heap_memory_mb: int | None = None
    task_off_heap_memory_mb: int | None = None
    managed_memory_mb: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a slot sharing group needs a non-empty name, got {self.name!r}")

    def get_name(self) -> str:
        return self.name

    @staticmethod
    def builder(name: str) -> "SlotSharingGroupBuilder":
        return SlotSharingGroupBuilder(name)


class SlotSharingGroupBuilder:
    def __init__(self, name: str) -> None:
        self._name = name
        self._cpu: float | None = None
        self._heap: int | None = None
        self._off_heap: int | None = None
        self._managed: int | None = None

    def set_cpu_cores(self, cpu_cores: float) -> "SlotSharingGroupBuilder":
        self._cpu = cpu_cores
        return self

    def set_task_heap_memory_mb(self, mb: int) -> "SlotSharingGroupBuilder":
        self._heap = mb
        return self

    def set_task_off_heap_memory_mb(self, mb: int) -> "SlotSharingGroupBuilder":
        self._off_heap = mb
        return self

    def set_managed_memory_mb(self, mb: int) -> "SlotSharingGroupBuilder":
        self._managed = mb
        return self

    def build(self) -> SlotSharingGroup:
        return SlotSharingGroup(self._name, self._cpu, self._heap, self._off_heap, self._managed)
