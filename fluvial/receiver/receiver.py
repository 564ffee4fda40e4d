"""Receiver: a push source (Spark Streaming's receiver API), for data that arrives rather than being read —
a socket, a callback from another library, a queue someone else fills.

Contract, numbered:
1. `on_start()` runs on a thread of its own (the receiver's thread) when the receiver starts and after each
   restart. It may loop for as long as data arrives, or start its own threads and return.
2. `store(record)` hands one record to the BlockGenerator (batched into blocks every block interval);
   `store(record, metadata)` the same with metadata (the block's info carries the list of its records'
   metadata, in order); `store(list_of_records, metadata=None)` stores the list as one block and returns only
   when the block is stored — in the write-ahead log when it is on (reliable receivers acknowledge their
   source only after that). After `stop`, `store(list)` raises ReceiverStoppedError: never acknowledge then.
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
from typing import Any

from datetime import timedelta

from fluvial.common.errors import FluvialError
from fluvial.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration

DEFAULT_RESTART_DELAY_S = 2.0
DEFAULT_RESTART_STRATEGY: RestartStrategyConfiguration = RestartStrategies.exponential_delay_restart(
    initial_backoff=timedelta(milliseconds=100), max_backoff=timedelta(seconds=10), backoff_multiplier=2.0,
    reset_backoff_threshold=timedelta(minutes=1), jitter_factor=0.1, attempts_before_reset_backoff=10)


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

    def store(self, data: Any, metadata: Any = None) -> None:
        supervisor = self._require_supervisor("store")
        if isinstance(data, list):
            supervisor.push_array(data, metadata)
        elif metadata is not None:
            supervisor.push_single_with_metadata(data, metadata)
        else:
            supervisor.push_single(data)

    def restart(self, message: str, error: BaseException | None = None, delay: float | None = None) -> None:
        self._require_supervisor("restart").restart_receiver(
            message, error, DEFAULT_RESTART_DELAY_S if delay is None else delay)

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
