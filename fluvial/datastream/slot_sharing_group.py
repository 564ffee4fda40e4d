"""SlotSharingGroup and MemorySize (PyFlink `pyflink.datastream.slot_sharing_group`).

A slot sharing group is a name plus, optionally, the resources one slot of the group needs (Flink's
fine-grained resource profile). As in Flink, a profile needs at least CPU cores and task heap memory, both
positive; off-heap and managed memory default to zero. fluvial's TaskManagers offer uniform slots (Flink's
coarse-grained mode, where a profile is not enforced either): the profile is kept in the plan and the job
logs that it is not enforced.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from fluvial.common.errors import InvalidJobError

__all__ = ["MemorySize", "SlotSharingGroup", "SlotSharingGroupBuilder"]

_UNITS = {
    "b": 1,
    "bytes": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kibibytes": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mebibytes": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gibibytes": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tebibytes": 1 << 40,
}


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class MemorySize:
    """A number of bytes (Flink's MemorySize); ordered, hashable, printed like Flink (`100 mb`)."""

    bytes_size: int

    def __post_init__(self) -> None:
        if isinstance(self.bytes_size, bool) or not isinstance(self.bytes_size, int) or self.bytes_size < 0:
            raise InvalidJobError(f"a MemorySize is a number of bytes >= 0, got {self.bytes_size!r}")

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> MemorySize:
        """A MemorySize of `mebi_bytes` MiB.

        Args:
            mebi_bytes: MiB.

        Returns:
            The MemorySize.
        """
        return MemorySize(int(mebi_bytes) << 20)

    @staticmethod
    def parse(text: str) -> MemorySize:
        """Flink's syntax: a number and an optional unit (`512`, `64 kb`, `100m`, `1 gb`)."""
        raw = str(text).strip().lower()
        digits = raw.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
        unit = raw[len(digits) :].strip() or "b"
        if not digits.isdigit() or unit not in _UNITS:
            raise InvalidJobError(f"cannot read {text!r} as a memory size; write e.g. '512 mb' or '1g'")
        return MemorySize(int(digits) * _UNITS[unit])

    def get_bytes(self) -> int:
        """The size in whole bytes."""
        return self.bytes_size

    def get_kibi_bytes(self) -> int:
        """The size in whole KiB."""
        return self.bytes_size >> 10

    def get_mebi_bytes(self) -> int:
        """The size in whole MiB."""
        return self.bytes_size >> 20

    def get_gibi_bytes(self) -> int:
        """The size in whole GiB."""
        return self.bytes_size >> 30

    def get_tebi_bytes(self) -> int:
        """The size in whole TiB."""
        return self.bytes_size >> 40

    def add(self, other: MemorySize) -> MemorySize:
        """The sum of two sizes.

        Args:
            other: The other size.

        Returns:
            A new MemorySize.
        """
        return MemorySize(self.bytes_size + other.bytes_size)

    def subtract(self, other: MemorySize) -> MemorySize:
        """The difference of two sizes.

        Args:
            other: The size to subtract.

        Returns:
            A new MemorySize.

        Raises:
            InvalidJobError: the result would be negative.
        """
        if other.bytes_size > self.bytes_size:
            raise InvalidJobError(f"cannot subtract {other} from {self}: a memory size is never negative")
        return MemorySize(self.bytes_size - other.bytes_size)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MemorySize):
            return NotImplemented
        return self.bytes_size < other.bytes_size

    def __str__(self) -> str:
        for unit, shift in (("tb", 40), ("gb", 30), ("mb", 20), ("kb", 10)):
            if self.bytes_size and self.bytes_size % (1 << shift) == 0:
                return f"{self.bytes_size >> shift} {unit}"
        return f"{self.bytes_size} bytes"


MemorySize.ZERO = MemorySize(0)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class SlotSharingGroup:
    """A named slot sharing group, optionally with resources (PyFlink's `SlotSharingGroup`): operators in
    one group may share task slots; a job needs, per group, as many slots as its highest parallelism. The
    resources are recorded and shown, not enforced.
    """

    name: str
    cpu_cores: float | None = None
    task_heap_memory: MemorySize | None = None
    task_off_heap_memory: MemorySize | None = None
    managed_memory: MemorySize | None = None
    external_resources: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidJobError(f"a slot sharing group needs a non-empty name, got {self.name!r}")

    def __hash__(self) -> int:
        return hash((self.name, self.cpu_cores, self.task_heap_memory))

    def get_name(self) -> str:
        """The group's name."""
        return self.name

    def get_cpu_cores(self) -> float | None:
        """The CPU cores asked for, or None."""
        return self.cpu_cores

    def get_task_heap_memory(self) -> MemorySize | None:
        """The task heap memory asked for, or None."""
        return self.task_heap_memory

    def get_task_off_heap_memory(self) -> MemorySize | None:
        """The task off-heap memory asked for, or None."""
        return self.task_off_heap_memory

    def get_managed_memory(self) -> MemorySize | None:
        """The managed memory asked for, or None."""
        return self.managed_memory

    def get_external_resources(self) -> dict[str, float]:
        """External resources asked for, by name."""
        return dict(self.external_resources)

    def has_resources(self) -> bool:
        """Whether any resource was asked for."""
        return self.cpu_cores is not None

    @staticmethod
    def builder(name: str) -> SlotSharingGroupBuilder:
        """A builder of a group called `name`.

        Args:
            name: The group's name.

        Returns:
            The builder (`set_cpu_cores`, `set_task_heap_memory_mb`, ..., `build()`).
        """
        return SlotSharingGroupBuilder(name)


