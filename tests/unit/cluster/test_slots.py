"""Slot arithmetic and assignment (DESIGN 2.2, seed 002): one slot per group per subtask index."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluvial.cluster.slots import SlotId, assign_slots, offered_slots
from fluvial.common.errors import ResourceError
from tests.unit.graph.plans import (
    identity,
    keep,
    new_env,
    numbers,
    random_jobs,
    vertex_of,
)


def thirty_slot_job():
    env = new_env(10)
    mapped = numbers(env).map(identity).set_parallelism(20).slot_sharing_group("test")
    mapped.filter(keep).print()
    return env.get_job_graph()


def test_offered_slots_go_round_robin_over_task_managers() -> None:
    assert offered_slots(2, 3) == [SlotId(0, 0), SlotId(1, 0), SlotId(0, 1), SlotId(1, 1), SlotId(0, 2), SlotId(1, 2)]
    assert str(SlotId(1, 2)) == "TM1/slot2"


@settings(max_examples=50, deadline=None)
@given(task_managers=st.integers(1, 6), per_tm=st.integers(1, 6))
def test_offered_slots_are_distinct_and_complete(task_managers, per_tm) -> None:
    slots = offered_slots(task_managers, per_tm)
    assert len(slots) == len(set(slots)) == task_managers * per_tm
    assert set(slots) == {SlotId(tm, i) for tm in range(task_managers) for i in range(per_tm)}


def test_too_few_slots_raise_naming_both_numbers() -> None:
    job_graph = thirty_slot_job()
    with pytest.raises(ResourceError, match=r"needs 30 task slots.*offers 29"):
        assign_slots(job_graph, offered_slots(1, 29))
    message = ""
    try:
        assign_slots(job_graph, offered_slots(3, 4))
    except ResourceError as error:
        message = str(error)
    assert "'default' needs 10" in message and "'test' needs 20" in message and "offers 12" in message


def test_exactly_enough_slots_suffice() -> None:
    job_graph = thirty_slot_job()
    assignment = assign_slots(job_graph, offered_slots(3, 10))
    assert len(assignment) == sum(v.parallelism for v in job_graph.vertices) == 10 + 20 + 10
    assert len(set(assignment.values())) == 30
    groups: dict[str, set[SlotId]] = defaultdict(set)
    for vertex in job_graph.vertices:
        groups[vertex.slot_sharing_group].update(assignment[(vertex.id, i)] for i in range(vertex.parallelism))
    assert {g: len(s) for g, s in groups.items()} == {"default": 10, "test": 20}
    assert not groups["default"] & groups["test"]  # different groups never share a slot


def test_subtask_i_of_one_group_shares_slot_i() -> None:
    job_graph = thirty_slot_job()
    assignment = assign_slots(job_graph, offered_slots(2, 15))
    wide, narrow = [v for v in job_graph.vertices if v.slot_sharing_group == "test"]
    assert all(assignment[(narrow.id, i)] == assignment[(wide.id, i)] for i in range(narrow.parallelism))


def test_seed_002_runs_in_three_slots() -> None:
    env = new_env(1)
    (
        env.from_collection(["a"])
        .map(identity)
        .filter(keep)
        .slot_sharing_group("group_03")
        .map(identity)
        .filter(keep)
        .slot_sharing_group("group_04")
        .map(identity)
        .print()
    )
    job_graph = env.get_job_graph()
    assert job_graph.required_slots() == 3
    assignment = assign_slots(job_graph, offered_slots(1, 3))
    assert len(set(assignment.values())) == 3
    with pytest.raises(ResourceError, match=r"needs 3 task slots.*offers 2"):
        assign_slots(job_graph, offered_slots(1, 2))


def test_co_located_subtasks_share_a_slot() -> None:
    env = new_env(3)
    first = numbers(env).map(identity).co_location_group("k")
    second = first.rebalance().map(identity).co_location_group("k")
    second.print()
    job_graph = env.get_job_graph()
    assignment = assign_slots(job_graph, offered_slots(3, 1))
    a, b = vertex_of(job_graph, first), vertex_of(job_graph, second)
    assert a.id != b.id
    assert all(assignment[(a.id, i)] == assignment[(b.id, i)] for i in range(3))


def test_parallel_subtasks_spread_over_task_managers_first() -> None:
    env = new_env(3)
    numbers(env).print()
    job_graph = env.get_job_graph()
    (vertex,) = job_graph.vertices
    assignment = assign_slots(job_graph, offered_slots(3, 2))
    assert {assignment[(vertex.id, i)].task_manager for i in range(3)} == {0, 1, 2}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env=random_jobs(), spare=st.integers(0, 3))
def test_assignment_invariants(env, spare) -> None:
    job_graph = env.get_job_graph()
    required = job_graph.required_slots()
    free = offered_slots(1, required + spare)
    assignment = assign_slots(job_graph, free)
    assert set(assignment) == {(v.id, i) for v in job_graph.vertices for i in range(v.parallelism)}
    assert len(set(assignment.values())) == required
    assert set(assignment.values()) <= set(free)
    for vertex in job_graph.vertices:  # the subtasks of one vertex never share a slot
        slots = [assignment[(vertex.id, i)] for i in range(vertex.parallelism)]
        assert len(set(slots)) == vertex.parallelism
    by_slot_group: dict[SlotId, set[str]] = defaultdict(set)
    for vertex in job_graph.vertices:
        for i in range(vertex.parallelism):
            by_slot_group[assignment[(vertex.id, i)]].add(vertex.slot_sharing_group)
    assert all(len(groups) == 1 for groups in by_slot_group.values())
    with pytest.raises(ResourceError, match=f"needs {required} task slots"):
        assign_slots(job_graph, offered_slots(1, required - 1))
