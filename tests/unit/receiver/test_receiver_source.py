"""The receiver source reader over a job's receiver services: blocks in order, one per poll; the position it
checkpoints and resumes after; release of blocks once a checkpoint holding them completes (or at once without
checkpoints); the end of the stream, cleanly or with the receiver's error; and recovery of the tracked blocks
from the write-ahead log after a JobMaster restart."""

from __future__ import annotations

import itertools
import time

import pytest

from fluvial.datastream.connectors.receiver import (
    ReceiverSource,
    ReceiverSourceReader,
    ReceiverSplit,
    ReceiverStoppedError,
)
from fluvial.datastream.connectors.source import Boundedness
from fluvial.receiver import Receiver
from fluvial.receiver.services import ReceiverSettings, TaskManagerReceivers
from fluvial.receiver.tracker import BlocksAlreadyCleanedError
from fluvial.testing import wait_until

pytestmark = pytest.mark.timeout(30)

STREAM = 1
_job_ids = itertools.count()
RECEIVERS = TaskManagerReceivers()  # what a TaskManager keeps; the tests start and release jobs on it


def lookup(job_id: str):
    """The services of the job's one receiver stream."""
    [services] = RECEIVERS.services(job_id)
    return services


def start_receivers(job_id: str, receivers: dict, settings: ReceiverSettings) -> None:
    for stream_id, receiver in receivers.items():
        RECEIVERS.stream(job_id, stream_id, receiver, settings)


def stop_receivers(job_id: str) -> None:
    RECEIVERS.release_job(job_id)


class IdleReceiver(Receiver):
    """Starts and returns; the test stores through it from its own thread (a callback-style receiver)."""

    def on_start(self) -> None:
        pass

    def on_stop(self) -> None:
        pass

    def name(self) -> str:
        return "idle-receiver"


@pytest.fixture
def job(request, tmp_path):
    """start(wal=..., checkpointing=...) -> (job id, receiver); every job started is stopped afterwards."""
    started: list[str] = []

    def start(
        *, wal: bool = False, checkpointing: bool = True, job_id: str | None = None, receiver: Receiver | None = None
    ) -> tuple[str, Receiver]:
        job_id = job_id or f"source-test-{next(_job_ids)}"
        receiver = receiver or IdleReceiver()
        settings = ReceiverSettings(0.02, 10, 0, str(tmp_path / "checkpoints") if wal else None, checkpointing)
        start_receivers(job_id, {STREAM: receiver}, settings)
        started.append(job_id)
        return job_id, receiver

    yield start
    for job_id in started:
        stop_receivers(job_id)


def reader_for(job_id: str, position: int = -1) -> ReceiverSourceReader:
    reader = ReceiverSourceReader(RECEIVERS.for_job(job_id, None), STREAM, None)  # the stream runs already
    reader.add_splits([ReceiverSplit(f"receiver-{STREAM}", STREAM, position)])
    return reader


def poll_until_data(reader: ReceiverSourceReader) -> list | None:
    """The next non-empty poll result (a block's records) or None at the end of the stream."""
    deadline = time.monotonic() + 10
    while True:
        records = reader.poll(1_000)
        if records is None or records:
            return records
        assert time.monotonic() < deadline, "no block arrived"
        time.sleep(0.002)


def test_the_source_is_one_unbounded_split_named_after_its_receiver():
    source = ReceiverSource(IdleReceiver(), STREAM)
    assert source.get_boundedness() is Boundedness.CONTINUOUS_UNBOUNDED
    assert source.max_parallelism() == 1
    assert source.create_splits(4) == [ReceiverSplit(f"receiver-{STREAM}", STREAM, -1)]
    assert source.default_name() == "idle-receiver"


@pytest.mark.parametrize("wal", [False, True], ids=["block-store", "wal"])
def test_blocks_come_out_in_order_one_per_poll_and_the_end_comes_after_the_last(job, wal):
    job_id, receiver = job(wal=wal)
    reader = reader_for(job_id)
    assert reader.poll(100) == []  # nothing stored yet: no data, not the end
    receiver.store(["a", "b"])
    receiver.store(["c"])
    receiver.store(list(range(5)))
    assert reader.poll(100) == ["a", "b"]
    assert reader.poll(100) == ["c"]
    receiver.stop("done")
    assert reader.poll(100) == [0, 1, 2, 3, 4]  # blocks stored before stop still come out
    wait_until(lambda: lookup(job_id).stream_ended(STREAM), what="the end of the stream")
    assert reader.poll(100) is None
    assert reader.snapshot_state() == [ReceiverSplit(f"receiver-{STREAM}", STREAM, 2, lookup(job_id).log_directory)]
    assert (lookup(job_id).log_directory is not None) is wal


