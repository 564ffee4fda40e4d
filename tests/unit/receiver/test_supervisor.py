"""ReceiverSupervisor (seed 004): starting a receiver on its own thread, storing through the BlockGenerator and
reliably, metadata per block, restarts (asked for, or a crash of on_start) after their delay, and stop —
which ends the stream only once everything stored before it is tracked."""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from fluvial.datastream.connectors.receiver import ReceiverStoppedError
from fluvial.receiver import Receiver
from fluvial.receiver.block_generator import BlockGeneratorStateError
from fluvial.receiver.handler import (
    BlockManagerBasedBlockHandler,
    BlockStore,
    WalBasedStoreResult,
    WriteAheadLogBasedBlockHandler,
)
from fluvial.receiver.supervisor import ReceiverState, ReceiverSupervisor
from fluvial.receiver.tracker import ReceiverTracker
from fluvial.receiver.wal import WriteAheadLog
from fluvial.testing import wait_until

pytestmark = pytest.mark.timeout(30)

STREAM = 0


class ScriptedReceiver(Receiver):
    """Runs `script(receiver, start_number)` as on_start; records when each start and stop happened."""

    def __init__(self, script: Callable[[ScriptedReceiver, int], None]) -> None:
        super().__init__()
        self.script = script
        self.starts: list[float] = []
        self.stops: list[float] = []
        self.states_seen: list[tuple[bool, bool]] = []

    def name(self) -> str:
        return "scripted-receiver"

    def on_start(self) -> None:
        self.starts.append(time.monotonic())
        self.states_seen.append((self.is_started(), self.is_stopped()))
        self.script(self, len(self.starts))

    def on_stop(self) -> None:
        self.stops.append(time.monotonic())


class Harness:
    """A supervisor over a real block store (or WAL) handler and tracker; records when the stream ended and
    what the tracker held at that moment."""

    def __init__(
        self, receiver: Receiver, handler: Any = None, report_block: Callable[[Any], bool] | None = None
    ) -> None:
        self.tracker = ReceiverTracker([STREAM])
        self.handler = handler or BlockManagerBasedBlockHandler(BlockStore())
        self.ended = threading.Event()
        self.ends: list[int] = []
        self.records_at_end: list[Any] | None = None
        self.supervisor = ReceiverSupervisor(
            receiver,
            STREAM,
            self.handler,
            report_block or self.tracker.add_block,
            self._on_end,
            block_interval=0.02,
            block_queue_size=4,
        )

    def _on_end(self, stream_id: int) -> None:
        self.ends.append(stream_id)
        self.records_at_end = self.records()
        self.ended.set()

    def records(self) -> list[Any]:
        return [r for info in self.tracker.blocks_after(STREAM, -1) for r in self.handler.read_block(info.store_result)]

    def run_to_end(self) -> None:
        self.supervisor.start()
        assert self.ended.wait(10), "the stream never ended"


def test_records_stored_one_by_one_reach_the_tracker_in_order_with_their_metadata_per_block():
    def script(receiver, _start):
        for i in range(3_000):
            if i % 2 == 0:
                receiver.store(i, {"offset": i})
            else:
                receiver.store(i)
            if i % 500 == 0:
                time.sleep(0.03)  # spread the records over several blocks
        receiver.stop("done")

    harness = Harness(ScriptedReceiver(script))
    harness.run_to_end()
    assert harness.records_at_end == list(range(3_000))
    infos = harness.tracker.blocks_after(STREAM, -1)
    assert len(infos) > 1, "the records should span several blocks"
    offsets = []
    for info in infos:
        records = set(harness.handler.read_block(info.store_result))
        block_offsets = [m["offset"] for m in info.metadata or []]
        assert set(block_offsets) <= records, f"block {info.block_id} carries metadata of other blocks' records"
        assert info.num_records == len(records)
        offsets.extend(block_offsets)
    assert offsets == list(range(0, 3_000, 2))
    assert harness.ends == [STREAM]


