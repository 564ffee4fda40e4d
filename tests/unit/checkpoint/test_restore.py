"""Which state each subtask restores from (`checkpoint/restore.py`): operators matched by id, state that matches
no operator refused (or dropped when allowed), max parallelism fixed for keyed state, keyed files chosen by
key-group overlap at any new parallelism, and operator lists dealt out (union lists given whole)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.checkpoint.restore import assign_restore, share_of_operator_state, subtask_assignment
from fluvial.checkpoint.storage import CheckpointMetadata, OperatorState, SubtaskState
from fluvial.common.errors import StateError
from fluvial.common.key_groups import key_group_range_for_operator
from fluvial.datastream import StreamExecutionEnvironment

FAST = settings(max_examples=150, deadline=None)


def keyed_state(
    operator_id: str, parallelism: int, max_parallelism: int = 128, with_operator: bool = False
) -> OperatorState:
    """Old subtask j wrote keyed file `<op>-keyed-j` (and operator file `<op>-op-j`)."""
    return OperatorState(
        operator_id,
        parallelism,
        max_parallelism,
        {
            j: SubtaskState(
                keyed=[f"{operator_id}-keyed-{j}"], operator=[f"{operator_id}-op-{j}"] if with_operator else []
            )
            for j in range(parallelism)
        },
    )


def metadata(*operators: OperatorState, checkpoint_id: int = 7) -> CheckpointMetadata:
    return CheckpointMetadata(checkpoint_id, 0, "old-job", False, {op.operator_id: op for op in operators})


def job(parallelism: int = 2, max_parallelism: int | None = None):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    if max_parallelism is not None:
        env.set_max_parallelism(max_parallelism)
    env.from_collection([("a", 1)]).uid("source").key_by(lambda v: v[0]).reduce(lambda a, b: b).uid("reduce").add_sink(
        lambda v: None
    ).uid("sink")
    graph = env.get_job_graph()
    reduce_vertex = next(v for v in graph.vertices if "reduce" in [n.operator_id for n in v.nodes])
    return graph, reduce_vertex


# -- matching operators ---------------------------------------------------------------------------------------------


def test_every_subtask_of_a_matched_operator_gets_an_assignment_and_others_none() -> None:
    graph, vertex = job(parallelism=2)
    assignments = assign_restore(metadata(keyed_state("reduce", 2)), graph, owned=True)
    assert set(assignments) == {(vertex.id, 0), (vertex.id, 1)}
    for index in range(2):
        assignment = assignments[(vertex.id, index)]["reduce"]
        assert assignment.keyed_handles == (f"reduce-keyed-{index}",)
        assert assignment.checkpoint_id == 7 and assignment.owned and assignment.old_parallelism == 2


def test_state_that_matches_no_operator_is_refused_naming_it_and_the_fix() -> None:
    graph, _ = job()
    with pytest.raises(StateError) as info:
        assign_restore(metadata(keyed_state("reduce", 2), keyed_state("gone", 1)), graph, location="/sp/1")
    message = str(info.value)
    assert "gone" in message and "/sp/1" in message and "uid(" in message and "ignore-unclaimed-state" in message


def test_unmatched_state_is_dropped_when_allowed() -> None:
    graph, vertex = job()
    assignments = assign_restore(
        metadata(keyed_state("reduce", 2), keyed_state("gone", 1)), graph, allow_non_restored_state=True
    )
    assert {operator for per_subtask in assignments.values() for operator in per_subtask} == {"reduce"}


def test_keyed_state_cannot_change_max_parallelism() -> None:
    graph, _ = job(max_parallelism=64)
    with pytest.raises(StateError, match=r"max parallelism 128 but now has 64.*set_max_parallelism\(128\)"):
        assign_restore(metadata(keyed_state("reduce", 2)), graph)


def test_operator_state_alone_may_change_max_parallelism() -> None:
    graph, _ = job(max_parallelism=64)
    state = OperatorState("reduce", 1, 128, {0: SubtaskState(operator=["lists"])})
    assignments = assign_restore(metadata(state), graph)
    assert all(a["reduce"].operator_handles == (("lists",),) for a in assignments.values())


# -- keyed state by key group ---------------------------------------------------------------------------------------


def test_rescaling_from_two_to_three_gives_each_subtask_the_files_overlapping_its_key_groups() -> None:
    old = keyed_state("op", 2, max_parallelism=12)  # old ranges 0-5, 6-11; new ranges 0-3, 4-7, 8-11
    handles = [subtask_assignment(old, 1, 3, index).keyed_handles for index in range(3)]
    assert handles == [("op-keyed-0",), ("op-keyed-0", "op-keyed-1"), ("op-keyed-1",)]


@FAST
@given(max_parallelism=st.integers(1, 64), old=st.integers(1, 16), new=st.integers(1, 16))
def test_keyed_files_cover_every_key_group_and_only_overlapping_ones_are_read(max_parallelism, old, new) -> None:
    old, new = min(old, max_parallelism), min(new, max_parallelism)
    state = keyed_state("op", old, max_parallelism)
    old_ranges = {f"op-keyed-{j}": key_group_range_for_operator(max_parallelism, old, j) for j in range(old)}
    for index in range(new):
        own = key_group_range_for_operator(max_parallelism, new, index)
        chosen = subtask_assignment(state, 1, new, index).keyed_handles
        covered = {group for handle in chosen for group in old_ranges[handle]}
        assert set(own) <= covered, "a key group of this subtask would be lost"
        assert all(set(old_ranges[handle]) & set(own) for handle in chosen), "a file without its key groups"


def test_every_old_subtasks_operator_files_are_handed_over_in_old_subtask_order() -> None:
    state = keyed_state("op", 3, with_operator=True)
    del state.subtask_states[1]  # old subtask 1 acknowledged no state
    assignment = subtask_assignment(state, 4, 2, 0)
    assert assignment.operator_handles == (("op-op-0",), (), ("op-op-2",))


# -- operator state shares -------------------------------------------------------------------------------------------


def test_at_equal_parallelism_a_subtask_takes_its_own_old_lists_and_every_union_list() -> None:
    per_old = [[{"items": [1, 2], "union:all": ["s0"]}], [{"items": [3]}, {"items": [4], "union:all": ["s1"]}]]
    assert share_of_operator_state(per_old, 2, 1, 2) == {"items": [3, 4], "union:all": ["s0", "s1"]}
    assert share_of_operator_state(per_old, 2, 0, 2) == {"items": [1, 2], "union:all": ["s0", "s1"]}


def test_a_new_subtask_without_an_old_one_starts_empty() -> None:
    assert share_of_operator_state([], 2, 1, 2) == {}


lists = st.lists(st.integers(), max_size=12)


@FAST
@given(per_old=st.lists(st.tuples(lists, lists), min_size=1, max_size=5), new=st.integers(1, 6))
def test_rescaled_lists_are_dealt_out_evenly_and_union_lists_given_whole(per_old, new) -> None:
    old = len(per_old)
    states = [[{"items": items, "union:seen": seen}] for items, seen in per_old]
    shares = [share_of_operator_state(states, old, index, new) for index in range(new)]
    everything = [item for items, _ in per_old for item in items]
    dealt = [share.get("items", []) for share in shares]
    assert Counter(item for share in dealt for item in share) == Counter(everything), "items lost or doubled"
    union = [item for _, seen in per_old for item in seen]
    assert all(share.get("union:seen", []) == union for share in shares), "union lists go whole to everyone"
    if old != new:
        assert max(map(len, dealt)) - min(map(len, dealt)) <= 1


# -- unaligned checkpoints: in-flight data ---------------------------------------------------------------------------


def unaligned_state(operator_id: str, parallelism: int) -> OperatorState:
    """Old subtask j wrote keyed file `<op>-keyed-j` and in-flight data `<op>-channel-j`."""
    return OperatorState(
        operator_id,
        parallelism,
        128,
        {
            j: SubtaskState(keyed=[f"{operator_id}-keyed-{j}"], input_channel=[f"{operator_id}-channel-{j}"])
            for j in range(parallelism)
        },
    )


def test_in_flight_data_goes_to_the_subtask_that_wrote_it_at_the_same_parallelism() -> None:
    graph, vertex = job(parallelism=2)
    assignments = assign_restore(metadata(unaligned_state("reduce", 2)), graph)
    for index in range(2):
        assert assignments[(vertex.id, index)]["reduce"].input_channel_handles == (f"reduce-channel-{index}",)


def test_an_unaligned_checkpoint_at_another_parallelism_is_refused_naming_a_savepoint() -> None:
    graph, _ = job(parallelism=3)
    with pytest.raises(
        StateError, match="checkpoint 7 is an unaligned checkpoint.*parallelism 2 then but at 3 now.*take a savepoint"
    ):
        assign_restore(metadata(unaligned_state("reduce", 2), keyed_state("sink", 2)), graph)
    graph, _ = job(parallelism=3)  # another operator rescaled: its producers' channels change too
    with pytest.raises(StateError, match="unaligned checkpoint"):
        assign_restore(metadata(unaligned_state("reduce", 3), keyed_state("sink", 2)), graph)
