"""Slots on Ray: how many TaskManager actors a job gets, the placement group that reserves their CPUs before
anything deploys, and the storage every node must see.

A TaskManager actor holds `taskmanager.numberOfTaskSlots` slots (default 1, Flink's default), and a job gets as
many TaskManagers as its slots need (Flink's active resource managers do the same). A Ray actor lives in one
placement-group bundle, so TaskManager i is bundle i, of one CPU per slot: Ray reserves every bundle of the group
at once or none (a gang reservation), and keeps a bundle's CPUs for the job across TaskManager replacements.
The strategy (`ray.placement-strategy`, default SPREAD) places bundles over nodes. Slot sharing and co-location
keep their meaning inside a TaskManager: the subtasks that share a slot run in its one process (`slots.py`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import ConfigurationError, ResourceError

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TaskManagerLayout:
    count: int
    slots_each: int

    @classmethod
    def for_job(cls, required_slots: int, slots_per_task_manager: int | None) -> TaskManagerLayout:
        slots_each = slots_per_task_manager or 1
        return cls(max(1, math.ceil(required_slots / slots_each)), slots_each)

    @property
    def slots(self) -> int:
        return self.count * self.slots_each

    @property
    def bundles(self) -> list[dict[str, float]]:
        return [{"CPU": float(self.slots_each)} for _ in range(self.count)]

    def describe(self) -> str:
        return (
            f"{self.count} TaskManager{'s' if self.count != 1 else ''} of {self.slots_each} "
            f"slot{'s' if self.slots_each != 1 else ''}, each a placement-group bundle of {self.slots_each} "
            f"CPU{'s' if self.slots_each != 1 else ''}"
        )


def reserve_slots(layout: TaskManagerLayout, strategy: str, timeout_s: float, name: str) -> Any:
    """The job's placement group, ready; ResourceError naming the slots and Ray's CPUs when Ray cannot reserve it
    within `timeout_s` (the group is removed then: nothing stays reserved)."""
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    group = placement_group(layout.bundles, strategy=strategy, name=name)
    ready, _ = ray.wait([group.ready()], timeout=timeout_s)
    if ready:
        logger.info("Ray reserved %d task slots (%s, %s)", layout.slots, layout.describe(), strategy)
        return group
    remove_placement_group(group)
    raise ResourceError(
        f"the job needs {layout.slots} task slot{'s' if layout.slots != 1 else ''} on Ray ({layout.describe()}, "
        f"strategy {strategy}), but Ray did not reserve them within {timeout_s:g} s: {_cpus_of_ray(ray)}. Lower "
        "the parallelism, add CPUs or nodes to the Ray cluster, or raise ray.placement-timeout"
    )


def _cpus_of_ray(ray: Any) -> str:
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    per_node = ", ".join(f"{node['NodeManagerAddress']}: {node['Resources'].get('CPU', 0):g}" for node in nodes)
    total = sum(node["Resources"].get("CPU", 0) for node in nodes)
    free = ray.available_resources().get("CPU", 0)
    return f"the cluster has {total:g} CPUs ({free:g} free now) on {len(nodes)} node(s) ({per_node})"


def alive_nodes() -> int:
    import ray

    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]  # Ray's nodes() is not annotated
    return sum(1 for node in nodes if node.get("Alive"))


def check_storage_is_shared(job_graph: Any, nodes: int, shared_filesystem: bool) -> None:
    """Checkpoints and savepoints must be readable by every TaskManager, wherever Ray placed it: a replacement
    on another node restores what a dead one wrote. A local path is not, when the cluster has several nodes,
    unless `ray.shared-filesystem` says it is (`memory://` is refused for every kind of TaskManager process:
    `shipping.check_locations_reach_task_managers`)."""
    from fluvial.cluster.shipping_checks import storage_locations
    from fluvial.datastream.connectors.file_systems import scheme

    for what, path in storage_locations(job_graph):
        if scheme(path) in ("file", "local") and nodes > 1 and not shared_filesystem:
            raise ConfigurationError(
                f"{what} '{path}' is a local path, and the Ray cluster has {nodes} nodes: a TaskManager on another "
                "node could neither write there nor restore from it after a failover. Use storage every node "
                "reaches (an fsspec URL such as s3://bucket/checkpoints), or, if the path is on a filesystem "
                "every node mounts (NFS), set ray.shared-filesystem: true"
            )