def test_a_position_stored_with_single_records_travels_with_the_block_that_holds_the_newest_of_them():
    def script(receiver, _start):
        for i in range(2_000):
            if i % 3 == 0:
                receiver.store(i, {"offset": i}, position=i + 1)
            elif i % 3 == 1:
                receiver.store(i, position=i + 1)
            else:
                receiver.store(i)  # no position: the block's is that of the newest record that had one
            if i % 400 == 0:
                time.sleep(0.03)  # spread the records over several blocks
        receiver.stop("done")

    harness = Harness(ScriptedReceiver(script))
    harness.run_to_end()
    assert harness.records_at_end == list(range(2_000))
    infos = harness.tracker.blocks_after(STREAM, -1)
    assert len(infos) > 1, "the records should span several blocks"
    for info in infos:
        records = harness.handler.read_block(info.store_result)
        newest = max(r for r in records if r % 3 != 2)
        assert info.position == newest + 1, f"block {info.block_id} of {records[0]}..{records[-1]}"
        assert [m["offset"] for m in info.metadata] == [r for r in records if r % 3 == 0]
    assert harness.tracker.last_position(STREAM) == 2_000  # after record 1999, the last one, which had one


def test_a_reliable_store_returns_once_the_block_is_in_the_wal_and_tracked(tmp_path):
    seen_after_store: list[Any] = []
    wal = WriteAheadLog(tmp_path / "wal")
    handler = WriteAheadLogBasedBlockHandler(BlockStore(), wal)

    def script(receiver, _start):
        receiver.store(["a", "b", "c"], "batch-1")
        # the store returned: the block is tracked and its bytes are in the write-ahead log
        info = harness.tracker.blocks_after(STREAM, -1)[-1]
        seen_after_store.append(info)
        receiver.store(["d"])
        receiver.stop("done")

    harness = Harness(ScriptedReceiver(script), handler=handler)
    try:
        harness.run_to_end()
    finally:
        handler.close()
        wal.close()
    info = seen_after_store[0]
    assert info.metadata == "batch-1"
    assert info.num_records == 3
    assert isinstance(info.store_result, WalBasedStoreResult)
    assert len(list(wal.read_all())) == 2  # both reliable blocks were written to the log
    assert harness.records_at_end == ["a", "b", "c", "d"]


def test_on_start_raising_is_reported_with_the_receivers_name_and_restarted():
    def script(receiver, start):
        if start == 1:
            receiver.store("before")
            raise ValueError("boom on first start")
        receiver.store("after")
        receiver.stop("done")

    receiver = ScriptedReceiver(script)
    harness = Harness(receiver)
    harness.run_to_end()
    supervisor = harness.supervisor
    assert supervisor.restarts == 1
    assert len(receiver.starts) == 2
    message, error = supervisor.errors[0]
    assert "scripted-receiver" in message and "boom on first start" in message
    assert isinstance(error, ValueError)
    # on_stop ran between the crash and the second start; nothing stored before the crash was lost
    assert receiver.starts[0] <= receiver.stops[0] <= receiver.starts[1]
    assert harness.records_at_end == ["before", "after"]


def test_restart_stops_the_receiver_and_starts_it_again_after_the_delay():
    stopped_while_restarting: list[bool] = []

    def script(receiver, start):
        if start == 1:
            receiver.restart("reconnect please", delay=0.3)
            stopped_while_restarting.append(receiver.is_stopped())
            return
        receiver.stop("done")

    receiver = ScriptedReceiver(script)
    harness = Harness(receiver)
    harness.run_to_end()
    assert len(receiver.starts) == 2
    assert receiver.starts[1] - receiver.starts[0] >= 0.3
    assert stopped_while_restarting == [True]
    assert harness.supervisor.restarts == 1
    assert harness.supervisor.errors[0][0] == "reconnect please"
    assert receiver.states_seen == [(True, False), (True, False)]


