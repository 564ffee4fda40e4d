"""Completed checkpoints the JobMaster keeps for recovery, and the reference counts of their shared files.

Retention: the newest `num_retained` checkpoints are kept. Adding one more subsumes the oldest: its private
files are discarded through the storage — unless it is a savepoint, whose files belong to the user. A snapshot
of another run that the job claimed (RecoveryClaimMode.CLAIM) is retained like its own and discarded at its
own location.

Shared state (incremental RocksDB): a file in the shared directory may be referenced by several checkpoints.
Each checkpoint's references are registered under its id; a file is discarded when the last checkpoint that
refers to it is released — subsumed, or aborted while pending. So:
1. when a task acknowledges checkpoint n with shared handles, `register_shared(n, handles)` (a pending checkpoint
   holds its references, so a file it reuses cannot vanish under it);
2. when checkpoint n completes, `add(completed)` (its metadata's shared handles are registered again, harmlessly);
3. when checkpoint n is aborted, `release_shared(n)`: files only it used are discarded.
A savepoint's references are never released (a savepoint should not use shared files at all; if it does, the
files outlive it rather than break it).

One thread (the CheckpointCoordinator's) owns a store; nothing here locks.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass

from fluvial.checkpoint.storage import (
    CheckpointMetadata,
    CheckpointStorageAccess,
    StateHandle,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CompletedCheckpoint:
    """A checkpoint whose metadata is written: `metadata_location` is what a restore reads."""

    checkpoint_id: int
    timestamp: int
    metadata_location: str
    metadata: CheckpointMetadata
    is_savepoint: bool = False
    claimed: bool = False
    """A checkpoint or savepoint of another run that this job took ownership of (RecoveryClaimMode.CLAIM): it is
    discarded at its own location once subsumed, like the job's own checkpoints."""


class CompletedCheckpointStore:
    def __init__(self, num_retained: int, storage: CheckpointStorageAccess) -> None:
        if isinstance(num_retained, bool) or not isinstance(num_retained, int) or num_retained < 1:
            raise ValueError(
                f"num_retained must be an integer >= 1, got {num_retained!r} (state.checkpoints.num-retained)"
            )
        self.num_retained = num_retained
        self._storage = storage
        self._retained: deque[CompletedCheckpoint] = deque()
        self._references: dict[int, set[StateHandle]] = {}
        self._counts: Counter[StateHandle] = Counter()
        self._pinned: set[int] = set()

    # -- retention ----------------------------------------------------------------------------------------------

    def add(self, checkpoint: CompletedCheckpoint) -> list[CompletedCheckpoint]:
        """Retain `checkpoint` (ids must increase) and return the checkpoints it subsumed, oldest first."""
        latest = self.latest()
        if latest is not None and checkpoint.checkpoint_id <= latest.checkpoint_id:
            raise ValueError(
                f"checkpoint {checkpoint.checkpoint_id} completed after checkpoint {latest.checkpoint_id}: an older "
                "pending checkpoint must be aborted (SUBSUMED) once a newer one completes, not added"
            )
        self._retained.append(checkpoint)
        self.register_shared(checkpoint.checkpoint_id, checkpoint.metadata.shared_handles())
        if checkpoint.is_savepoint:
            self._pinned.add(checkpoint.checkpoint_id)
        subsumed: list[CompletedCheckpoint] = []
        while len(self._retained) > self.num_retained:
            oldest = self._retained.popleft()
            self._drop(oldest)
            subsumed.append(oldest)
        return subsumed

    def latest(self) -> CompletedCheckpoint | None:
        return self._retained[-1] if self._retained else None

    def all(self) -> list[CompletedCheckpoint]:
        """The retained checkpoints, oldest first."""
        return list(self._retained)

    def __len__(self) -> int:
        return len(self._retained)

    def shutdown(self, discard: bool) -> None:
        """At job end: with `discard` (cancelled and not retained), remove every checkpoint but savepoints;
        otherwise keep the files for a later restore. The store is empty afterwards either way."""
        while self._retained:
            checkpoint = self._retained.popleft()
            if discard:
                self._drop(checkpoint)
        if not discard:
            self._references.clear()
            self._counts.clear()

    def _drop(self, checkpoint: CompletedCheckpoint) -> None:
        if checkpoint.claimed:
            from fluvial.checkpoint.storage import discard_checkpoint_at

            logger.info(
                "discarding checkpoint %d at %s: this job claimed it and newer checkpoints subsume it",
                checkpoint.checkpoint_id,
                checkpoint.metadata_location,
            )
            self._quietly(
                f"claimed checkpoint {checkpoint.metadata_location}",
                discard_checkpoint_at,
                checkpoint.metadata_location,
            )
        elif not checkpoint.is_savepoint:
            self._quietly(
                f"checkpoint {checkpoint.checkpoint_id}", self._storage.discard_checkpoint, checkpoint.checkpoint_id
            )
        self.release_shared(checkpoint.checkpoint_id)

    # -- shared state -------------------------------------------------------------------------------------------

    def register_shared(self, checkpoint_id: int, handles: Iterable[StateHandle]) -> None:
        """Record that checkpoint `checkpoint_id` (pending or completed) refers to `handles`. Idempotent."""
        references = self._references.setdefault(checkpoint_id, set())
        for handle in handles:
            if handle not in references:
                references.add(handle)
                self._counts[handle] += 1

    def release_shared(self, checkpoint_id: int) -> list[StateHandle]:
        """Drop checkpoint `checkpoint_id`'s references; discard and return the handles nobody refers to any more.
        A savepoint's references stay (see the module docstring)."""
        if checkpoint_id in self._pinned:
            return []
        discarded: list[StateHandle] = []
        for handle in self._references.pop(checkpoint_id, set()):
            self._counts[handle] -= 1
            if self._counts[handle] <= 0:
                del self._counts[handle]
                self._quietly(f"shared state {handle!r}", self._storage.discard_shared, handle)
                discarded.append(handle)
        return discarded

    def shared_reference_count(self, handle: StateHandle) -> int:
        return self._counts.get(handle, 0)

    @staticmethod
    def _quietly(what: str, discard, *args) -> None:  # type: ignore[no-untyped-def]
        """A file that cannot be removed is leaked, not fatal: the job's state is intact either way."""
        try:
            discard(*args)
        except Exception:  # cleanup must never fail the job
            logger.warning("could not discard %s; remove it by hand", what, exc_info=True)
