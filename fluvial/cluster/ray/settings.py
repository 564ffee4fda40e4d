"""RaySettings: the `ray.*` keys as one typed value, and the keys that mean nothing on Ray refused by name.

No key is accepted and then ignored: `local.*` keys describe the embedded cluster, and `taskmanager.bind-host`
cannot apply (each TaskManager actor listens on its own Ray node's address), so setting one with
`execution.target: ray` is an error naming it; `ray.*` keys set for another target are refused by that target's
executor (`refuse_ray_keys`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import ConfigurationError

RAY_PREFIX = "ray."
_NOT_ON_RAY = {
    "taskmanager.bind-host": "each TaskManager actor listens on the address of its Ray node",
    "local.number-taskmanager": "on Ray a job gets as many TaskManager actors as its slots need "
    "(taskmanager.numberOfTaskSlots each)",
    "local.taskmanager.mode": "on Ray every TaskManager is a Ray actor",
}


@dataclass(frozen=True, slots=True)
class RaySettings:
    address: str | None  # None: the cluster ray is initialised with, else "auto", else a local one
    placement_strategy: str  # Ray's name: PACK, SPREAD, STRICT_PACK, STRICT_SPREAD
    placement_timeout_s: float
    working_dir: str | None  # an absolute directory
    shared_filesystem: bool
    attached: bool = True  # False: the JobMaster runs as a detached actor (`detached.py`)

    @classmethod
    def from_configuration(cls, configuration: Any) -> RaySettings:
        for key in configuration.keys():
            reason = _NOT_ON_RAY.get(key)
            if reason is not None:
                raise ConfigurationError(f"'{key}' does not apply with execution.target ray ({reason}); remove it")
        address = configuration.get("ray.address")
        if address is not None and address.startswith("ray://"):
            raise ConfigurationError(
                f"ray.address '{address}' is a Ray Client address; fluvial's TaskManagers connect back to the "
                "JobMaster, which must run on a node of the cluster: run the job on a node and set ray.address "
                "to the head's host:port (or auto)"
            )
        working_dir = configuration.get("ray.working-dir")
        if working_dir is not None:
            working_dir = os.path.abspath(working_dir)
            if not os.path.isdir(working_dir):
                raise ConfigurationError(
                    f"ray.working-dir '{working_dir}' is not a directory; give the directory "
                    "to ship to the TaskManager actors, or remove the key"
                )
        return cls(
            address or None,
            configuration.get("ray.placement-strategy").upper(),
            configuration.get("ray.placement-timeout") / 1000,
            working_dir,
            configuration.get("ray.shared-filesystem"),
            configuration.get("execution.attached"),
        )


def refuse_ray_keys(configuration: Any, target: str) -> None:
    """For executors of other targets: a `ray.*` key would do nothing there."""
    keys = sorted(key for key in configuration.keys() if key.startswith(RAY_PREFIX))
    if keys:
        raise ConfigurationError(
            f"{', '.join(keys)} only apply with execution.target ray, and this job runs on "
            f"'{target}': set execution.target: ray, or remove them"
        )
