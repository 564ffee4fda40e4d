"""BlockGenerator: cuts the records a receiver stores into blocks, one per block interval, and pushes them.

Two threads besides the receiver's own (DESIGN 2.5, after Spark Streaming's BlockGenerator):

1. The receiver calls `add_data` (or a `*_with_callback` variant); the record is appended to the current
   buffer under the generator's lock.
2. A recurring timer ticks at every multiple of the block interval. Under the same lock it swaps the current
   buffer for an empty one and, if the old one held data, names a block `(receiver_id, tick − interval)`
   (milliseconds), tells the listener (`on_generate_block`) and, outside the lock, puts the block into a
   bounded queue of `block_queue_size`. When the queue is full the timer waits, so at most queue size + 2
   blocks exist at once: the queue's, the one the timer holds, the one being pushed.
3. A pushing thread polls the queue every 10 ms and hands each block to `listener.on_push_block`. An
   exception there goes to `listener.on_error`; the thread carries on with the next block.

Guarantees and hazards:

- `on_add_data` runs under the lock that also guards the append and the buffer swap, so a block never holds a
  record whose callback has not finished, and `on_generate_block` sees every callback of the block's records.
  Both callbacks block the receiver and the timer while they run: keep them short.
- Records reach `on_push_block` exactly once, in the order they were added (per adding thread; records of
  several threads interleave in the order they took the lock). Blocks are pushed in the order they were cut.
  A block whose push raised is reported to `on_error`, not retried.
- A timer that fell behind by a whole interval (it waited on a full queue) skips the missed ticks instead of
  firing them back to back, which would flood the queue with tiny blocks.
- Memory is bounded: `add_data` waits (it never drops) while the current buffer holds `max_buffer_records`
  or more and the queue is full; with `max_rate` a RateLimiter paces it to that many records per second.
- Block ids strictly increase, even when the clock jumps: a tick whose id would not exceed the last one's
  takes the last id + 1.

Lifecycle (illegal calls raise BlockGeneratorStateError naming the state):
Initialized -start-> Active -stop-> StoppedAddingData -> StoppedGeneratingBlocks -> StoppedAll. `stop()`:

1. StoppedAddingData: every add from now on raises; adders waiting for room wake up and raise too.
2. The timer cuts one last block from whatever the buffer still holds (at once, with the id of the pending
   tick), then ends: StoppedGeneratingBlocks.
3. The pushing thread drains the queue and ends: StoppedAll. Only then does `stop()` return, so everything
   added before `stop()` was called has been pushed.
"""

from __future__ import annotations

import abc
import enum
import logging
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any

from fluvial.common.errors import FluvialError, InvalidJobError
from fluvial.common.time import Duration, current_millis
from fluvial.receiver.blocks import Block, StreamBlockId
from fluvial.receiver.rate_limiter import RateLimiter

logger = logging.getLogger(__name__)

DEFAULT_BLOCK_INTERVAL = 0.2
DEFAULT_BLOCK_QUEUE_SIZE = 10
DEFAULT_MAX_BUFFER_RECORDS = 100_000
PUSH_POLL_SECONDS = 0.01
# The longest a waiting thread sleeps before it looks again at a clock that may be fake or may have jumped.
_MAX_WAIT_SLICE_SECONDS = 0.05

Clock = Callable[[], int]


class BlockGeneratorStateError(FluvialError, RuntimeError):
    """A BlockGenerator was asked to do something its lifecycle state does not allow."""


class BlockGeneratorState(enum.Enum):
    INITIALIZED = "Initialized"
    ACTIVE = "Active"
    STOPPED_ADDING_DATA = "StoppedAddingData"
    STOPPED_GENERATING_BLOCKS = "StoppedGeneratingBlocks"
    STOPPED_ALL = "StoppedAll"


# Looking a member up on an Enum class costs ~100 ns; the add path checks the state twice per record.
_ACTIVE = BlockGeneratorState.ACTIVE