def _memory(value: Any, what: str) -> MemorySize:
    if not isinstance(value, MemorySize):
        raise InvalidJobError(f"{what} takes a MemorySize (e.g. MemorySize.of_mebi_bytes(100)), got {value!r}")
    return value


def _mebi_bytes(value: Any, what: str) -> MemorySize:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidJobError(f"{what} takes a whole number of MiB >= 0, got {value!r}")
    return MemorySize.of_mebi_bytes(value)


class SlotSharingGroupBuilder:
    def __init__(self, name: str) -> None:
        self._name = name
        self._cpu: float | None = None
        self._heap: MemorySize | None = None
        self._off_heap: MemorySize | None = None
        self._managed: MemorySize | None = None
        self._external: dict[str, float] = {}

    def set_cpu_cores(self, cpu_cores: float) -> SlotSharingGroupBuilder:
        if isinstance(cpu_cores, bool) or not isinstance(cpu_cores, (int, float)) or cpu_cores <= 0:
            raise InvalidJobError(f"the cpu cores of a slot sharing group must be positive, got {cpu_cores!r}")
        self._cpu = float(cpu_cores)
        return self

    def set_task_heap_memory(self, task_heap_memory: MemorySize) -> SlotSharingGroupBuilder:
        memory = _memory(task_heap_memory, "set_task_heap_memory")
        if memory.bytes_size <= 0:
            raise InvalidJobError(f"the task heap memory of a slot sharing group must be positive, got {memory}")
        self._heap = memory
        return self

    def set_task_heap_memory_mb(self, task_heap_memory_mb: int) -> SlotSharingGroupBuilder:
        return self.set_task_heap_memory(_mebi_bytes(task_heap_memory_mb, "set_task_heap_memory_mb"))

    def set_task_off_heap_memory(self, task_off_heap_memory: MemorySize) -> SlotSharingGroupBuilder:
        self._off_heap = _memory(task_off_heap_memory, "set_task_off_heap_memory")
        return self

    def set_task_off_heap_memory_mb(self, task_off_heap_memory_mb: int) -> SlotSharingGroupBuilder:
        return self.set_task_off_heap_memory(_mebi_bytes(task_off_heap_memory_mb, "set_task_off_heap_memory_mb"))

    def set_managed_memory(self, managed_memory: MemorySize) -> SlotSharingGroupBuilder:
        self._managed = _memory(managed_memory, "set_managed_memory")
        return self

    def set_managed_memory_mb(self, managed_memory_mb: int) -> SlotSharingGroupBuilder:
        return self.set_managed_memory(_mebi_bytes(managed_memory_mb, "set_managed_memory_mb"))

    def set_external_resource(self, name: str, value: float) -> SlotSharingGroupBuilder:
        if not isinstance(name, str) or not name:
            raise InvalidJobError(f"an external resource needs a non-empty name, got {name!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise InvalidJobError(f"external resource {name!r} must be a positive amount, got {value!r}")
        self._external[name] = float(value)
        return self

    def build(self) -> SlotSharingGroup:
        """A group with unknown resources when none were set; with resources, CPU cores and task heap memory
        are required (Flink's rule)."""
        if self._cpu is not None and self._heap is not None:
            return SlotSharingGroup(
                self._name,
                self._cpu,
                self._heap,
                self._off_heap or MemorySize(0),
                self._managed or MemorySize(0),
                dict(self._external),
            )
        if any(v is not None for v in (self._cpu, self._heap, self._off_heap, self._managed)) or self._external:
            raise InvalidJobError(
                f"slot sharing group {self._name!r}: the cpu cores and task heap memory are required when "
                "specifying its resources; set both with positive values (set_cpu_cores, set_task_heap_memory_mb)"
            )
        return SlotSharingGroup(self._name)
