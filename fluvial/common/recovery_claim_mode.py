"""RecoveryClaimMode (Flink's `execution.state-recovery.claim-mode`): who owns the checkpoint or savepoint a job
starts from (`execution.savepoint.path`).

- NO_CLAIM (the default): the job never deletes, and never builds on, what it did not create. Its first
  checkpoint is self-contained (an incremental RocksDB backend uploads every file again), so the snapshot it
  started from stays restorable — by this job, or a second run from the same snapshot — until the user deletes
  it.
- CLAIM: the job takes ownership. The snapshot joins the job's retained checkpoints as if the job had taken it:
  its first incremental checkpoint builds on the snapshot's shared files (reference-counted with the job's own)
  and once newer checkpoints subsume it, its files are deleted. Restoring from it again afterwards fails.
Failovers within one job always restore from the job's own checkpoints, which it owns in either mode.
"""

from __future__ import annotations

import enum


class RecoveryClaimMode(enum.Enum):
    NO_CLAIM = "NO_CLAIM"
    CLAIM = "CLAIM"

    @staticmethod
    def parse(raw: str) -> RecoveryClaimMode:
        value = raw.strip().upper()
        if value == "LEGACY":
            raise ValueError("LEGACY is deprecated in Flink and not supported: use NO_CLAIM (the default) or CLAIM")
        try:
            return RecoveryClaimMode(value)
        except ValueError:
            raise ValueError("expected NO_CLAIM or CLAIM") from None