class BlockGeneratorListener(abc.ABC):
    """What a BlockGenerator tells its owner (the receiver supervisor). Each hook names the thread it runs on."""

    @abc.abstractmethod
    def on_add_data(self, data: Any, metadata: Any) -> None:
        """After `add_data_with_callback` buffered `data` (for `add_multiple_data_with_callback`: the list of
        records, once). On the adding thread, under the generator's lock: no block is cut while it runs, so
        metadata updated here (an offset) is in step with the buffer. Never blocks for long."""

    @abc.abstractmethod
    def on_generate_block(self, block_id: StreamBlockId) -> None:
        """A block was cut. On the timer thread, under the generator's lock: no record is added while it runs,
        so it sees exactly the `on_add_data` calls of the block's records. An exception goes to `on_error`
        and the block is still queued: the generator never drops records."""

    @abc.abstractmethod
    def on_push_block(self, block_id: StreamBlockId, records: list[Any]) -> None:
        """Store the block (block store, write-ahead log) and report it. On the pushing thread, one block at a
        time, in the order the blocks were cut; while it runs the queue fills and then the timer waits. An
        exception goes to `on_error`; the block is not retried here — storage retries (the write-ahead log)
        happen inside the push, and a push that still fails makes the ReceiverSupervisor end the stream with
        the error, so no later block is pushed past the gap."""

    @abc.abstractmethod
    def on_error(self, message: str, error: BaseException) -> None:
        """Something failed on the timer or pushing thread; the generator keeps running. The owner decides
        whether to restart the receiver. Must not call `stop()` on this thread (it would wait for itself)."""


