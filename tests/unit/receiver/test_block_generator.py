"""BlockGenerator (DESIGN 2.5): blocks per interval, ids, exactly-once in-order delivery through stop(), the
bound on blocks in flight, waiting adders, the lifecycle, and the listener hooks."""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import Duration, ManualClock, current_millis
from fluvial.receiver.block_generator import (
    BlockGenerator,
    BlockGeneratorListener,
    BlockGeneratorState,
    BlockGeneratorStateError,
)
from fluvial.receiver.blocks import Block, ReceivedBlockInfo, StreamBlockId
from fluvial.testing import wait_until

POLL = 0.002


def holds_for(condition: Callable[[], bool], seconds: float) -> bool:
    """Polls `condition` for `seconds`; False as soon as it fails once."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not condition():
            return False
        time.sleep(POLL)
    return condition()


class Recorder(BlockGeneratorListener):
    """Records every hook. `gate`, when given, holds each push until it is set."""

    def __init__(self, gate: threading.Event | None = None, clock: Callable[[], int] = current_millis) -> None:
        self.gate = gate
        self.clock = clock
        self.lock = threading.Lock()
        self.added: list[tuple[Any, Any]] = []
        self.generated: list[StreamBlockId] = []
        self.generated_at: list[int] = []
        self.pushed: list[tuple[StreamBlockId, list[Any]]] = []
        self.errors: list[tuple[str, BaseException]] = []
        self.max_in_flight = 0
        self.added_since_block = 0  # records whose on_add_data ran since the last cut
        self.added_per_block: dict[StreamBlockId, int] = {}
        self.push_threads: set[str] = set()

    def on_add_data(self, data: Any, metadata: Any) -> None:
        with self.lock:
            self.added.append((data, metadata))
            self.added_since_block += len(data) if isinstance(data, list) else 1

    def on_generate_block(self, block_id: StreamBlockId) -> None:
        with self.lock:
            self.generated.append(block_id)
            self.generated_at.append(self.clock())
            self.added_per_block[block_id] = self.added_since_block
            self.added_since_block = 0
            self.max_in_flight = max(self.max_in_flight, len(self.generated) - len(self.pushed))

    def on_push_block(self, block_id: StreamBlockId, records: list[Any]) -> None:
        if self.gate is not None:
            assert self.gate.wait(20), "the test never opened the gate"
        with self.lock:
            self.pushed.append((block_id, list(records)))
            self.push_threads.add(threading.current_thread().name)

    def on_error(self, message: str, error: BaseException) -> None:
        with self.lock:
            self.errors.append((message, error))

    def pushed_records(self) -> list[Any]:
        with self.lock:
            return [record for _, records in self.pushed for record in records]

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return len(self.generated), len(self.pushed)


def set_and_wait_seen(clock: ManualClock, now: int, reads: int = 2) -> None:
    """Set the clock and wait until the generator's timer thread has read the new time `reads` times: a timer
    that has read it twice has acted on it (one read to see its tick is due, one after the tick to plan the
    next)."""
    clock.set(now)
    wait_until(lambda: clock.reads >= reads, what=f"the timer to read the clock at {now} {reads} times")


@pytest.fixture
def generators() -> Iterator[list[tuple[BlockGenerator, Recorder]]]:
    """Generators a test made; each is stopped (gates opened first) even when the test fails."""
    made: list[tuple[BlockGenerator, Recorder]] = []
    yield made
    for generator, recorder in made:
        if recorder.gate is not None:
            recorder.gate.set()
        generator.stop()


@pytest.fixture
def make(generators: list) -> Callable[..., tuple[BlockGenerator, Recorder]]:
    def _make(recorder: Recorder | None = None, start: bool = True, **options: Any) -> tuple[BlockGenerator, Recorder]:
        recorder = recorder or Recorder()
        generator = BlockGenerator(recorder, options.pop("receiver_id", 7), **options)
        generators.append((generator, recorder))
        if start:
            generator.start()
        return generator, recorder

    return _make


# -- blocks, ids, intervals ------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_a_block_is_cut_every_interval_named_after_its_tick(make: Callable) -> None:
    generator, recorder = make(block_interval=0.02)
    for i in range(6):
        generator.add_data(i)
        wait_until(lambda i=i: len(recorder.pushed_records()) == i + 1, what=f"record {i} to be pushed")
    generator.stop()
    assert recorder.pushed_records() == list(range(6))
    ids = [block_id for block_id, _ in recorder.pushed]
    assert all(block_id.receiver_id == 7 for block_id in ids)
    uniques = [block_id.unique_id for block_id in ids]
    assert uniques == sorted(set(uniques)), "ids strictly increase"
    for block_id, cut_at in zip(recorder.generated, recorder.generated_at):
        tick = block_id.unique_id + 20
        assert tick % 20 == 0, "ticks are aligned to multiples of the interval"
        assert tick <= cut_at < tick + 2000, "the block was cut at its tick, not before it"


@pytest.mark.timeout(30)
def test_ids_are_tick_minus_interval_and_empty_ticks_make_no_block(make: Callable) -> None:
    clock = ManualClock(1_050)
    generator, recorder = make(Recorder(clock=clock), block_interval=0.1, clock=clock)
    for tick in (1_100, 1_200):
        generator.add_data(tick)
        clock.set(tick)
        wait_until(lambda tick=tick: len(recorder.pushed) == (tick - 1_000) // 100, what=f"the block of tick {tick}")
    set_and_wait_seen(clock, 1_300)  # nothing buffered: no block
    generator.add_data("late")
    clock.set(1_400)
    wait_until(lambda: len(recorder.pushed) == 3, what="the block of tick 1400")
    assert [(b.unique_id, records) for b, records in recorder.pushed] == [
        (1_000, [1_100]),
        (1_100, [1_200]),
        (1_300, ["late"]),
    ]
    assert [str(b) for b, _ in recorder.pushed] == ["input-7-1000", "input-7-1100", "input-7-1300"]


@pytest.mark.timeout(30)
def test_ids_stay_unique_and_increasing_when_the_clock_jumps_back(make: Callable) -> None:
    clock = ManualClock(1_050)
    generator, recorder = make(Recorder(clock=clock), block_interval=0.1, clock=clock)
    generator.add_data("a")
    clock.set(1_100)
    wait_until(lambda: len(recorder.pushed) == 1, what="the first block")
    # the wall clock goes back: the timer re-aligns to it, and its next ticks (600, 700) repeat used times
    set_and_wait_seen(clock, 500)
    generator.add_data("b")
    clock.set(600)
    wait_until(lambda: len(recorder.pushed) == 2, what="a block after the jump")
    generator.add_data("c")
    clock.set(700)
    wait_until(lambda: len(recorder.pushed) == 3, what="a second block after the jump")
    assert [(b.unique_id, records) for b, records in recorder.pushed] == [
        (1_000, ["a"]),
        (1_001, ["b"]),
        (1_002, ["c"]),
    ]


@pytest.mark.timeout(30)
def test_blocks_are_named_after_the_current_time_after_the_clock_jumps_forward(make: Callable) -> None:
    clock = ManualClock(1_050)
    generator, recorder = make(Recorder(clock=clock), block_interval=0.1, clock=clock)
    set_and_wait_seen(clock, 1_100)  # the 1100 tick is done; the timer waits for 1200
    # it fires the 1200 tick late (two reads), then the 9000 tick rather than 1300, 1400, ... (two more)
    set_and_wait_seen(clock, 9_050, reads=4)
    generator.add_data("after the jump")
    clock.set(9_100)
    wait_until(lambda: len(recorder.pushed) == 1, what="the block after the jump")
    assert recorder.pushed == [(StreamBlockId(7, 9_000), ["after the jump"])]


@pytest.mark.timeout(30)
def test_a_duration_is_accepted_as_the_block_interval() -> None:
    assert BlockGenerator(Recorder(), 1, block_interval=Duration.of_millis(20)).block_interval_ms == 20
    assert BlockGenerator(Recorder(), 1).block_interval_ms == 200


# -- delivery ------------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_every_record_is_pushed_once_in_order_across_many_blocks(make: Callable) -> None:
    generator, recorder = make(block_interval=0.005, block_queue_size=2)
    added = 0
    while recorder.counts()[0] < 8:
        generator.add_data(added)
        added += 1
    generator.stop()
    assert generator.state is BlockGeneratorState.STOPPED_ALL
    assert recorder.pushed_records() == list(range(added))
    assert len(recorder.pushed) >= 8
    assert recorder.push_threads == {"BlockPusher-7"}
    assert recorder.errors == []


@settings(max_examples=30, deadline=None)
@given(
    counts=st.lists(st.integers(min_value=0, max_value=2_000), min_size=1, max_size=4),
    modes=st.lists(st.sampled_from(["single", "callback", "multiple"]), min_size=4, max_size=4),
    stop_after=st.one_of(st.none(), st.integers(min_value=0, max_value=4_000)),
    interval_ms=st.integers(min_value=1, max_value=15),
    queue_size=st.integers(min_value=1, max_value=4),
    chunk=st.integers(min_value=1, max_value=50),
)
@pytest.mark.timeout(120)
def test_concurrent_producers_and_a_stop_at_any_moment_lose_and_duplicate_nothing(
    counts: list[int], modes: list[str], stop_after: int | None, interval_ms: int, queue_size: int, chunk: int
) -> None:
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
    try:
        run_producers_and_stop(counts, modes, stop_after, interval_ms, queue_size, chunk)
    finally:
        sys.setswitchinterval(switch_interval)


def run_producers_and_stop(
    counts: list[int], modes: list[str], stop_after: int | None, interval_ms: int, queue_size: int, chunk: int
) -> None:
    recorder = Recorder()
    generator = BlockGenerator(recorder, 3, block_interval=interval_ms / 1000, block_queue_size=queue_size)
    generator.start()
    accepted: list[list[tuple[int, int]]] = [[] for _ in counts]
    rejected: list[BaseException | None] = [None for _ in counts]

    def produce(producer: int) -> None:
        records = [(producer, seq) for seq in range(counts[producer])]
        mode = modes[producer]
        try:
            if mode == "multiple":
                for start in range(0, len(records), chunk):
                    batch = records[start : start + chunk]
                    generator.add_multiple_data_with_callback(iter(batch), producer)
                    accepted[producer].extend(batch)
            else:
                for record in records:
                    if mode == "single":
                        generator.add_data(record)
                    else:
                        generator.add_data_with_callback(record, producer)
                    accepted[producer].append(record)
        except BlockGeneratorStateError as error:
            rejected[producer] = error

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(len(counts))]
    for thread in threads:
        thread.start()
    if stop_after is not None:
        wait_until(lambda: sum(map(len, accepted)) >= stop_after or not any(t.is_alive() for t in threads))
    else:
        for thread in threads:
            thread.join(20)
    generator.stop()
    for thread in threads:
        thread.join(20)
        assert not thread.is_alive()

    pushed = recorder.pushed_records()
    assert len(pushed) == len(set(pushed)), "a record was pushed twice"
    for producer in range(len(counts)):
        mine = [record for record in pushed if record[0] == producer]
        assert mine == accepted[producer], f"producer {producer}: lost or reordered records"
        if rejected[producer] is not None:
            assert re.search(r"is Stopped(AddingData|GeneratingBlocks|All), not Active", str(rejected[producer]))
        else:
            assert len(accepted[producer]) == counts[producer]
    # the callbacks ran atomically with the appends: each block holds exactly the records announced before it
    for block_id, records in recorder.pushed:
        announced = recorder.added_per_block[block_id]
        assert announced == sum(1 for record in records if modes[record[0]] != "single")
    assert recorder.errors == []


# -- bounds --------------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_a_slow_listener_keeps_at_most_queue_size_plus_two_blocks_in_flight(make: Callable) -> None:
    gate = threading.Event()
    generator, recorder = make(Recorder(gate), block_interval=0.01, block_queue_size=2)
    producing = threading.Event()
    producing.set()
    added = []

    def produce() -> None:
        i = 0
        while producing.is_set():
            try:
                generator.add_data(i)
            except BlockGeneratorStateError:
                return
            added.append(i)
            i += 1

    producer = threading.Thread(target=produce)
    producer.start()
    try:
        wait_until(lambda: recorder.counts()[0] == 4, what="queue size + 2 blocks")
        # twenty more intervals pass; the timer is waiting on the full queue and cuts nothing
        assert holds_for(lambda: recorder.counts() == (4, 0), 0.2)
    finally:
        gate.set()
        producing.clear()
        producer.join(20)
    generator.stop()
    assert recorder.max_in_flight == 4
    assert recorder.pushed_records() == added


@pytest.mark.timeout(30)
def test_add_data_waits_without_dropping_when_the_buffer_limit_and_the_queue_are_full(make: Callable) -> None:
    gate = threading.Event()
    generator, recorder = make(Recorder(gate), block_interval=0.01, block_queue_size=1, max_buffer_records=100)
    producing = threading.Event()
    producing.set()
    added = []

    def produce() -> None:
        i = 0
        while producing.is_set():
            generator.add_data_with_callback(i, None)
            added.append(i)
            i += 1

    producer = threading.Thread(target=produce)
    producer.start()
    try:
        # one block being pushed, one queued, one held by the waiting timer; then the buffer fills to its limit
        wait_until(lambda: recorder.counts()[0] == 3 and recorder.added_since_block >= 100, what="saturation")
        frozen = len(added)
        assert holds_for(lambda: len(added) == frozen and recorder.added_since_block == 100, 0.2), (
            "add_data kept adding past the buffer limit while the queue was full"
        )
        assert producer.is_alive()
    finally:
        gate.set()
        wait_until(lambda: len(added) > frozen + 1_000, what="the producer to resume")
        producing.clear()
        producer.join(20)
    generator.stop()
    assert recorder.pushed_records() == added
    assert recorder.errors == []


@pytest.mark.timeout(30)
def test_max_rate_paces_add_data(make: Callable) -> None:
    """The limiter's invariant, whatever the machine's load: over T seconds at most rate * (T + 1) records (a
    second of stored permits at most), plus the one in flight. So 250 records at 100/s take >= 1.49 s."""
    generator, recorder = make(max_rate=100, block_interval=0.02)
    start = time.monotonic()
    for i in range(250):
        generator.add_data(i)
    elapsed = time.monotonic() - start
    generator.stop()
    assert elapsed >= (250 - 1 - 100) / 100
    assert recorder.pushed_records() == list(range(250))


# -- lifecycle -----------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_adding_outside_active_raises_naming_the_state(make: Callable) -> None:
    generator, _ = make(start=False)
    for add in (
        lambda: generator.add_data(1),
        lambda: generator.add_data_with_callback(1, None),
        lambda: generator.add_multiple_data_with_callback([1], None),
    ):
        with pytest.raises(BlockGeneratorStateError, match="is Initialized, not Active; call start"):
            add()
    generator.start()
    generator.add_data(1)
    generator.stop()
    for add in (
        lambda: generator.add_data(2),
        lambda: generator.add_data_with_callback(2, None),
        lambda: generator.add_multiple_data_with_callback([2], None),
    ):
        with pytest.raises(BlockGeneratorStateError, match="is StoppedAll, not Active"):
            add()


@pytest.mark.timeout(30)
def test_while_stopping_adds_are_refused_and_stop_waits_for_the_last_push(make: Callable) -> None:
    gate = threading.Event()
    generator, recorder = make(Recorder(gate), block_interval=0.01, block_queue_size=1)
    generator.add_data("first")
    wait_until(lambda: recorder.counts()[0] == 1, what="the first block (held by the gate)")
    generator.add_data("second")
    wait_until(lambda: recorder.counts()[0] == 2, what="the second block (queued)")
    generator.add_data("last")
    stopper = threading.Thread(target=generator.stop)
    stopper.start()
    # the timer's last block waits on the full queue: no more adds, blocks still being generated
    wait_until(lambda: generator.state is BlockGeneratorState.STOPPED_ADDING_DATA, what="StoppedAddingData")
    with pytest.raises(BlockGeneratorStateError, match="StoppedAddingData"):
        generator.add_data("too late")
    assert stopper.is_alive(), "stop() returned before its blocks were pushed"
    gate.set()
    stopper.join(20)
    assert generator.state is BlockGeneratorState.STOPPED_ALL
    assert recorder.pushed_records() == ["first", "second", "last"]


@pytest.mark.timeout(30)
def test_start_twice_or_after_stop_raises_naming_the_state(make: Callable) -> None:
    generator, _ = make()
    with pytest.raises(BlockGeneratorStateError, match="it is Active"):
        generator.start()
    generator.stop()
    with pytest.raises(BlockGeneratorStateError, match="it is StoppedAll"):
        generator.start()


@pytest.mark.timeout(30)
def test_stop_before_start_ends_it_and_stop_twice_is_harmless(make: Callable) -> None:
    never_started, _ = make(start=False)
    never_started.stop()
    assert never_started.state is BlockGeneratorState.STOPPED_ALL
    with pytest.raises(BlockGeneratorStateError, match="StoppedAll"):
        never_started.start()
    generator, recorder = make()
    generator.add_data("x")
    generator.stop()
    generator.stop()
    assert recorder.pushed_records() == ["x"]


@pytest.mark.timeout(30)
def test_stop_from_a_listener_hook_is_refused_instead_of_deadlocking(make: Callable) -> None:
    outcome: list[BaseException] = []

    class StopsInPush(Recorder):
        def on_push_block(self, block_id: StreamBlockId, records: list[Any]) -> None:
            try:
                generator.stop()
            except BlockGeneratorStateError as error:
                outcome.append(error)
            super().on_push_block(block_id, records)

    generator, recorder = make(StopsInPush(), block_interval=0.01)
    generator.add_data(1)
    wait_until(lambda: outcome, what="the push")
    assert "BlockPusher-7" in str(outcome[0])
    assert generator.state is BlockGeneratorState.ACTIVE
    generator.stop()
    assert recorder.pushed_records() == [1]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("interval", [0, -0.2, 0.0004, float("nan"), "200ms", None, Duration.of_millis(0)])
def test_a_non_positive_block_interval_is_rejected_naming_the_key(interval: object) -> None:
    with pytest.raises(InvalidJobError) as info:
        BlockGenerator(Recorder(), 1, block_interval=interval)  # type: ignore[arg-type]
    assert repr(interval) in str(info.value)
    assert "receiver.block-interval" in str(info.value)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("size", [0, -1, 2.5, None])
def test_a_block_queue_size_below_one_is_rejected_naming_the_key(size: object) -> None:
    with pytest.raises(InvalidJobError) as info:
        BlockGenerator(Recorder(), 1, block_queue_size=size)  # type: ignore[arg-type]
    assert repr(size) in str(info.value)
    assert "receiver.block-queue-size" in str(info.value)


@pytest.mark.timeout(30)
def test_bad_rate_and_buffer_limits_are_rejected() -> None:
    with pytest.raises(InvalidJobError, match="receiver.max-rate"):
        BlockGenerator(Recorder(), 1, max_rate=-1)
    with pytest.raises(InvalidJobError, match="max_buffer_records"):
        BlockGenerator(Recorder(), 1, max_buffer_records=0)


# -- listener hooks ------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_on_add_data_hears_every_record_with_its_metadata(make: Callable) -> None:
    generator, recorder = make(block_interval=0.01)
    for i in range(500):
        generator.add_data_with_callback(i, {"offset": i})
    generator.add_multiple_data_with_callback(iter(range(500, 600)), "batch")
    generator.add_data("no callback")
    generator.stop()
    assert recorder.added == [(i, {"offset": i}) for i in range(500)] + [(list(range(500, 600)), "batch")]
    assert recorder.pushed_records() == list(range(600)) + ["no callback"]
    batch_blocks = [b for b, records in recorder.pushed if 500 in records]
    assert len(batch_blocks) == 1 and set(range(500, 600)) <= set(dict(recorder.pushed)[batch_blocks[0]])


@pytest.mark.timeout(30)
def test_no_block_is_cut_while_on_add_data_runs(make: Callable) -> None:
    entered, release = threading.Event(), threading.Event()

    class SlowCallback(Recorder):
        def on_add_data(self, data: Any, metadata: Any) -> None:
            entered.set()
            assert release.wait(20)
            super().on_add_data(data, metadata)

    clock = ManualClock(1_050)
    generator, recorder = make(SlowCallback(clock=clock), block_interval=0.1, clock=clock)
    adder = threading.Thread(target=generator.add_data_with_callback, args=("r", "offset-1"))
    adder.start()
    try:
        assert entered.wait(20)
        set_and_wait_seen(clock, 1_100, reads=1)  # the tick is due; the record is appended, its callback running
        assert holds_for(lambda: recorder.counts()[0] == 0, 0.1), "a block was cut between append and callback"
    finally:
        release.set()
        adder.join(20)
    wait_until(lambda: len(recorder.pushed) == 1, what="the block")
    assert recorder.added_per_block == {StreamBlockId(7, 1_000): 1}
    assert recorder.pushed == [(StreamBlockId(7, 1_000), ["r"])]


@pytest.mark.timeout(30)
def test_on_error_hears_push_failures_and_pushing_goes_on(make: Callable) -> None:
    failure = ValueError("the block store is full")

    class FailsFirstPush(Recorder):
        def on_push_block(self, block_id: StreamBlockId, records: list[Any]) -> None:
            if not self.errors:
                raise failure
            super().on_push_block(block_id, records)

    generator, recorder = make(FailsFirstPush(), block_interval=0.01)
    generator.add_data("lost")
    wait_until(lambda: recorder.errors, what="the error")
    generator.add_data("kept")
    generator.stop()
    message, error = recorder.errors[0]
    assert error is failure
    assert str(recorder.generated[0]) in message
    assert recorder.pushed_records() == ["kept"]


@pytest.mark.timeout(30)
def test_a_failing_on_generate_block_is_reported_and_the_block_still_pushed(make: Callable) -> None:
    class FailsToGenerate(Recorder):
        def on_generate_block(self, block_id: StreamBlockId) -> None:
            raise RuntimeError(f"cannot note {block_id}")

    generator, recorder = make(FailsToGenerate(), block_interval=0.01)
    generator.add_data("kept")
    generator.stop()
    assert recorder.pushed_records() == ["kept"]
    assert len(recorder.errors) == 1
    assert isinstance(recorder.errors[0][1], RuntimeError)
    assert "on_generate_block" in recorder.errors[0][0]


# -- the data types ------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_stream_block_id_names_and_orders_like_spark() -> None:
    block_id = StreamBlockId(2, 1_700_000_000_000)
    assert str(block_id) == block_id.name == "input-2-1700000000000"
    assert StreamBlockId.from_name(block_id.name) == block_id
    assert StreamBlockId(2, 5) < StreamBlockId(2, 6) < StreamBlockId(3, 0)
    assert len({StreamBlockId(1, 1), StreamBlockId(1, 1)}) == 1
    with pytest.raises(ValueError, match="input-<receiver id>-<unique id>"):
        StreamBlockId.from_name("rdd_1_2")
    with pytest.raises(AttributeError):
        block_id.unique_id = 3  # type: ignore[misc]
    block = Block(block_id, [1, 2])
    info = ReceivedBlockInfo(stream_id=2, num_records=2, metadata=None, block_id=block.id, store_result="s")
    assert (info.block_id, info.num_records, info.store_result) == (block_id, 2, "s")
