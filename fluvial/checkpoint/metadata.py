"""What a checkpoint is made of: state handles (where a blob of state lives), the state of each operator's
subtasks, and the metadata that ties one checkpoint together. Plain frozen data: storage writes and reads it
(fluvial.checkpoint.storage), the versioned `_metadata` format encodes it (fluvial.checkpoint.metadata_format).

In memory, a FileStateHandle's path is always a full URL. Only in `_metadata` are the paths of files inside the
checkpoint's own directory written relative to it, which is what makes a checkpoint or savepoint movable.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fluvial.common.errors import FluvialError, NonRecoverableError

CHECKSUM_ALGORITHM = "crc32"


# -- errors -------------------------------------------------------------------------------------------------------


class CorruptCheckpointError(NonRecoverableError):
    """Stored checkpoint data does not match its checksum or size, or is missing: the checkpoint cannot be used,
    and a restart would only read it again (a job whose restore meets it fails at once)."""


class CheckpointNotFoundError(FluvialError):
    """No completed checkpoint exists at the given location."""


class StateTooLargeError(FluvialError):
    """A state exceeds what the configured checkpoint storage accepts."""


def checksum(data: bytes | bytearray | memoryview) -> int:
    """The checksum stored in handles and metadata headers (CRC-32, unsigned)."""
    return zlib.crc32(data) & 0xFFFFFFFF


# -- handles and metadata -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ByteStreamStateHandle:
    """State carried inline: its bytes travel in the acknowledgement and live in the checkpoint metadata."""

    name: str
    data: bytes = field(repr=False)
    checksum: int

    @property
    def size(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"ByteStreamStateHandle(name={self.name!r}, size={len(self.data)}, checksum={self.checksum:08x})"


@dataclass(frozen=True, slots=True)
class FileStateHandle:
    """State in a file. `path` is a full fsspec URL (`file:///...`, `memory:///...`), readable from any process
    that has the same file system, so restoring never needs the storage object that wrote it. (In `_metadata`
    a file inside the checkpoint's directory is written relative to it and resolved again on reading.)"""

    path: str
    size: int
    checksum: int


StateHandle = ByteStreamStateHandle | FileStateHandle


@dataclass(frozen=True, slots=True)
class SubtaskState:
    """One operator's state in one subtask at one checkpoint.

    `keyed` and `operator`: handles of keyed and operator state blobs, private to this checkpoint. `shared`:
    handles written with `write_shared` (incremental RocksDB files) that later checkpoints may reference too;
    they are reference-counted by the CompletedCheckpointStore. `raw`: small values kept directly in the
    metadata (offsets, counters). `_metadata` is JSON, so they are JSON values: None, bool, int, float, str,
    lists and dicts with str keys (a tuple comes back as a list); anything else is refused when the checkpoint
    is written — put it in operator state instead.
    """

    keyed: list[StateHandle] = field(default_factory=list)
    operator: list[StateHandle] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    shared: list[StateHandle] = field(default_factory=list)
    finished: bool = False
    """The subtask had FINISHED when the checkpoint was taken (FLIP-147): it holds no state, and restores as a
    subtask with nothing left to do (its source has no splits left). An operator whose every subtask is
    finished is fully finished (Flink's FullyFinishedOperatorState)."""
    input_channel: list[StateHandle] = field(default_factory=list)
    """The in-flight data of an unaligned checkpoint (Flink's input channel state): the items queued on the
    subtask's input channels that it had not processed when it snapshot, replayed before new input on restore.
    Kept on the chain's head operator; only a restore at the same parallelism can use it."""

    def handles(self) -> Iterator[StateHandle]:
        yield from self.keyed
        yield from self.operator
        yield from self.shared
        yield from self.input_channel


@dataclass(frozen=True, slots=True)
class OperatorState:
    """One operator's state over all its subtasks. `max_parallelism` fixes its key groups for restore."""

    operator_id: str
    parallelism: int
    max_parallelism: int
    subtask_states: dict[int, SubtaskState] = field(default_factory=dict)

    @property
    def fully_finished(self) -> bool:
        """Every subtask of the operator had finished (FLIP-147)."""
        states = self.subtask_states
        return len(states) == self.parallelism and all(state.finished for state in states.values())


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """Everything needed to restore a job from one checkpoint; written last, so its presence means complete."""

    checkpoint_id: int
    timestamp: int
    job_id: str
    is_savepoint: bool = False
    operator_states: dict[str, OperatorState] = field(default_factory=dict)

    def handles(self) -> Iterator[StateHandle]:
        for operator in self.operator_states.values():
            for subtask in operator.subtask_states.values():
                yield from subtask.handles()

    def shared_handles(self) -> set[StateHandle]:
        return {h for op in self.operator_states.values() for s in op.subtask_states.values() for h in s.shared}
