"""Which stored state each subtask restores from (DESIGN 2.3): operators are matched by id (their uid, else
their position in the job); keyed state follows key groups, so a job restores at another parallelism by
giving each new subtask the old files whose key-group ranges overlap its own; operator state is split among
the new subtasks by the task itself.

Finished subtasks (FLIP-147) hold no state: a subtask restored from one has nothing left to do (a source gets
no splits, so it ends at once, and with it everything downstream that only it fed), and an operator whose
every subtask had finished restores finished at any parallelism."""

from __future__ import annotations

import logging
from typing import Any

from fluvial.checkpoint.snapshots import BROADCAST_PREFIX, UNION_PREFIX, RestoreAssignment
from fluvial.common.errors import StateError
from fluvial.common.key_groups import key_group_range_for_operator

logger = logging.getLogger(__name__)


def _overlaps(a: range, b: range) -> bool:
    return a.start < b.stop and b.start < a.stop


# (vertex id, subtask index) -> operator id -> what that operator restores from: a job's whole restore.
JobRestore = dict[tuple[int, int], dict[str, RestoreAssignment]]


def assign_restore(
    metadata: Any, job_graph: Any, allow_non_restored_state: bool = False, location: str = "", owned: bool = False
) -> JobRestore:
    """(vertex id, subtask index) → operator id → RestoreAssignment, for every subtask of `job_graph`.
    `owned`: the checkpoint is the job's own (a failover restores from it), so backends may build on its files.

    Raises StateError for state that matches no operator (unless allowed) and for a changed max parallelism of
    keyed state, naming the operator and the fix."""
    operator_states = dict(metadata.operator_states)
    unaligned = any(
        state.input_channel for operator in operator_states.values() for state in operator.subtask_states.values()
    )
    matched: set[str] = set()
    result: dict[tuple[int, int], dict[str, RestoreAssignment]] = {}
    for vertex in job_graph.vertices:
        for node in vertex.nodes:
            operator_id = node.operator_id
            old = operator_states.get(operator_id)
            if old is None:
                continue
            matched.add(operator_id)
            if old.fully_finished:
                logger.info(
                    "operator '%s' (%s) had finished when checkpoint %d was taken: it restores finished",
                    node.name,
                    operator_id,
                    metadata.checkpoint_id,
                )
            has_keyed = any(state.keyed for state in old.subtask_states.values())
            if has_keyed and old.max_parallelism != node.max_parallelism:
                raise StateError(
                    f"operator '{node.name}' ({operator_id}) was checkpointed with max parallelism "
                    f"{old.max_parallelism} but now has {node.max_parallelism}: keyed state is split into that "
                    "many key groups, so max parallelism cannot change between a checkpoint and its restore; "
                    f"set_max_parallelism({old.max_parallelism}) on it"
                )
            if unaligned and old.parallelism != vertex.parallelism:
                raise StateError(
                    f"checkpoint {metadata.checkpoint_id} is an unaligned checkpoint: it holds in-flight data "
                    f"between subtasks, and operator '{node.name}' ({operator_id}) ran at parallelism "
                    f"{old.parallelism} then but at {vertex.parallelism} now, so that data has no place to go. "
                    f"Restore it at parallelism {old.parallelism}, or take a savepoint of the job (savepoints are "
                    "always aligned) and restore that at the new parallelism"
                )
            for index in range(vertex.parallelism):
                result.setdefault((vertex.id, index), {})[operator_id] = subtask_assignment(
                    old, metadata.checkpoint_id, vertex.parallelism, index, owned
                )
    unmatched = sorted(set(operator_states) - matched)
    if unmatched and not allow_non_restored_state:
        raise StateError(
            f"the state of operator(s) {', '.join(unmatched)} in {location or 'the checkpoint'} matches no "
            "operator of this job: give the operators the same uid(...) they had, or set "
            "execution.savepoint.ignore-unclaimed-state (allow_non_restored_state) to drop that state"
        )
    return result


def share_of_operator_state(
    per_old_subtask: list[list[dict[str, list[Any]]]], old_parallelism: int, subtask_index: int, parallelism: int
) -> dict[str, list[Any]]:
    """One new subtask's share of an operator's list state (Flink's round-robin redistribution).

    `per_old_subtask[j]`: the state dicts old subtask j wrote.
    - Union lists (names starting with "union:") are given whole to every subtask, at any parallelism (as in
      Flink: a failover at the same parallelism too).
    - Broadcast states (names starting with "broadcast:") are identical on every old subtask: each new subtask
      takes one copy — old subtask `subtask_index % old_parallelism`'s, or the next one's that has it.
    - Other lists: at equal parallelism a subtask takes its own old subtask's; otherwise each name's items of all
      old subtasks are dealt round robin."""
    same_parallelism = old_parallelism == parallelism
    broadcast: dict[str, list[Any]] = {}
    count = len(per_old_subtask)
    for offset in range(count):
        for state in per_old_subtask[(subtask_index + offset) % count]:
            for name, items in state.items():
                if name.startswith(BROADCAST_PREFIX):
                    broadcast.setdefault(name, list(items))
    merged: dict[str, list[Any]] = {}
    for index, states in enumerate(per_old_subtask):
        for state in states:
            for name, items in state.items():
                if name.startswith(BROADCAST_PREFIX):
                    continue
                if not same_parallelism or index == subtask_index or name.startswith(UNION_PREFIX):
                    merged.setdefault(name, []).extend(items)
    if same_parallelism:
        merged.update(broadcast)
        return merged
    shares = {
        name: list(items) if name.startswith(UNION_PREFIX) else items[subtask_index::parallelism]
        for name, items in merged.items()
    }
    shares.update(broadcast)
    return shares


def subtask_assignment(
    old: Any, checkpoint_id: int, parallelism: int, subtask_index: int, owned: bool = False
) -> RestoreAssignment:
    """What new subtask `subtask_index` of `parallelism` restores from an operator's stored state `old` (an
    OperatorState): the keyed state files of the old subtasks whose key groups overlap its own, and every old
    subtask's operator state files (the subtask takes its share when it loads them)."""
    own = key_group_range_for_operator(old.max_parallelism, parallelism, subtask_index)
    keyed = tuple(
        handle
        for j, state in sorted(old.subtask_states.items())
        if _overlaps(own, key_group_range_for_operator(old.max_parallelism, old.parallelism, j))
        for handle in state.keyed
    )
    operator_handles = tuple(
        tuple(old.subtask_states[j].operator) if j in old.subtask_states else () for j in range(old.parallelism)
    )
    own_state = old.subtask_states.get(subtask_index)
    channel_handles = tuple(own_state.input_channel) if own_state is not None and old.parallelism == parallelism else ()
    return RestoreAssignment(checkpoint_id, keyed, operator_handles, old.parallelism, owned, channel_handles)
