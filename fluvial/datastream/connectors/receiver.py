"""Receiver: a push source (Spark Streaming's receiver API), for data that arrives rather than being read —
a socket, a callback from another library, a queue someone else fills — and ReceiverSource, the Source a
receiver stream becomes in a job (`env.add_receiver(receiver)`).

Contract, numbered:
1. `on_start()` runs on a thread of its own (the receiver's thread) when the receiver starts and after each
   restart. It may loop for as long as data arrives, or start its own threads and return.
2. `store(record)` hands one record to the BlockGenerator (batched into blocks every block interval);
   `store(record, metadata)` the same with metadata (the block's info carries the list of its records'
   metadata, in order); `store(list_of_records, metadata=None)` stores the list as one block and returns only
   when the block is stored — in the write-ahead log when it is on (reliable receivers acknowledge their
   source only after that). Both ways of storing are paced by `receiver.max-rate`. After `stop`, `store(list)` raises ReceiverStoppedError: never acknowledge then.
3. `restart(message, error=None, delay=...)` stops (on_stop) and starts (on_start) again after the delay;
   an exception escaping on_start does the same. Restarts follow the receiver's `restart_strategy` (a
   RestartStrategies configuration; default: exponential back-off from 100 ms to 10 s, at most 10 restarts
   without a minute of running in between): the wait is the longer of `delay` and the strategy's back-off,
   and once the strategy allows no more restarts the receiver stops with its last error, which fails the job.
   `stop(message)` ends the stream for good: everything stored before it still reaches the job, then the
   stream ends; `stop(message, error)` ends it with an error, which
   fails the job's receiver source task once it emitted every block. `report_error` only reports.
4. `on_stop()` releases what on_start acquired; it must make a looping on_start return (check `is_stopped()`).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Protocol

from fluvial.common.errors import FluvialError
from fluvial.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration
from fluvial.common.time import current_millis
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader, SourceReaderContext

DEFAULT_RESTART_DELAY_S = 2.0
DEFAULT_RESTART_STRATEGY: RestartStrategyConfiguration = RestartStrategies.exponential_delay_restart(
    initial_backoff=timedelta(milliseconds=100),
    max_backoff=timedelta(seconds=10),
    backoff_multiplier=2.0,
    reset_backoff_threshold=timedelta(minutes=1),
    jitter_factor=0.1,
    attempts_before_reset_backoff=10,
)


class ReceiverStoppedError(FluvialError, RuntimeError):
    """A receiver was stopped: with an error (raised by the receiver source once every block is emitted, so
    the job fails naming the receiver), or before a reliable `store(list)` could be accepted."""


class Receiver(abc.ABC):
    restart_strategy: RestartStrategyConfiguration = DEFAULT_RESTART_STRATEGY
    """How the supervisor restarts this receiver (contract 3); set it on an instance or a subclass, e.g.
    `RestartStrategies.fixed_delay_restart(3, 1000)`, or `RestartStrategies.no_restart()` to fail at once."""

    def __init__(self, storage_level: Any = None) -> None:
        self.storage_level = storage_level
        self.stream_id = -1
        self._supervisor: Any = None

    @abc.abstractmethod
    def on_start(self) -> None: ...

    @abc.abstractmethod
    def on_stop(self) -> None: ...

    # -- what receivers call ----------------------------------------------------------------------------------

    def store(self, data: Any, metadata: Any = None, position: Any = None) -> None:
        """Store one record, or a list of records reliably (returns once they are stored: acknowledge the
        upstream after it). `position` may say where the upstream is after these records (an offset, a sequence
        number: any picklable value); `last_stored_position()` gives it back after a restart (see
        `last_stored_position`). A single record's position travels with the block that holds the record (the
        newest position in a block wins) and counts once that block is stored: store(record) returns before."""
        supervisor = self._require_supervisor("store")
        if isinstance(data, list):
            supervisor.push_array(data, metadata, position)
        elif position is not None:
            supervisor.push_single_with_position(data, metadata, position)
        elif metadata is not None:
            supervisor.push_single_with_metadata(data, metadata)
        else:
            supervisor.push_single(data)

    def last_stored_position(self) -> Any:
        """The newest position stored with `store(list, position=...)`, or None: where a receiver that starts
        again resumes its upstream. It survives receiver restarts and job failovers; with the write-ahead log on
        it survives a lost TaskManager too (else the restored checkpoint's position is given).

        The promise: a receiver whose upstream can resume from a position, and that stores every batch with
        the position after it before acknowledging, gets each record into the stream once — a batch stored
        but not acknowledged when the receiver died is not re-sent. An upstream that cannot resume re-sends
        what was not acknowledged: those records may come twice (at least once), as Spark's receivers do.
        Records stored one by one with their positions need no acknowledgement: one still buffered when the
        receiver died is lost together with its position, so the upstream resumed here sends it again."""
        return self._require_supervisor("last_stored_position").last_stored_position()

    def restart(self, message: str, error: BaseException | None = None, delay: float | None = None) -> None:
        self._require_supervisor("restart").restart_receiver(
            message, error, DEFAULT_RESTART_DELAY_S if delay is None else delay
        )

    def stop(self, message: str, error: BaseException | None = None) -> None:
        self._require_supervisor("stop").stop(message, error)

    def report_error(self, message: str, error: BaseException | None = None) -> None:
        self._require_supervisor("report_error").report_error(message, error)

    def is_started(self) -> bool:
        return self._supervisor is not None and self._supervisor.is_receiver_started()

    def is_stopped(self) -> bool:
        return self._supervisor is None or self._supervisor.is_receiver_stopped()

    def preferred_location(self) -> str | None:
        return None

    def name(self) -> str:
        return type(self).__name__

    # -- wiring -------------------------------------------------------------------------------------------------

    def attach_supervisor(self, supervisor: Any) -> None:
        self._supervisor = supervisor

    def _require_supervisor(self, what: str) -> Any:
        if self._supervisor is None:
            raise RuntimeError(
                f"{self.name()}.{what}() called before the receiver was started: receivers run inside a job "
                "(env.add_receiver(receiver)); call store() from on_start() or threads it starts"
            )
        return self._supervisor

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_supervisor"] = None
        return state


RELEASE_INTERVAL_MS = 100  # without checkpoints, emitted blocks are released at most this often


@dataclass(frozen=True)
class ReceiverSplit:
    split_id: str
    stream_id: int
    position: int = -1  # sequence number of the last block emitted (-1: none yet)
    log: str | None = None  # the stream's write-ahead log directory, once known: a restored run reads it again
    upstream_position: Any = None  # the upstream position stored with the last block emitted (store(position=))


class ReceiverSource(Source[ReceiverSplit]):
    uses_receivers = True

    def __init__(self, receiver: Any, stream_id: int) -> None:
        self.receiver = receiver
        self.stream_id = stream_id

    def get_boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism: int) -> list[ReceiverSplit]:
        return [ReceiverSplit(f"receiver-{self.stream_id}", self.stream_id)]

    def create_reader(self, task_info: SourceReaderContext) -> ReceiverSourceReader:
        if task_info.receivers is None:
            raise RuntimeError(
                f"the receiver source of stream {self.stream_id} was started without its TaskManager's receiver "
                "services: run it inside a job (env.add_receiver), not by hand"
            )
        return ReceiverSourceReader(task_info.receivers, self.stream_id, self.receiver, task_info.operator_id)

    def max_parallelism(self) -> int:
        return 1

    def default_name(self) -> str:
        return self.receiver.name()


class ReceiverStreams(Protocol):
    """A TaskManager's receivers of one job, as a receiver source reader sees them."""

    def stream(
        self,
        stream_id: int,
        receiver: Receiver,
        operator_id: str = "",
        log_directory: str | None = None,
        upstream_position: Any = None,
    ) -> Any:
        """The services (tracker, block handler, supervisor) of stream `stream_id`, its receiver started on
        first use and kept running across failovers of the job's tasks. With the write-ahead log on, a new
        stream's logs live in `log_directory` (what a restored checkpoint names), else in a new directory keyed
        by `operator_id` and the stream (fluvial.receiver.services)."""
        ...


class ReceiverSourceReader(SourceReader[ReceiverSplit]):
    def __init__(self, receivers: ReceiverStreams, stream_id: int, receiver: Receiver, operator_id: str = "") -> None:
        self._receivers = receivers
        self._stream_id = stream_id
        self._receiver = receiver
        self._operator_id = operator_id
        self._split: ReceiverSplit | None = None
        self._services: Any = None
        self._positions: dict[int, int] = {}  # checkpoint id -> position it holds
        self._last_release = 0

    def add_splits(self, splits: list[ReceiverSplit]) -> None:
        if splits:
            self._split = splits[0]

    def _lookup(self) -> Any:
        """The stream's services, found (or started) on first use. A split restored from a checkpoint resumes
        there: the tracker numbers on from its position, and the split records where the stream's log lives."""
        if self._services is None:
            split = self._split
            services = self._receivers.stream(
                self._stream_id,
                self._receiver,
                self._operator_id,
                split.log if split is not None else None,
                split.upstream_position if split is not None else None,
            )
            if split is not None:
                if split.position >= 0:
                    services.tracker.resume_after(split.stream_id, split.position)
                self._split = replace(split, log=services.log_directory)
            self._services = services
        return self._services

    def poll(self, max_records: int) -> list | None:
        if self._split is None:
            return None
        services = self._lookup()
        split = self._split
        ended = services.stream_ended(split.stream_id)  # read before the blocks: no block can follow the end
        blocks = services.tracker.blocks_after(split.stream_id, split.position)
        if not blocks:
            if ended:
                self._raise_if_failed(services, split.stream_id)
                return None
            return []
        info = blocks[0]
        records = services.handlers[split.stream_id].read_block(info.store_result)
        position = getattr(info, "position", None)
        self._split = replace(
            split,
            position=split.position + 1,
            upstream_position=split.upstream_position if position is None else position,
        )
        if not services.checkpointing:
            now = current_millis()
            if now - self._last_release >= RELEASE_INTERVAL_MS:  # batched: each release logs to the tracker WAL
                self._last_release = now
                services.release_through(split.stream_id, self._split.position, now)
        return list(records)

    @staticmethod
    def _raise_if_failed(services: Any, stream_id: int) -> None:
        """A receiver stopped with an error (e.g. a refused connection) fails the task after its last block,
        so the job fails naming the receiver instead of finishing as if the stream had simply ended."""
        failure = services.stream_failure(stream_id)
        if failure is not None:
            message, error = failure
            name = services.supervisors[stream_id].receiver.name()
            raise ReceiverStoppedError(
                f"receiver '{name}' (stream {stream_id}) stopped with an error: {message}"
            ) from error

    def snapshot_state(self) -> list[ReceiverSplit]:
        return [self._split] if self._split is not None else []

    def on_snapshot(self, checkpoint_id: int) -> None:
        if self._split is not None:
            self._positions[checkpoint_id] = self._split.position

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        done = [cid for cid in self._positions if cid <= checkpoint_id]
        if not done or self._split is None:
            return
        position = max(self._positions[cid] for cid in done)
        for cid in done:
            del self._positions[cid]
        if position >= 0:
            self._lookup().release_through(self._split.stream_id, position, current_millis())
