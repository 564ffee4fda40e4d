"""The session cluster's SlotPool: all or nothing per job, spread over TaskManagers, first come first served,
NEVER_FITS for a job bigger than the cluster; every sequence of requests, releases and withdrawals keeps the books
straight."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.cluster.session.slot_pool import SlotPool, SlotRequestResult
from fluvial.cluster.slots import SlotId

GRANTED, QUEUED, NEVER_FITS = SlotRequestResult.GRANTED, SlotRequestResult.QUEUED, SlotRequestResult.NEVER_FITS


def test_a_job_gets_all_its_slots_at_once_spread_over_the_task_managers():
    pool = SlotPool(task_managers=2, slots_per_task_manager=2)
    outcome, grant = pool.request("a", 3)
    assert outcome is GRANTED
    assert grant.slots == (SlotId(0, 0), SlotId(1, 0), SlotId(0, 1))
    assert pool.free == 1 and pool.free_by_task_manager() == [0, 1]
    assert pool.request("b", 1)[1].slots == (SlotId(1, 1),)


def test_a_job_bigger_than_the_cluster_never_fits_and_holds_nothing():
    pool = SlotPool(2, 2)
    assert pool.request("huge", 5) == (NEVER_FITS, None)
    assert pool.free == 4 and pool.waiting() == []


def test_waiting_jobs_start_first_come_first_served_when_slots_come_back():
    pool = SlotPool(1, 4)
    pool.request("running", 3)
    assert pool.request("big", 4) == (QUEUED, None)
    assert pool.request("small", 1) == (QUEUED, None)  # would fit, but 'big' asked first
    grants = pool.release("running")
    assert [grant.job_id for grant in grants] == ["big"]
    assert pool.waiting() == ["small"]
    assert [grant.job_id for grant in pool.release("big")] == ["small"]


def test_a_withdrawn_job_lets_the_ones_behind_it_start():
    pool = SlotPool(1, 2)
    pool.request("running", 1)
    pool.request("big", 2)
    pool.request("small", 1)
    grants = pool.withdraw("big")
    assert [(grant.job_id, grant.slots) for grant in grants] == [("small", (SlotId(0, 1),))]
    assert pool.withdraw("big") == []  # withdrawn once


def test_bad_requests_are_refused_naming_the_job():
    pool = SlotPool(1, 1)
    with pytest.raises(ValueError, match="job j asks for 0 slots"):
        pool.request("j", 0)
    pool.request("j", 1)
    with pytest.raises(ValueError, match="job j already holds or waits"):
        pool.request("j", 1)
    with pytest.raises(ValueError, match="at least one TaskManager with one slot"):
        SlotPool(0, 2)


operations = st.lists(
    st.tuples(st.sampled_from(["request", "release", "withdraw"]), st.integers(0, 7), st.integers(1, 7)), max_size=40
)


@settings(max_examples=200, deadline=None)
@given(task_managers=st.integers(1, 3), slots=st.integers(1, 3), ops=operations)
def test_any_sequence_keeps_every_slot_with_at_most_one_job_and_the_queue_honest(task_managers, slots, ops):
    pool = SlotPool(task_managers, slots)
    holding: dict[str, tuple[SlotId, ...]] = {}
    waiting: list[str] = []
    sizes: dict[str, int] = {}
    for action, number, size in ops:
        job = f"job-{number}"
        if action == "request" and job not in holding and job not in waiting:
            outcome, grant = pool.request(job, size)
            sizes[job] = size
            if outcome is GRANTED:
                holding[job] = grant.slots
            elif outcome is QUEUED:
                waiting.append(job)
            else:
                assert size > pool.total
        elif action in ("release", "withdraw"):
            grants = pool.release(job) if action == "release" else pool.withdraw(job)
            holding.pop(job, None) if action == "release" else (job in waiting and waiting.remove(job))
            assert [grant.job_id for grant in grants] == waiting[: len(grants)]  # first come, first served
            for grant in grants:
                holding[grant.job_id] = grant.slots
                waiting.remove(grant.job_id)
        held = [slot for granted in holding.values() for slot in granted]
        assert len(held) == len(set(held)), "a slot is held by two jobs"
        assert pool.free == pool.total - len(held)
        assert sum(pool.free_by_task_manager()) == pool.free
        assert pool.waiting() == waiting
        if waiting:  # the first in line waits only while it does not fit
            assert sizes[waiting[0]] > pool.free
