"""What an operator's snapshot holds between the synchronous and asynchronous parts of a checkpoint, and what
a restoring operator receives. Plain data: the runtime fills them; storage serializes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fluvial.checkpoint.metadata import StateHandle

UNION_PREFIX = "union:"
BROADCAST_PREFIX = "broadcast:"


@dataclass
class OperatorSnapshot:
    """The frozen state of one operator of one subtask (the synchronous part's result).

    `keyed` is the keyed backend's PendingKeyedSnapshot (written in the asynchronous part), `timers` the
    operator's timers by key group, and `operator_state` named lists of picklable items: a list is split among
    subtasks on rescaling; a name starting with "union:" is given whole to every subtask (Flink's union list
    state); a name starting with "broadcast:" is a broadcast state, the same on every subtask, so each new
    subtask takes one old subtask's copy."""

    operator_id: str
    keyed: Any = None
    timers: dict[int, Any] | None = None
    operator_state: dict[str, list[Any]] = field(default_factory=dict)


@dataclass
class OperatorRestore:
    """What one operator of one subtask restores from: keyed state handles that may hold its key groups (the
    backend keeps only its own range), timers by key group, and its share of the operator state. `owned`: the
    state is this job's own latest checkpoint (a failover), not another run's checkpoint or savepoint."""

    operator_id: str
    keyed: list[Any] = field(default_factory=list)
    timers: dict[int, Any] = field(default_factory=dict)
    operator_state: dict[str, list[Any]] = field(default_factory=dict)
    checkpoint_id: int = 0
    owned: bool = False
    reader: Any = None  # reads the files keyed handles refer to (StateReader)
    channel_state: dict[str, list[Any]] = field(default_factory=dict)  # input channel key → in-flight items
    sources: list[str] = field(default_factory=list)  # where the keyed handles were read from (for errors)


@dataclass(frozen=True)
class RestoreAssignment:
    """Which stored state one operator of one subtask restores from (chosen by the JobMaster).

    `keyed_handles`: the old subtasks' keyed state files that may hold this subtask's key groups.
    `operator_handles`: every old subtask's operator state files, in old subtask order; the subtask takes its
    share (its own old subtask's at equal parallelism, a round-robin share of the union otherwise; union lists
    whole)."""

    checkpoint_id: int
    keyed_handles: tuple[StateHandle, ...]
    operator_handles: tuple[tuple[StateHandle, ...], ...]
    old_parallelism: int
    owned: bool = False
    input_channel_handles: tuple[
        StateHandle, ...
    ] = ()  # the in-flight data of an unaligned checkpoint (same parallelism only)
