"""Receiver jobs under the faults of issue 13 (defects 4 and 12): the write-ahead log's directory deleted
mid-stream, a disk that stops taking writes, a receiver that can never start. The job either delivers every
record or fails with an error naming the cause — it never finishes normally without some records."""

from __future__ import annotations

import errno
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pytest

from fluvial.common.configuration import Configuration
from fluvial.common.errors import JobExecutionException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.receiver import Receiver
from fluvial.receiver.wal import WriteAheadLog
from fluvial.testing import ExecutionMode

pytestmark = pytest.mark.timeout(60)

BATCHES, BATCH = 30, 50


def environment(checkpoints: Path, mode: ExecutionMode) -> StreamExecutionEnvironment:
    conf = (
        Configuration()
        .set_string("receiver.block-interval", "20 ms")
        .set_string("receiver.write-ahead-log.enable", "true")
        .set_string("state.checkpoints.dir", f"file://{checkpoints}")
        .set_string("local.taskmanager.mode", mode.value)
    )
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(40)
    env.set_restart_strategy(RestartStrategies.no_restart())
    return env


class BatchReceiver(Receiver):
    """Stores BATCHES reliable batches of BATCH numbers, pausing between them; before batch `fault_at` it
    calls `fault()` (the fault runs inside the job, at a known point of the stream)."""

    def __init__(self, fault_at: int, fault) -> None:
        super().__init__()
        self.fault_at = fault_at
        self.fault = fault

    def on_start(self) -> None:
        for batch in range(BATCHES):
            if batch == self.fault_at:
                self.fault()
            self.store(list(range(batch * BATCH, (batch + 1) * BATCH)))
            time.sleep(0.01)
        self.stop("every batch stored")

    def on_stop(self) -> None:
        pass


class DeleteLogs:
    """Deletes every write-ahead log directory of the job (the receiver's data and the tracker's events)."""

    def __init__(self, checkpoints: Path) -> None:
        self.checkpoints = str(checkpoints)

    def __call__(self) -> None:
        logs = [p for p in Path(self.checkpoints).rglob("received*") if p.is_dir()]
        assert logs, f"no write-ahead log under {self.checkpoints} to delete"
        for directory in logs:
            shutil.rmtree(directory)


def test_deleting_the_write_ahead_logs_mid_stream_loses_nothing(tmp_path, mode):
    env = environment(tmp_path / "checkpoints", mode)
    stream = env.add_receiver(BatchReceiver(BATCHES // 2, DeleteLogs(tmp_path / "checkpoints")), "batches")
    assert sorted(stream.execute_and_collect()) == list(range(BATCHES * BATCH))
    assert list((tmp_path / "checkpoints").glob("receivers/*/*/receivedData/log-*")), "the data log was not recreated"


class FullDisk:
    """Breaks the write-ahead log of the process it runs in (the receiver's: this one or a TaskManager's)."""

    def __call__(self) -> None:
        def no_space(self, frame, time_ms):
            raise OSError(errno.ENOSPC, "No space left on device")

        WriteAheadLog._append = no_space


def test_a_log_that_cannot_be_written_fails_the_job_naming_the_log(tmp_path, monkeypatch, mode):
    monkeypatch.setattr(WriteAheadLog, "_append", WriteAheadLog._append)  # restored after the test
    env = environment(tmp_path / "checkpoints", mode)
    env.add_receiver(BatchReceiver(5, FullDisk()), "batches").add_sink(lambda value: None)
    with pytest.raises(JobExecutionException) as raised:
        env.execute("the disk fills up")
    message = str(raised.value)
    assert "write-ahead log in" in message and str(tmp_path / "checkpoints") in message, message
    assert "No space left on device" in message


class NeverStarts(Receiver):
    restart_strategy = RestartStrategies.exponential_delay_restart(
        timedelta(milliseconds=10), timedelta(milliseconds=40), 2.0, timedelta(minutes=1), 0.0, 4
    )

    def __init__(self) -> None:
        super().__init__()

    def on_start(self) -> None:
        raise ConnectionRefusedError("the upstream service is down")

    def on_stop(self) -> None:
        pass


def test_a_receiver_that_never_starts_fails_the_job_with_its_error(mode):
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", mode.value)
    )
    env.set_parallelism(1)
    env.add_receiver(NeverStarts(), "never starts").add_sink(lambda value: None)
    with pytest.raises(JobExecutionException) as raised:
        env.execute("receiver never starts")
    assert "the upstream service is down" in str(raised.value)
    assert "gave up after 4 restart(s)" in str(raised.value)


class ComesBack(Receiver):
    """Refused until it has tried `refusals` times in all (counted in a file: the tries of every supervisor),
    then stores its records and stops. Its own budget (2 restarts, 3 tries) is used up well before that."""

    restart_strategy = RestartStrategies.fixed_delay_restart(2, timedelta(milliseconds=10))

    def __init__(self, tries: Path, refusals: int, records: list[int]) -> None:
        super().__init__()
        self.tries = str(tries)
        self.refusals = refusals
        self.records = records

    def on_start(self) -> None:
        with open(self.tries, "a") as tries:
            tries.write("try\n")
        if len(Path(self.tries).read_text().splitlines()) <= self.refusals:
            raise ConnectionRefusedError("the upstream service is down")
        self.store(self.records)
        self.stop("every record stored")

    def on_stop(self) -> None:
        pass


def test_a_receiver_that_gave_up_starts_again_with_a_fresh_budget_when_the_job_restarts(tmp_path, mode):
    env = environment(tmp_path / "checkpoints", mode)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(10, timedelta(milliseconds=20)))
    records = list(range(200))
    stream = env.add_receiver(ComesBack(tmp_path / "tries", 7, records), "comes back")  # 3 supervisors give up
    assert sorted(stream.execute_and_collect()) == records
    assert len((tmp_path / "tries").read_text().splitlines()) == 8


class ResumableUpstream(Receiver):
    """An upstream that can resume from an offset (its acknowledgements kept in a file): batches of BATCH
    records, each stored with the offset after it, then acknowledged. The first start dies between storing
    batch 3 and acknowledging it; the restarted receiver resumes from the last stored position."""

    restart_strategy = RestartStrategies.fixed_delay_restart(3, timedelta(milliseconds=10))

    def __init__(self, acked: Path, batches: int) -> None:
        super().__init__()
        self.acked = str(acked)
        self.batches = batches

    def on_start(self) -> None:
        acked = int(Path(self.acked).read_text() or 0) if Path(self.acked).exists() else 0
        stored = self.last_stored_position()
        offset = stored if stored is not None else acked  # what was stored is not asked for again
        for batch in range(offset // BATCH, self.batches):
            self.store(list(range(batch * BATCH, (batch + 1) * BATCH)), position=(batch + 1) * BATCH)
            if batch == 3 and acked == 0 and stored is None:
                raise ConnectionResetError("died before acknowledging batch 3")
            Path(self.acked).write_text(str((batch + 1) * BATCH))
        self.stop("every batch stored")

    def on_stop(self) -> None:
        pass


def test_a_receiver_resumes_after_its_last_stored_position_and_nothing_comes_twice(tmp_path, mode):
    env = environment(tmp_path / "checkpoints", mode)
    stream = env.add_receiver(ResumableUpstream(tmp_path / "acked", 8), "resumable")
    assert sorted(stream.execute_and_collect()) == list(range(8 * BATCH))  # batch 3 once, though never acked
