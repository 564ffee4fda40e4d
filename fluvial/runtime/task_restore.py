"""What a task restores from the checkpoint or savepoint its deployment names, before its operators open: each
operator's state, a source's split positions, and the in-flight data of an unaligned checkpoint.

Each function reads the deployment (`TaskSpec.restore`: operator id -> where its state is) and hands back what the
task then gives its chain, its source input or its input channels (`runtime.task`, step 1)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from fluvial.common.errors import StateError
from fluvial.common.task_info import TaskInfo
from fluvial.runtime.channels import channel_state_key
from fluvial.runtime.deployment import TaskSpec
from fluvial.runtime.input_processor import NetworkInput

if TYPE_CHECKING:
    from fluvial.checkpoint.snapshots import OperatorRestore

logger = logging.getLogger(__name__)


def load_restores(spec: TaskSpec, info: TaskInfo) -> dict[str, OperatorRestore]:
    """Operator id -> OperatorRestore, for the operators of this chain the restore assignments name."""
    restore = spec.restore
    if not restore:
        return {}
    from fluvial.runtime.checkpointing import SubtaskCheckpointCoordinator

    return {
        operator_id: SubtaskCheckpointCoordinator.load(assignment, operator_id, info)
        for operator_id, assignment in restore.items()
    }


def restored_source_splits(
    spec: TaskSpec, head_operator_id: str, restores: dict[str, OperatorRestore]
) -> list[Any] | None:
    """A restored source's split positions (taken out of its head operator's state); None for a fresh start."""
    if not spec.vertex.is_source or not spec.restore:
        return None
    from fluvial.runtime.checkpointing import SOURCE_SPLITS

    head = restores.get(head_operator_id)
    if head is None:
        return [] if head_operator_id in spec.restore else None
    return head.operator_state.pop(SOURCE_SPLITS, [])


def replay_channel_state(task_name: str, spec: TaskSpec, task_input: Any, head: OperatorRestore | None) -> None:
    """The in-flight data of the unaligned checkpoint the task restores from (its head operator's `head`) goes
    in front of its channels. Data for a channel this task does not have would be lost: that fails the restore."""
    if head is None or not head.channel_state:
        return
    positions = {channel_state_key(input_spec.channel_id): index for index, input_spec in enumerate(spec.inputs)}
    unknown = sorted(set(head.channel_state) - set(positions))
    if unknown or not isinstance(task_input, NetworkInput):
        raise StateError(
            f"{task_name} restores in-flight data of input channels it does not have "
            f"({', '.join(unknown) or 'a source has no input channels'}): restore the unaligned "
            "checkpoint with the job's original topology and parallelism, or restore a savepoint"
        )
    for key, items in head.channel_state.items():
        task_input.replay(positions[key], items)
    logger.debug("%s replays the in-flight data of %d channel(s)", task_name, len(head.channel_state))