class RecurringTimer:
    """Calls `callback(tick_ms)` at every multiple of `period_ms` on its own thread, from the first multiple after
    `start()`, and once more at `stop()`.

    Tick times strictly increase. If the timer falls behind by a whole period or more (the callback waited on
    a full queue, the clock jumped forward) it skips the missed ticks and fires at the latest multiple at once.
    If the clock jumps back below the last tick it re-aligns to the clock rather than wait for it to catch up;
    the ticks then repeat earlier times, which the BlockGenerator's id guard turns into fresh ids.
    """

    def __init__(self, clock: Clock, period_ms: int, callback: Callable[[int], None], name: str) -> None:
        self._clock = clock
        self._period = period_ms
        self._callback = callback
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._next_tick = 0

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def start(self) -> int:
        """Starts ticking; returns the first tick time."""
        self._next_tick = (self._clock() // self._period + 1) * self._period
        self._thread.start()
        return self._next_tick

    def stop(self) -> None:
        """Fires the pending tick at once (its callback runs to completion, even if it waits), then ends."""
        self._stopping.set()
        self._thread.join()

    def _run(self) -> None:
        last_tick: int | None = None
        while not self._stopping.is_set():
            if self._wait_for(self._next_tick, last_tick):
                self._callback(self._next_tick)
                last_tick = self._next_tick
                self._next_tick = self._following(last_tick)
        self._callback(self._next_tick)

    def _wait_for(self, tick: int, last_tick: int | None) -> bool:
        """Waits until the clock reaches `tick`; False when stop was asked first."""
        while True:
            now = self._clock()
            if now >= tick:
                return True
            if last_tick is not None and now < last_tick:  # the clock went back: re-align to it
                tick = self._next_tick = (now // self._period + 1) * self._period
            if self._stopping.wait(min((tick - now) / 1000, _MAX_WAIT_SLICE_SECONDS)):
                return False

    def _following(self, tick: int) -> int:
        following = tick + self._period
        latest = self._clock() // self._period * self._period
        return latest if latest >= following + self._period else following


class BlockGenerator:
    """Cuts one receiver's records into blocks every `block_interval` seconds and pushes them to `listener`.

    `max_rate` caps records per second (0: unlimited, `receiver.max-rate`); `max_buffer_records` is the buffer
    size beyond which adders wait while the queue is full; `clock() -> ms` names the blocks and drives the timer.
    See the module docstring for the protocol.
    """

    def __init__(
        self,
        listener: BlockGeneratorListener,
        receiver_id: int,
        block_interval: float | Duration = DEFAULT_BLOCK_INTERVAL,
        block_queue_size: int = DEFAULT_BLOCK_QUEUE_SIZE,
        max_rate: float = 0,
        max_buffer_records: int = DEFAULT_MAX_BUFFER_RECORDS,
        clock: Clock = current_millis,
    ) -> None:
        self._interval_ms = _block_interval_ms(block_interval)
        _require_at_least_one(block_queue_size, "block queue size", "receiver.block-queue-size")
        _require_at_least_one(max_buffer_records, "max buffer records", "max_buffer_records")
        self._listener = listener
        self._receiver_id = receiver_id
        self._rate_limiter = RateLimiter(max_rate)
        self._paced = self._rate_limiter.limited
        self._max_buffer_records = max_buffer_records
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # notified when the buffer is swapped or the queue shrinks
        self._waiting_adders = 0
        self._buffer: list[Any] = []
        self._queue: queue.Queue[Block] = queue.Queue(block_queue_size)
        self._state = BlockGeneratorState.INITIALIZED
        self._last_unique_id: int | None = None
        self._stopped_all = threading.Event()
        self._timer = RecurringTimer(clock, self._interval_ms, self._on_tick, f"BlockGenerator-{receiver_id}")
        self._pusher = threading.Thread(
            target=self._keep_pushing_blocks, name=f"BlockPusher-{receiver_id}", daemon=True
        )

    @property
    def state(self) -> BlockGeneratorState:
        return self._state

    @property
    def receiver_id(self) -> int:
        return self._receiver_id

    @property
    def block_interval_ms(self) -> int:
        return self._interval_ms

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Initialized → Active: starts the timer and the pushing thread. A generator starts once."""
        with self._lock:
            if self._state is not BlockGeneratorState.INITIALIZED:
                raise BlockGeneratorStateError(
                    f"cannot start the BlockGenerator of receiver {self._receiver_id}: it is "
                    f"{self._state.value}, and only an Initialized generator can start; create a new one"
                )
            self._state = BlockGeneratorState.ACTIVE
            self._timer.start()
            self._pusher.start()

    def stop(self) -> None:
        """Stops in the order of the module docstring's steps and returns when every block has been pushed.

        Stopping an Initialized generator just ends it (StoppedAll). A second `stop()` waits for the first.
        Calling it on the timer or pushing thread (from a listener hook) raises: it would wait for itself.
        """
        current = threading.current_thread()
        if current is self._timer.thread or current is self._pusher:
            raise BlockGeneratorStateError(
                f"stop() was called on the {current.name} thread of the BlockGenerator of receiver "
                f"{self._receiver_id}, from a listener hook; it would wait for that thread to end. Stop the "
                f"generator from another thread"
            )
        with self._lock:
            state = self._state
            if state is BlockGeneratorState.INITIALIZED:
                self._state = BlockGeneratorState.STOPPED_ALL
                self._stopped_all.set()
                return
            if state is BlockGeneratorState.ACTIVE:
                self._state = BlockGeneratorState.STOPPED_ADDING_DATA  # step 1
                self._room.notify_all()
        if state is not BlockGeneratorState.ACTIVE:
            self._stopped_all.wait()
            return
        self._timer.stop()  # step 2: the last tick cuts the remaining buffer
        with self._lock:
            self._state = BlockGeneratorState.STOPPED_GENERATING_BLOCKS
        self._pusher.join()  # step 3: the pushing thread drains the queue
        with self._lock:
            self._state = BlockGeneratorState.STOPPED_ALL
        self._stopped_all.set()

    # -- adding data (the receiver's thread) -----------------------------------------------------------------

    def add_data(self, data: Any) -> None:
        """Buffers one record; waits while the rate limit or the memory bound says so."""
        if self._paced:
            self._pace(1)
        with self._lock:
            if self._state is not _ACTIVE:
                raise self._not_active("add data")
            buffer = self._buffer
            if len(buffer) >= self._max_buffer_records:
                buffer = self._wait_for_room()
            buffer.append(data)

    def add_data_with_callback(self, data: Any, metadata: Any) -> None:
        """Buffers one record and, atomically with it, calls `listener.on_add_data(data, metadata)`."""
        if self._paced:
            self._pace(1)
        with self._lock:
            if self._state is not _ACTIVE:
                raise self._not_active("add data")
            buffer = self._buffer
            if len(buffer) >= self._max_buffer_records:
                buffer = self._wait_for_room()
            buffer.append(data)
            self._listener.on_add_data(data, metadata)

    def add_multiple_data_with_callback(self, data: Iterable[Any], metadata: Any) -> None:
        """Buffers all of `data` in one go (they land in one block, in order) and, atomically with that, calls
        `listener.on_add_data(records, metadata)` once with the list of records."""
        if self._state is not _ACTIVE:
            raise self._not_active("add data")
        records = list(data)
        if self._paced:
            self._pace(len(records))
        with self._lock:
            if self._state is not _ACTIVE:
                raise self._not_active("add data")
            buffer = self._buffer
            if len(buffer) >= self._max_buffer_records:
                buffer = self._wait_for_room()
            buffer.extend(records)
            self._listener.on_add_data(records, metadata)

    def pace(self, records: int) -> None:
        """Waits until `records` more records may be stored under `max_rate` (a no-op without a rate limit): what
        a reliable `store(list)` calls, so the one rate limit covers both ways of storing."""
        if self._paced:
            self._rate_limiter.wait_to_push_many(records)

    def _pace(self, records: int) -> None:
        """Waits for the rate limiter, unless the generator is not Active (no point pacing a doomed add)."""
        if self._state is not _ACTIVE:
            raise self._not_active("add data")
        self._rate_limiter.wait_to_push_many(records)

    def _wait_for_room(self) -> list[Any]:
        """Holding the lock: waits while the buffer is at its limit and the queue is full; returns the buffer to
        append to. Raises if the generator stops meanwhile."""
        while len(self._buffer) >= self._max_buffer_records and self._queue.full():
            self._waiting_adders += 1
            try:
                self._room.wait(_MAX_WAIT_SLICE_SECONDS)
            finally:
                self._waiting_adders -= 1
            if self._state is not BlockGeneratorState.ACTIVE:
                raise self._not_active("add data")
        return self._buffer

    def _not_active(self, action: str) -> BlockGeneratorStateError:
        state = self._state
        if state is BlockGeneratorState.INITIALIZED:
            fix = "call start() first"
        else:
            fix = "stop() has been called; nothing is accepted after it"
        return BlockGeneratorStateError(
            f"cannot {action}: the BlockGenerator of receiver {self._receiver_id} is {state.value}, not "
            f"{BlockGeneratorState.ACTIVE.value}; {fix}"
        )

    # -- the timer thread ------------------------------------------------------------------------------------

    def _on_tick(self, tick_ms: int) -> None:
        """Step 2 of the protocol, once per tick."""
        try:
            with self._lock:
                if not self._buffer:
                    return
                records = self._buffer
                self._buffer = []
                self._room.notify_all()
                block = Block(self._next_block_id(tick_ms - self._interval_ms), records)
                try:
                    self._listener.on_generate_block(block.id)
                except Exception as error:  # noqa: BLE001 - reported, and the records still go out
                    self._report_error(f"on_generate_block failed for block {block.id}", error)
            self._queue.put(block)  # waits while the queue is full: the bound on blocks in flight
        except Exception as error:  # noqa: BLE001 - the timer must keep ticking
            self._report_error("error in the block generating thread", error)

    def _next_block_id(self, unique_id: int) -> StreamBlockId:
        """Holding the lock: the id for a tick, bumped past the last one if the clock made them collide."""
        last = self._last_unique_id
        if last is not None and unique_id <= last:
            unique_id = last + 1
        self._last_unique_id = unique_id
        return StreamBlockId(self._receiver_id, unique_id)

    # -- the pushing thread ----------------------------------------------------------------------------------

    def _keep_pushing_blocks(self) -> None:
        """Step 3: polls until blocks are no longer generated, then drains what the timer left in the queue."""
        while self._state is not BlockGeneratorState.STOPPED_GENERATING_BLOCKS:
            try:
                block = self._queue.get(timeout=PUSH_POLL_SECONDS)
            except queue.Empty:
                continue
            self._push(block)
        while True:
            try:
                block = self._queue.get_nowait()
            except queue.Empty:
                return
            self._push(block)

    def _push(self, block: Block) -> None:
        # The queue has a free slot again. Only take the lock when an adder waits (a stale read costs it one
        # wait slice): then a listener that blocks inside on_add_data cannot also stall the pushing thread.
        if self._waiting_adders:
            with self._lock:
                self._room.notify_all()
        try:
            self._listener.on_push_block(block.id, block.records)
        except Exception as error:  # noqa: BLE001 - one failed block must not stop the others
            self._report_error(f"error pushing block {block.id}", error)

    def _report_error(self, message: str, error: BaseException) -> None:
        try:
            self._listener.on_error(message, error)
        except Exception:  # noqa: BLE001 - nobody else to tell
            logger.exception("BlockGeneratorListener.on_error failed while reporting %r: %r", message, error)


def _block_interval_ms(block_interval: float | Duration) -> int:
    millis: float | None
    if isinstance(block_interval, Duration):
        millis = block_interval.to_milliseconds()
    elif isinstance(block_interval, (int, float)) and not isinstance(block_interval, bool):
        millis = block_interval * 1000
    else:
        millis = None
    if millis is None or not millis >= 1:
        raise InvalidJobError(
            f"block interval must be positive (at least 1 ms), got {block_interval!r} seconds; set "
            f"'receiver.block-interval' to a positive duration such as '200 ms' (the default)"
        )
    return int(round(millis))


def _require_at_least_one(value: int, what: str, key: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidJobError(f"{what} must be an integer >= 1, got {value!r}; set '{key}' to 1 or more")
