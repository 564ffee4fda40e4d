"""Pipeline (Flink's Pipeline): a job as the environment describes it — its transformations and its settings —
handed by `execute()` to a PipelineExecutor, which compiles it (StreamGraph → JobGraph) and runs it. Inert data:
nothing here runs or compiles anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluvial.datastream import transformations as t


@dataclass(frozen=True)
class Pipeline:
    transformations: dict[int, t.Transformation]
    sink_ids: tuple[int, ...]
    job_name: str
    default_parallelism: int
    default_max_parallelism: int | None
    chaining_enabled: bool
    execution_config: Any
    configuration: Any
    fault_tolerance: Any
    batch: bool = False  # runs in BATCH execution mode (resolved from execution.runtime-mode by the environment)

    @property
    def execution_target(self) -> str:
        configured = self.configuration.get("execution.target") if self.configuration is not None else None
        return configured or "local"
