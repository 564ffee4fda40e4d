"""FaultTolerance: everything about surviving failures that a job carries from the API to the JobMaster —
checkpoint settings, the state backend, the restart strategy, and the savepoint to restore from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FaultTolerance:
    checkpoints: Any  # CheckpointSettings (its `enabled` says whether checkpoints are taken)
    state_backend: Any  # HashMapStateBackend / EmbeddedRocksDBStateBackend description
    restart_strategy: Any  # a resolved RestartStrategyConfiguration
    savepoint_path: str | None = None
    allow_non_restored_state: bool = False
