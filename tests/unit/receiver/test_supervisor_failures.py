"""ReceiverSupervisor under failure (issue 13, defects 4 and 12): a receiver that never starts restarts with
back-off and a bound, then stops with its error; a block that cannot be stored durably ends the stream with an
error naming the log, and nothing after it is stored."""

from __future__ import annotations

import errno
from datetime import timedelta

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.receiver.block_generator import BlockGeneratorStateError
from fluvial.receiver.handler import BlockStore, WriteAheadLogBasedBlockHandler
from fluvial.receiver.supervisor import MAX_KEPT_ERRORS, ReceiverState
from fluvial.receiver.wal import WriteAheadLog
from tests.unit.receiver.test_supervisor import Harness, ScriptedReceiver, wait_until

pytestmark = pytest.mark.timeout(30)


class StartFailure(Exception):
    pass


def always_fail(receiver, start):
    raise StartFailure(f"start {start} failed")


def test_a_receiver_that_never_starts_backs_off_then_stops_with_its_error():
    receiver = ScriptedReceiver(always_fail)
    receiver.restart_strategy = RestartStrategies.exponential_delay_restart(
        timedelta(milliseconds=20), timedelta(milliseconds=80), 2.0, timedelta(minutes=1), 0.0, 3
    )
    harness = Harness(receiver)
    harness.run_to_end()
    assert len(receiver.starts) == 4  # the first start and 3 restarts
    gaps = [later - earlier for earlier, later in zip(receiver.starts, receiver.starts[1:])]
    assert [round(gap, 2) >= wait for gap, wait in zip(gaps, (0.02, 0.04, 0.08))] == [True] * 3, gaps
    supervisor = harness.supervisor
    assert supervisor.state is ReceiverState.STOPPED
    assert isinstance(supervisor.stop_error, StartFailure) and str(supervisor.stop_error) == "start 4 failed"
    assert "gave up after 3 restart(s)" in supervisor.stop_message
    assert "ScriptedReceiver.restart_strategy" in supervisor.stop_message


def test_no_restart_stops_at_the_first_crash():
    receiver = ScriptedReceiver(always_fail)
    receiver.restart_strategy = RestartStrategies.no_restart()
    harness = Harness(receiver)
    harness.run_to_end()
    assert len(receiver.starts) == 1 and str(harness.supervisor.stop_error) == "start 1 failed"


def test_the_errors_kept_are_bounded():
    receiver = ScriptedReceiver(always_fail)
    receiver.restart_strategy = RestartStrategies.fixed_delay_restart(MAX_KEPT_ERRORS + 20, 1)
    harness = Harness(receiver)
    harness.run_to_end()
    assert len(receiver.starts) == MAX_KEPT_ERRORS + 21
    assert len(harness.supervisor.errors) == MAX_KEPT_ERRORS
    assert harness.supervisor.errors[-1][0].endswith(
        "gave up after 120 restart(s), as the receiver's restart "
        "strategy allows no more (ScriptedReceiver.restart_strategy)"
    )


def test_an_unusable_restart_strategy_is_a_clear_error():
    receiver = ScriptedReceiver(always_fail)
    receiver.restart_strategy = "forever"
    with pytest.raises(InvalidJobError, match="restart_strategy 'forever', which cannot be used"):
        Harness(receiver)


class FullDisk:
    """Stands in for a WAL's write attempt on a disk with no space left."""

    def __call__(self, frame, time_ms):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_block_the_wal_cannot_store_ends_the_stream_with_an_error_naming_the_log(tmp_path):
    wal = WriteAheadLog(tmp_path / "wal", max_write_attempts=2, retry_backoff_s=0)
    handler = WriteAheadLogBasedBlockHandler(BlockStore(), wal)
    refused: list[BaseException] = []

    def script(receiver, _start):
        receiver.store(["kept"])
        wal._append = FullDisk()  # the disk fills up
        for data in (["lost"], "after"):
            try:
                receiver.store(data)
            except Exception as error:  # noqa: BLE001 - recorded for the test
                refused.append(error)

    harness = Harness(ScriptedReceiver(script), handler=handler)
    harness.run_to_end()
    assert harness.records_at_end == ["kept"]
    assert len(refused) == 2 and isinstance(refused[1], BlockGeneratorStateError)
    message = harness.supervisor.stop_message
    assert f"write-ahead log in {tmp_path / 'wal'} failed 2 time(s)" in message and "No space left" in message
    handler.close()
    wal.close()


def test_a_failure_while_stopping_still_ends_the_stream_with_the_error(tmp_path):
    wal = WriteAheadLog(tmp_path / "wal", max_write_attempts=1)
    handler = WriteAheadLogBasedBlockHandler(BlockStore(), wal)

    def script(receiver, _start):
        receiver.store("buffered, pushed while stopping")
        wal._append = FullDisk()
        receiver.stop("done")

    harness = Harness(ScriptedReceiver(script), handler=handler)
    harness.run_to_end()
    assert harness.records_at_end == []
    assert "No space left on device" in str(harness.supervisor.stop_error)
    assert "could not be stored" in harness.supervisor.stop_message
    wait_until(lambda: harness.supervisor.state is ReceiverState.STOPPED)
    handler.close()
    wal.close()
