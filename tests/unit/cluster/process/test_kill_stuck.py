"""Step 4 of the TaskManager pool for a process that did not exit when its connection ended: it is asked for its
threads' stacks (written to standard error, so what held it is on record), then killed, with a WARNING."""

from __future__ import annotations

import logging

import pytest

from fluvial.cluster.process.pool import _Member, kill_stuck
from fluvial.testing import wait_until
from tests.processes import Parked, alive

pytestmark = pytest.mark.timeout(60)


def member_for(pid: int) -> _Member:
    member = _Member(3)
    member.pid = pid
    return member


def test_a_process_that_did_not_exit_writes_its_stacks_and_is_killed(caplog):
    with Parked() as parked:
        with caplog.at_level(logging.WARNING, logger="fluvial.cluster.process.pool"):
            kill_stuck(member_for(parked.pid), 5.0)
        parked.process.wait(10)
        wait_until(lambda: "parked_in_user_code" in parked.written(), what="its stacks on standard error")
        assert not alive(parked.pid)
    warnings = [record.getMessage() for record in caplog.records]
    assert any(
        f"TaskManager process 3 (pid {parked.pid}) did not exit within 5 s" in message
        and "killed it" in message
        and "the stacks of its threads are on standard error" in message
        for message in warnings
    ), warnings


def test_a_process_whose_end_was_reported_meanwhile_is_not_signalled(caplog):
    with Parked() as parked:
        member = member_for(parked.pid)
        member.ended = "exited with status 0"  # the zygote said so: the PID may name another process by now
        with caplog.at_level(logging.WARNING, logger="fluvial.cluster.process.pool"):
            kill_stuck(member, 5.0)
        assert parked.process.poll() is None and "parked_in_user_code" not in parked.written()
    assert not caplog.records
