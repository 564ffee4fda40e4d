"""ReceiverSupervisor (seed 004): runs one receiver — its thread, its BlockGenerator, where its blocks are
stored and whom they are reported to — and restarts it when it asks to or crashes. It belongs to the job's
receiver services, not to a task, so it outlives failovers of the job's tasks (as Spark's receivers do).

Protocol, numbered:
1. `start()`: the BlockGenerator starts, then `on_start()` runs on the receiver's own thread.
2. Records stored one by one go through the BlockGenerator; each block it pushes — and each list stored at
   once — is stored by the ReceivedBlockHandler (block store, and the WAL when on) and then reported to the
   ReceiverTracker (AddBlock). A block the tracker does not accept is an error: nothing is acknowledged.
3. `restart_receiver(...)` (or an exception escaping on_start): on_stop, wait, on_start again on a new thread.
   The BlockGenerator keeps running, so records stored before the restart are not lost. The wait is the longer
   of the delay asked for and the back-off of the receiver's `restart_strategy`; when the strategy allows no
   more restarts, the receiver is stopped with the error instead (step 4), which fails the job — a receiver
   that can never start does not restart forever.
4. `stop(...)`: on_stop, then the BlockGenerator stops — flushing its last buffer and draining its queue —
   and reliable stores still in progress finish; only then is the stream marked ended, so every record stored
   before stop reaches the job. A reliable store that starts after stop raises (it must not be acknowledged).
   `stop(message, error)` keeps `stop_error`, which the receiver source raises after the last block. A
   supervisor that stopped is never started again: when the job restores the stream's task, the stream's
   services give it a new supervisor with a fresh restart budget (`ReceiverServices.revive`), as Flink
   re-creates a failed source on restart.
5. A block that cannot be stored durably (the write-ahead log failed past its retries, the tracker's log
   refused it) is never acknowledged, and the stream stops with that error: no later block is stored or
   tracked, so the job fails instead of finishing without the block, or emitting past a gap.
Metadata given with single records (`store(record, metadata)`) is collected per block, in order, and reported
as the block's `ReceivedBlockInfo.metadata` (a list); `store(list, metadata)` reports its metadata as given.
A position given with a reliable store (`store(list, position=p)`: where the upstream is after these records)
is tracked with the block — in the tracker's write-ahead log when it is on — and `last_stored_position()`
answers the newest one, so a receiver that starts again resumes its upstream there instead of being re-sent
what it stored but had not acknowledged. A position given with a single record (`store(record, position=p)`)
travels with the block the BlockGenerator cuts holding that record: the block's position is the newest given
with its records (the last one added). This is sound because the position becomes visible only when that block
is stored and tracked, and blocks are tracked in the order they were cut: every record added before a position
is in that block or an earlier one. A record still buffered when the receiver dies is lost with its position,
so the upstream re-sends it from the last tracked position. (A receiver that mixes single records with
positions and `store(list, position=...)` from one upstream must not: a list is tracked at once, ahead of the
buffered records before it.)
"""

from __future__ import annotations

import enum
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.restart_backoff import RestartBackoffTimeStrategy, create_backoff_strategy
from fluvial.common.time import current_millis
from fluvial.datastream.connectors.receiver import DEFAULT_RESTART_STRATEGY, ReceiverStoppedError
from fluvial.receiver.block_generator import BlockGenerator, BlockGeneratorListener
from fluvial.receiver.blocks import ReceivedBlockInfo, StreamBlockId

_log = logging.getLogger(__name__)

MAX_KEPT_ERRORS = 100  # `errors` keeps the newest ones: a receiver failing for hours must not grow memory


class ReceiverState(enum.Enum):
    INITIALIZED = "initialized"
    STARTED = "started"
    RESTARTING = "restarting"
    STOPPED = "stopped"