def test_a_restored_reader_replays_exactly_the_blocks_after_its_checkpointed_position(job):
    job_id, receiver = job(wal=True)
    for i in range(4):
        receiver.store([f"block-{i}"])
    first = reader_for(job_id)
    assert poll_until_data(first) == ["block-0"]
    assert poll_until_data(first) == ["block-1"]
    first.on_snapshot(7)
    checkpointed = first.snapshot_state()
    assert poll_until_data(first) == ["block-2"]  # emitted after the checkpoint: lost with the failover
    # failover: a new reader from the checkpointed split; force the replay to come from the write-ahead log
    services = lookup(job_id)
    for info in services.tracker.blocks_after(STREAM, -1):
        services.handlers[STREAM].store.remove(info.block_id)
    second = ReceiverSourceReader(RECEIVERS.for_job(job_id, None), STREAM, None)
    second.add_splits(checkpointed)
    assert poll_until_data(second) == ["block-2"]
    assert poll_until_data(second) == ["block-3"]
    assert second.poll(10) == []


def test_a_completed_checkpoint_releases_the_blocks_it_holds_and_no_later_ones(job):
    job_id, receiver = job(wal=True)
    for i in range(4):
        receiver.store([i])
    reader = reader_for(job_id)
    services = lookup(job_id)
    ids = [info.block_id for info in services.tracker.blocks_after(STREAM, -1)]
    poll_until_data(reader)
    poll_until_data(reader)
    reader.on_snapshot(1)  # holds position 1
    poll_until_data(reader)
    reader.on_snapshot(2)  # holds position 2, not completed yet
    assert all(block_id in services.handlers[STREAM].store for block_id in ids), "released before completion"
    reader.notify_checkpoint_complete(1)
    store = services.handlers[STREAM].store
    assert [block_id in store for block_id in ids] == [False, False, True, True]
    assert [b.sequence_number for b in services.tracker.tracked_blocks(STREAM)] == [2, 3]
    with pytest.raises(BlocksAlreadyCleanedError):  # an older position can no longer be served
        services.tracker.blocks_after(STREAM, 0)
    reader.notify_checkpoint_complete(2)
    assert [block_id in store for block_id in ids] == [False, False, False, True]


def test_without_checkpoints_a_block_is_released_once_emitted(job):
    job_id, receiver = job(checkpointing=False)
    receiver.store(["x"])
    receiver.store(["y"])
    services = lookup(job_id)
    reader = reader_for(job_id)
    assert poll_until_data(reader) == ["x"]
    assert [b.sequence_number for b in services.tracker.tracked_blocks(STREAM)] == [1]
    assert len(services.handlers[STREAM].store) == 1


def test_a_receiver_stopped_with_an_error_fails_the_reader_after_its_last_block(job):
    job_id, receiver = job()
    receiver.store(["kept"])
    receiver.stop("could not connect to 127.0.0.1:9", ConnectionRefusedError("refused"))
    reader = reader_for(job_id)
    assert poll_until_data(reader) == ["kept"]  # what was stored still comes out first
    wait_until(lambda: lookup(job_id).stream_ended(STREAM), what="the end of the stream")
    with pytest.raises(ReceiverStoppedError, match=r"idle-receiver.*could not connect to 127.0.0.1:9") as raised:
        reader.poll(10)
    assert isinstance(raised.value.__cause__, ConnectionRefusedError)


def test_tracked_blocks_survive_a_jobmaster_restart_through_the_write_ahead_log(job):
    job_id, first = job(wal=True, job_id="restarted-job")
    first.store(["a", "b"])
    first.store(["c"])
    stop_receivers(job_id)  # the JobMaster goes away; the blocks live on in the write-ahead logs

    _, second = job(wal=True, job_id="restarted-job", receiver=IdleReceiver())
    reader = reader_for(job_id)
    assert poll_until_data(reader) == ["a", "b"]  # read back from the data WAL: the block store is new
    assert poll_until_data(reader) == ["c"]
    second.store(["d"])  # numbering continues after the recovered blocks
    assert poll_until_data(reader) == ["d"]
    assert [b.sequence_number for b in lookup(job_id).tracker.tracked_blocks(STREAM)] == [0, 1, 2]


class RemembersWhereItResumes(IdleReceiver):
    def on_start(self) -> None:
        self.resumed_at = self.last_stored_position()


def test_a_restored_stream_without_its_log_resumes_the_upstream_at_the_checkpointed_position():
    receiver = RemembersWhereItResumes()
    job_id = f"source-test-{next(_job_ids)}"
    settings = ReceiverSettings(0.02, 10, 0, None, True)
    reader = ReceiverSourceReader(RECEIVERS.for_job(job_id, settings), STREAM, receiver)
    reader.add_splits([ReceiverSplit(f"receiver-{STREAM}", STREAM, 4, upstream_position={"offset": 120})])
    try:
        assert reader.poll(10) == []  # the stream starts: a TaskManager that lost its receiver's blocks
        wait_until(lambda: hasattr(receiver, "resumed_at"), what="the receiver to start")
        assert receiver.resumed_at == {"offset": 120}
        receiver.store(["a", "b"], position={"offset": 122})
        assert poll_until_data(reader) == ["a", "b"]
        assert receiver.last_stored_position() == {"offset": 122}
        assert reader.snapshot_state()[0].upstream_position == {"offset": 122}
    finally:
        stop_receivers(job_id)
