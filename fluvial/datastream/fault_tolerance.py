"""FaultTolerance: everything about surviving failures that a job carries from the API to the JobMaster —
checkpoint settings, the state backend, the restart strategy, and the savepoint to restore from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FaultTolerance:
    checkpoints: Any  # CheckpointSettings, or None when the job never configured checkpoints
    state_backend: Any  # HashMapStateBackend / EmbeddedRocksDBStateBackend description; None: the heap
    restart_strategy: Any  # the job's own RestartStrategyConfiguration, or None (the JobMaster resolves it)
    savepoint_path: str | None = None
    allow_non_restored_state: bool = False
    restart_configured: bool = False  # restart-strategy.* keys are set
    claim_mode: Any = None  # RecoveryClaimMode of the savepoint restore; None: NO_CLAIM

    @property
    def may_restart(self) -> bool:
        """Whether a restart strategy can apply at all (else nothing about restarts is even loaded)."""
        checkpointing = self.checkpoints is not None and self.checkpoints.enabled
        return self.restart_strategy is not None or self.restart_configured or checkpointing