def test_stop_pushes_everything_stored_before_it_then_ends_the_stream_once():
    late: dict[str, BaseException | None] = {}

    def script(receiver, _start):
        for i in range(20_000):
            receiver.store(i)
        receiver.stop("done")
        for kind, data in (("single", "late-single"), ("list", ["late-list"])):
            try:
                receiver.store(data)
                late[kind] = None
            except Exception as error:  # noqa: BLE001 - checked below
                late[kind] = error

    receiver = ScriptedReceiver(script)
    harness = Harness(receiver)
    harness.run_to_end()
    wait_until(lambda: len(late) == 2, what="both late stores to return or raise")
    records = harness.records_at_end
    # everything stored before stop was tracked before the end was announced, in order
    assert records[:20_000] == list(range(20_000))
    assert harness.ends == [STREAM]
    assert harness.supervisor.state is ReceiverState.STOPPED
    assert receiver.is_stopped() and not receiver.is_started()
    # a reliable store after stop is refused, so a receiver never acknowledges data the job will not see
    assert isinstance(late["list"], ReceiverStoppedError)
    assert "late-list" not in harness.records()
    # a single record right after stop may still make the last block (the generator stops on another
    # thread), or be refused; it is never accepted and then dropped
    if late["single"] is None:
        assert records[20_000:] == ["late-single"]
    else:
        assert isinstance(late["single"], BlockGeneratorStateError)
        assert records[20_000:] == []


class SlowHandler(BlockManagerBasedBlockHandler):
    def __init__(self) -> None:
        super().__init__(BlockStore())
        self.entered = threading.Event()

    def store_block(self, block_id, records):
        self.entered.set()
        time.sleep(0.3)
        return super().store_block(block_id, records)


def test_a_reliable_store_in_progress_at_stop_is_tracked_before_the_stream_ends():
    returned = threading.Event()

    def script(receiver, _start):
        receiver.store(["x", "y"])
        returned.set()

    handler = SlowHandler()
    harness = Harness(ScriptedReceiver(script), handler=handler)
    harness.supervisor.start()
    assert handler.entered.wait(5)
    harness.supervisor.stop("stopping while a reliable store is in progress")
    assert harness.ended.wait(5)
    assert returned.is_set()
    assert harness.records_at_end == ["x", "y"], "the stream ended before an acknowledged block was tracked"


def test_stop_with_an_error_keeps_the_error_for_the_job():
    failure = ConnectionError("refused")

    def script(receiver, _start):
        receiver.stop("could not connect to 127.0.0.1:9", failure)

    harness = Harness(ScriptedReceiver(script))
    harness.run_to_end()
    assert harness.supervisor.stop_error is failure
    assert harness.supervisor.stop_message == "could not connect to 127.0.0.1:9"
    assert harness.supervisor.errors == [("could not connect to 127.0.0.1:9", failure)]


def test_a_crash_after_stop_is_not_restarted():
    def script(receiver, _start):
        receiver.stop("done")
        raise RuntimeError("an error on the way out")

    receiver = ScriptedReceiver(script)
    harness = Harness(receiver)
    harness.run_to_end()
    time.sleep(0.3)  # longer than the crash restart delay: a wrong restart would have happened by now
    assert len(receiver.starts) == 1
    assert harness.supervisor.restarts == 0
    assert harness.supervisor.stop_error is None


def test_a_block_the_tracker_refuses_is_never_acknowledged_and_ends_the_stream_with_the_error():
    outcomes: list[BaseException] = []

    def script(receiver, _start):
        for data in (["a"], "b"):
            try:
                receiver.store(data)
            except Exception as error:  # noqa: BLE001 - recorded for the test
                outcomes.append(error)

    harness = Harness(ScriptedReceiver(script), report_block=lambda info: False)
    harness.run_to_end()
    assert len(outcomes) == 2 and "did not accept block" in str(outcomes[0])
    assert isinstance(outcomes[1], BlockGeneratorStateError)  # nothing is taken after the failure
    assert "did not accept block" in str(harness.supervisor.stop_error)
    assert "could not be stored" in harness.supervisor.stop_message


def do_nothing(receiver, start):
    pass


def test_receiver_calls_before_start_are_clear_errors_and_pickling_leaves_the_supervisor_behind():
    receiver = ScriptedReceiver(do_nothing)
    with pytest.raises(RuntimeError, match=r"scripted-receiver.store\(\) called before the receiver was started"):
        receiver.store(1)
    assert receiver.is_stopped() and not receiver.is_started()
    harness = Harness(receiver)
    copy = pickle.loads(pickle.dumps(receiver))
    assert copy._supervisor is None and receiver._supervisor is harness.supervisor
    with pytest.raises(RuntimeError, match="before the receiver was started"):
        copy.restart("no")