class ReceiverSupervisor(BlockGeneratorListener):
    def __init__(
        self,
        receiver: Any,
        stream_id: int,
        handler: Any,
        report_block: Callable[[ReceivedBlockInfo], bool],
        on_stream_end: Callable[[int], None],
        block_interval: float,
        block_queue_size: int,
        max_rate: float = 0,
        stored_position: Callable[[], Any] = lambda: None,
    ) -> None:
        self.last_stored_position = stored_position  # the newest position stored with a block (or None)
        self.receiver = receiver
        self.stream_id = stream_id
        self._handler = handler
        self._report_block = report_block
        self._on_stream_end = on_stream_end
        self._generator = BlockGenerator(self, stream_id, block_interval, block_queue_size, max_rate)
        self._state = ReceiverState.INITIALIZED
        self._lock = threading.RLock()
        self._reliable_done = threading.Condition(self._lock)
        self._reliable_in_flight = 0
        self._pending_metadata: list[Any] = []  # of records added since the last block (generator lock held)
        self._block_metadata: dict[StreamBlockId, list[Any]] = {}
        self._pending_position: Any = None  # the newest position stored with a buffered record (generator lock)
        self._block_position: dict[StreamBlockId, Any] = {}
        self.stop_error: BaseException | None = None
        self.stop_message: str | None = None
        # Reliable blocks get ids -1 - n. n starts from the clock (µs-scaled ms) rather than 0, so a supervisor
        # started after a JobMaster restart never reuses the id of a block the recovered tracker still holds
        # (the tracker takes a known id for a retried report and would drop the new block).
        self._unique = itertools.count(current_millis() * 1000)
        self._generation = 0
        self.restarts = 0
        self.errors: list[tuple[str, BaseException | None]] = []  # the newest MAX_KEPT_ERRORS
        self._backoff = _backoff_strategy(receiver)
        self._store_failure: BaseException | None = None
        self.finished = threading.Event()  # set once stopped and every block it stored is tracked
        receiver.stream_id = stream_id
        receiver.attach_supervisor(self)

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._generator.start()
        self._start_receiver()

    def _start_receiver(self) -> None:
        with self._lock:
            if self._state is ReceiverState.STOPPED:
                return
            self._state = ReceiverState.STARTED
            self._generation += 1
            generation = self._generation
        thread = threading.Thread(
            target=self._run_receiver,
            args=(generation,),
            name=f"receiver-{self.stream_id}-{self.receiver.name()}",
            daemon=True,
        )
        thread.start()

    def _run_receiver(self, generation: int) -> None:
        try:
            self.receiver.on_start()
        except BaseException as error:  # noqa: BLE001 - a crashed receiver thread is restarted, not fatal
            with self._lock:
                current = generation == self._generation and self._state is ReceiverState.STARTED
            if current:
                self.restart_receiver(
                    f"receiver '{self.receiver.name()}' (stream {self.stream_id}) crashed: "
                    f"{type(error).__name__}: {error}",
                    error,
                    0,
                )

    def restart_receiver(self, message: str, error: BaseException | None, delay: float) -> None:
        """Restart after at least `delay` seconds, or stop with `error` when the restart strategy says no more."""
        with self._lock:
            if self._state is not ReceiverState.STARTED:
                return
            self._state = ReceiverState.RESTARTING
            self.restarts += 1
            self._backoff.notify_failure(error)
            allowed = self._backoff.can_restart()
            # +1 ms: a crash right at the restart time must count as a new failure, not merge into this one
            wait_s = max(delay, (self._backoff.get_backoff_time() + 1) / 1000) if allowed else 0.0
        self.report_error(message, error, f" (restart {self.restarts}, in {wait_s:.3f} s)" if allowed else "")
        if not allowed:
            self.stop(
                f"{message}; gave up after {self.restarts - 1} restart(s), as the receiver's restart "
                f"strategy allows no more ({type(self.receiver).__name__}.restart_strategy)",
                error if error is not None else ReceiverStoppedError(message),
            )
            return
        threading.Thread(
            target=self._restart_after, args=(wait_s,), name=f"receiver-restart-{self.stream_id}", daemon=True
        ).start()

    def _restart_after(self, delay: float) -> None:
        self._call_on_stop()
        time.sleep(delay)
        with self._lock:
            if self._state is not ReceiverState.RESTARTING:
                return
        self._start_receiver()

    def stop(self, message: str = "stopped", error: BaseException | None = None) -> None:
        with self._lock:
            if self._state is ReceiverState.STOPPED:
                return
            self._state = ReceiverState.STOPPED
            self.stop_message, self.stop_error = message, error
        if error is not None:
            self.report_error(message, error)
        self._call_on_stop()
        threading.Thread(target=self._finish, name=f"receiver-stop-{self.stream_id}", daemon=True).start()

    def _finish(self) -> None:
        try:
            self._generator.stop()  # flushes the last buffer and pushes every queued block
            with self._lock:
                while self._reliable_in_flight:  # a store(list) accepted before stop is tracked before the end
                    self._reliable_done.wait()
        finally:
            self._on_stream_end(self.stream_id)
            self.finished.set()

    def _call_on_stop(self) -> None:
        try:
            self.receiver.on_stop()
        except BaseException as error:  # noqa: BLE001
            self.report_error(f"on_stop of receiver '{self.receiver.name()}' failed", error)

    def is_receiver_started(self) -> bool:
        return self._state is ReceiverState.STARTED

    def is_receiver_stopped(self) -> bool:
        return self._state in (ReceiverState.STOPPED, ReceiverState.RESTARTING)

    @property
    def state(self) -> ReceiverState:
        return self._state

    def report_error(self, message: str, error: BaseException | None, detail: str = "") -> None:
        """Keep (message, error) in `errors` and log it; `detail` goes to the log only."""
        self.errors.append((message, error))
        if len(self.errors) > MAX_KEPT_ERRORS:
            del self.errors[0]
        _log.warning(
            "receiver %s (stream %s): %s%s", self.receiver.name(), self.stream_id, message, detail, exc_info=error
        )

    # -- data ---------------------------------------------------------------------------------------------------

    def push_single(self, data: Any) -> None:
        self._generator.add_data(data)

    def push_single_with_metadata(self, data: Any, metadata: Any) -> None:
        self._generator.add_data_with_callback(data, metadata)

    def push_single_with_position(self, data: Any, metadata: Any, position: Any) -> None:
        """One record and where the upstream is after it: the position goes with the block holding the record."""
        self._generator.add_data_with_callback(data, _Positioned(metadata, position))

    def push_array(self, records: list, metadata: Any = None, position: Any = None) -> None:
        """Reliable store: one block now, returning once it is stored and tracked (paced by `receiver.max-rate`
        first, like records stored one by one). Raises ReceiverStoppedError
        after stop: the stream may have ended, so the block would never be emitted."""
        self._generator.pace(len(records))
        with self._lock:
            if self._state is ReceiverState.STOPPED:
                raise ReceiverStoppedError(
                    f"receiver '{self.receiver.name()}' (stream {self.stream_id}) is stopped "
                    f"({self.stop_message}); store(list) accepts nothing after stop - do not acknowledge"
                )
            self._reliable_in_flight += 1
        try:
            block_id = StreamBlockId(self.stream_id, -1 - next(self._unique))  # negative: never a generator id
            self._push_block(block_id, list(records), metadata, position)
        finally:
            with self._lock:
                self._reliable_in_flight -= 1
                self._reliable_done.notify_all()

    # -- BlockGeneratorListener ---------------------------------------------------------------------------------

    def on_add_data(self, data: Any, metadata: Any) -> None:
        if type(metadata) is _Positioned:
            self._pending_position = metadata.position
            if metadata.metadata is None:
                return
            metadata = metadata.metadata
        self._pending_metadata.append(metadata)

    def on_generate_block(self, block_id: StreamBlockId) -> None:
        if self._pending_metadata:
            self._block_metadata[block_id], self._pending_metadata = self._pending_metadata, []
        if self._pending_position is not None:
            self._block_position[block_id], self._pending_position = self._pending_position, None

    def on_push_block(self, block_id: StreamBlockId, records: list) -> None:
        self._push_block(
            block_id, records, self._block_metadata.pop(block_id, None), self._block_position.pop(block_id, None)
        )

    def on_error(self, message: str, error: BaseException) -> None:
        self.report_error(message, error)

    def _push_block(self, block_id: StreamBlockId, records: list, metadata: Any, position: Any = None) -> None:
        """Step 5 of the protocol: stored and tracked, or the stream stops with the error."""
        if self._store_failure is not None:
            raise ReceiverStoppedError(
                f"block {block_id} of stream {self.stream_id} is not stored: an earlier block could not be stored "
                f"durably ({self._store_failure}), so the stream stopped there"
            ) from self._store_failure
        try:
            result = self._handler.store_block(block_id, records)
            info = ReceivedBlockInfo(self.stream_id, len(records), metadata, block_id, result, position)
            if not self._report_block(info):
                raise ReceiverStoppedError(
                    f"the receiver tracker did not accept block {block_id} of stream {self.stream_id}: its "
                    "write-ahead log could not record it (the tracker logged why)"
                )
        except BaseException as error:
            self._fail_storage(block_id, len(records), error)
            raise

    def _fail_storage(self, block_id: StreamBlockId, count: int, error: BaseException) -> None:
        with self._lock:
            if self._store_failure is not None:
                return
            self._store_failure = error
            stopped = self._state is ReceiverState.STOPPED
            message = (
                f"receiver '{self.receiver.name()}' (stream {self.stream_id}): block {block_id} of {count} "
                f"record(s) could not be stored, so the stream stops with this error instead of going on "
                f"without it: {type(error).__name__}: {error}"
            )
            if stopped and self.stop_error is None:  # stopping already: end with the error, not as if complete
                self.stop_message, self.stop_error = message, error
        if stopped:
            self.report_error(message, error)
        else:
            self.stop(message, error)


@dataclass(frozen=True, slots=True)
class _Positioned:
    """The callback metadata of a record stored with a position (`push_single_with_position`)."""

    metadata: Any
    position: Any


def _backoff_strategy(receiver: Any) -> RestartBackoffTimeStrategy:
    configuration = getattr(receiver, "restart_strategy", DEFAULT_RESTART_STRATEGY)
    try:
        return create_backoff_strategy(configuration)
    except Exception as error:
        raise InvalidJobError(
            f"receiver '{receiver.name()}' has restart_strategy {configuration!r}, which cannot be used ({error}); "
            "set it to a RestartStrategies configuration, e.g. RestartStrategies.fixed_delay_restart(3, 1000)"
        ) from error
