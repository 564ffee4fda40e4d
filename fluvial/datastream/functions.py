"""User function interfaces, with PyFlink's names and signatures.

A plain callable works wherever a function object does: the runtime adapts it once when the task opens, so
the per-record path never asks which kind it was given. `open(runtime_context)` runs on the task thread before
the first record; `close()` after the last one (also when the job fails or is cancelled).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from fluvial.common.lazy_names import lazy_names

IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
ACC = TypeVar("ACC")


class RuntimeContext(abc.ABC):
    """What a running function knows about its subtask, and where it gets its keyed state."""

    @abc.abstractmethod
    def get_task_name(self) -> str:
        """The name of the task (the chain of operators) this function runs in."""

    @abc.abstractmethod
    def get_number_of_parallel_subtasks(self) -> int:
        """The parallelism of this operator."""

    @abc.abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int:
        """The max parallelism of this operator (its number of key groups)."""

    @abc.abstractmethod
    def get_index_of_this_subtask(self) -> int:
        """This subtask's index, from 0 to parallelism - 1."""

    @abc.abstractmethod
    def get_attempt_number(self) -> int:
        """How many times this subtask was restarted: 0 for the first attempt."""

    def get_task_name_with_subtasks(self) -> str:
        """The task's name with its subtask, as Flink prints it: `name (2/4)#0`."""
        return (
            f"{self.get_task_name()} ({self.get_index_of_this_subtask() + 1}/{self.get_number_of_parallel_subtasks()})"
        )

    @abc.abstractmethod
    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None:
        """A job parameter: a key of the job's configuration.

        Args:
            key: The key.
            default_value: What to return when it is not set.

        Returns:
            The value as a string, or `default_value`.
        """

    @abc.abstractmethod
    def get_state(self, state_descriptor: Any) -> Any:
        """The ValueState of a descriptor, scoped to the current key (keyed functions only).

        Args:
            state_descriptor: A ValueStateDescriptor.

        Returns:
            The ValueState.

        Raises:
            StateError: called outside a keyed context.
        """

    @abc.abstractmethod
    def get_list_state(self, state_descriptor: Any) -> Any:
        """The ListState of a descriptor, scoped to the current key.

        Args:
            state_descriptor: A ListStateDescriptor.

        Returns:
            The ListState.
        """

    @abc.abstractmethod
    def get_map_state(self, state_descriptor: Any) -> Any:
        """The MapState of a descriptor, scoped to the current key.

        Args:
            state_descriptor: A MapStateDescriptor.

        Returns:
            The MapState.
        """

    @abc.abstractmethod
    def get_reducing_state(self, state_descriptor: Any) -> Any:
        """The ReducingState of a descriptor, scoped to the current key.

        Args:
            state_descriptor: A ReducingStateDescriptor.

        Returns:
            The ReducingState.
        """

    @abc.abstractmethod
    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        """The AggregatingState of a descriptor, scoped to the current key.

        Args:
            state_descriptor: An AggregatingStateDescriptor.

        Returns:
            The AggregatingState.
        """

    @abc.abstractmethod
    def get_metrics_group(self) -> Any:
        """The MetricGroup (`fluvial.metrics`) of the function's operator, to register counters, meters,
        distributions and gauges in."""


class Function(abc.ABC):
    """Base of every user function: lifecycle hooks around the records."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


class MapFunction(Function, Generic[IN, OUT]):
    """A function applied to every record, returning one record (PyFlink's `MapFunction`).

    Subclass it when the function needs `open()`/`close()` or a runtime context; else a plain callable does.
    """

    @abc.abstractmethod
    def map(self, value: IN) -> OUT:
        """Transform one record.

        Args:
            value: The record.

        Returns:
            The record to emit.
        """


class FlatMapFunction(Function, Generic[IN, OUT]):
    """A function applied to every record, emitting any number of records (PyFlink's `FlatMapFunction`)."""

    @abc.abstractmethod
    def flat_map(self, value: IN) -> Iterable[OUT]:
        """Transform one record into any number.

        Args:
            value: The record.

        Returns:
            An iterable of the records to emit (a generator works).
        """


class FilterFunction(Function, Generic[IN]):
    """A predicate deciding which records a `filter` keeps (PyFlink's `FilterFunction`)."""

    @abc.abstractmethod
    def filter(self, value: IN) -> bool:
        """Whether to keep `value`.

        Args:
            value: The record.

        Returns:
            True to keep it.
        """


class ReduceFunction(Function, Generic[IN]):
    """Combines two records of one type into one (PyFlink's `ReduceFunction`), for `reduce` on keyed streams
    and windows.
    """

    @abc.abstractmethod
    def reduce(self, value1: IN, value2: IN) -> IN:
        """Combine two records.

        Args:
            value1: The result so far.
            value2: The new record.

        Returns:
            The combined record, of the same type.
        """


class AggregateFunction(Function, Generic[IN, ACC, OUT]):
    """Incremental aggregation: `add` folds a value into an accumulator; `merge` joins two (session windows)."""

    @abc.abstractmethod
    def create_accumulator(self) -> ACC:
        """A new, empty accumulator (one per key and window).

        Returns:
            The accumulator.
        """

    @abc.abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC:
        """Add a record to an accumulator.

        Args:
            value: The record.
            accumulator: The accumulator so far.

        Returns:
            The updated accumulator (it may be the same object).
        """

    @abc.abstractmethod
    def get_result(self, accumulator: ACC) -> OUT:
        """The result of an accumulator, emitted when the window fires.

        Args:
            accumulator: The accumulator.

        Returns:
            The result.
        """

    def merge(self, acc_a: ACC, acc_b: ACC) -> ACC:
        """Merge two accumulators (session windows merge when they overlap).

        Args:
            acc_a: One accumulator.
            acc_b: The other.

        Returns:
            The merged accumulator.
        """
        raise NotImplementedError(f"{type(self).__name__}.merge is needed for merging (session) windows")


class KeySelector(Function, Generic[IN, KEY]):
    """Extracts the key of a record (PyFlink's `KeySelector`), for `key_by` and `partition_custom`."""

    @abc.abstractmethod
    def get_key(self, value: IN) -> KEY:
        """The key of `value`.

        Args:
            value: The record.

        Returns:
            Its key: hashable, and equal for records that belong together.
        """


class NullByteKeySelector(KeySelector):
    """Puts every record under one key: the key of `window_all` and `global_` streams."""

    def get_key(self, value: Any) -> int:
        return 0


class Partitioner(Function, Generic[KEY]):
    """Chooses a channel for a key (`partition_custom`)."""

    @abc.abstractmethod
    def partition(self, key: KEY, num_partitions: int) -> int:
        """The subtask a key goes to.

        Args:
            key: The record's key (from the key selector).
            num_partitions: The number of subtasks of the next operator.

        Returns:
            An index in `range(num_partitions)`.
        """


class BaseContext(abc.ABC):
    """What every process-style function's context offers."""

    @abc.abstractmethod
    def timestamp(self) -> int | None:
        """The record's event timestamp (milliseconds), or None when it has none."""

    @abc.abstractmethod
    def timer_service(self) -> Any: ...


class ProcessFunction(Function, Generic[IN, OUT]):
    """Per-record processing with a context; yield values, or `(output_tag, value)` for a side output."""

    class Context(BaseContext):
        pass

    @abc.abstractmethod
    def process_element(self, value: IN, ctx: ProcessFunction.Context) -> Iterable[OUT] | None:
        """Process one record.

        Args:
            value: The record.
            ctx: Its context: `timestamp()` (its event time or None), `timer_service()` (current watermark and
                processing time), `output(tag, value)` for side outputs.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """


class KeyedProcessFunction(Function, Generic[KEY, IN, OUT]):
    """Per-record processing on a keyed stream, with keyed state and timers."""

    class Context(BaseContext):
        @abc.abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context):
        @abc.abstractmethod
        def time_domain(self) -> Any: ...

    @abc.abstractmethod
    def process_element(self, value: IN, ctx: KeyedProcessFunction.Context) -> Iterable[OUT] | None:
        """Process one record, with its key's state.

        Args:
            value: The record.
            ctx: Its context: `get_current_key()`, `timestamp()`, `timer_service()` (register and delete timers
                on either clock), `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterable[OUT] | None:
        """Called when a timer fires, for the key that registered it, with that key's state.

        Args:
            timestamp: The timer's time (ms).
            ctx: `time_domain()`, `get_current_key()`, `timer_service()`, `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """
        pass


class CoMapFunction(Function, Generic[IN, OUT]):
    """A map over two connected streams (PyFlink's `CoMapFunction`): `map1` for the first input's records,
    `map2` for the second's.
    """

    @abc.abstractmethod
    def map1(self, value: Any) -> OUT:
        """Transform a record of the first input.

        Args:
            value: The record.

        Returns:
            The record to emit.
        """

    @abc.abstractmethod
    def map2(self, value: Any) -> OUT:
        """Transform a record of the second input.

        Args:
            value: The record.

        Returns:
            The record to emit.
        """


class CoFlatMapFunction(Function, Generic[IN, OUT]):
    """A flat map over two connected streams (PyFlink's `CoFlatMapFunction`)."""

    @abc.abstractmethod
    def flat_map1(self, value: Any) -> Iterable[OUT]:
        """Transform a record of the first input into any number.

        Args:
            value: The record.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """

    @abc.abstractmethod
    def flat_map2(self, value: Any) -> Iterable[OUT]:
        """Transform a record of the second input into any number.

        Args:
            value: The record.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """


class CoProcessFunction(Function, Generic[IN, OUT]):
    """A process function over two connected streams (PyFlink's `CoProcessFunction`): per record, with a
    context (timestamp, timer service, side outputs).
    """

    class Context(BaseContext):
        pass

    @abc.abstractmethod
    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[OUT] | None:
        """Process a record of the first input.

        Args:
            value: The record.
            ctx: Its context: `timestamp()`, `timer_service()`, `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """

    @abc.abstractmethod
    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[OUT] | None:
        """Process a record of the second input.

        Args:
            value: The record.
            ctx: Its context: `timestamp()`, `timer_service()`, `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """


class KeyedCoProcessFunction(Function, Generic[KEY, IN, OUT]):
    """A process function over two connected keyed streams (PyFlink's `KeyedCoProcessFunction`), with keyed
    state and timers shared by both inputs for each key.
    """

    class Context(BaseContext):
        @abc.abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context):
        @abc.abstractmethod
        def time_domain(self) -> Any: ...

    @abc.abstractmethod
    def process_element1(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Iterable[OUT] | None:
        """Process a record of the first input, with its key's state.

        Args:
            value: The record.
            ctx: Its context: `get_current_key()`, `timestamp()`, `timer_service()`, `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """

    @abc.abstractmethod
    def process_element2(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Iterable[OUT] | None:
        """Process a record of the second input, with its key's state.

        Args:
            value: The record.
            ctx: Its context: `get_current_key()`, `timestamp()`, `timer_service()`, `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """

    def on_timer(self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext) -> Iterable[OUT] | None:
        """Called when a timer set through `ctx.timer_service()` fires, for the timer's key.

        Args:
            timestamp: The timer's time.
            ctx: `time_domain()` (EVENT_TIME or PROCESSING_TIME), `get_current_key()`, `timer_service()`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """
        pass


class SinkFunction(Function, Generic[IN]):
    """A record-at-a-time sink (`add_sink`). Override `invoke`; `invoke_batch` is the fast path the runtime calls.

    Contract: `invoke_batch` receives each buffer once, in order, on the task thread; it must not keep the list
    (the runtime may hand the same list to other consumers).
    """

    def invoke(self, value: IN, context: Any) -> None:
        """Write one record (legacy `add_sink` sinks).

        Args:
            value: The record.
            context: The sink context: `timestamp()`, `current_watermark()`, `current_processing_time()`.
        """
        raise NotImplementedError(f"{type(self).__name__} must override invoke(value, context)")

    def invoke_batch(self, values: list, context: Any) -> None:
        """Write a batch of records; the default calls `invoke` for each. Override it to write a buffer at once.

        Args:
            values: The records, in order.
            context: The sink context.
        """
        invoke = self.invoke
        for value in values:
            invoke(value, context)


class SourceFunction(Function, Generic[OUT]):
    """A legacy push source (`env.add_source`): `run(ctx)` emits with `ctx.collect(value)` until the input
    ends or `cancel()` is called. It runs on a thread of its own that feeds the task through a bounded queue,
    so a slow job slows `collect`. Contract: `cancel()` may be called from another thread and must make
    `run` return soon.

    A SourceFunction keeps no replayable position: after a failover `run` starts again from the beginning.
    For exactly-once input, use `from_source` with a replayable Source (NumberSequenceSource, FileSource)."""

    @abc.abstractmethod
    def run(self, ctx: Any) -> None:
        """Produce records until the source ends or is cancelled (legacy `add_source` sources).

        Args:
            ctx: `collect(value)`, `collect_with_timestamp(value, timestamp)`, `emit_watermark(watermark)`, and
                `get_checkpoint_lock()` to hold while emitting and changing checkpointed state together.
        """

    def cancel(self) -> None:
        """Make `run` return: called from another thread when the job is cancelled."""
        pass


# -- broadcast state (DataStream.broadcast(descriptor) -> connect -> process; runtime.broadcast_operators) --


class BaseBroadcastProcessFunction(Function):
    """Shared contexts of the two broadcast process functions."""

    class BaseContext(abc.ABC):
        @abc.abstractmethod
        def timestamp(self) -> int | None: ...

        @abc.abstractmethod
        def current_processing_time(self) -> int: ...

        @abc.abstractmethod
        def current_watermark(self) -> int: ...

    class Context(BaseContext):
        """On the broadcast side: the broadcast state is writable."""

        @abc.abstractmethod
        def get_broadcast_state(self, state_descriptor: Any) -> Any: ...

    class ReadOnlyContext(BaseContext):
        """On the data side: the broadcast state is read-only, so every subtask keeps the same state."""

        @abc.abstractmethod
        def get_broadcast_state(self, state_descriptor: Any) -> Any: ...


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN, OUT]):
    """Joins a non-keyed stream with a broadcast stream and its broadcast state."""

    class Context(BaseBroadcastProcessFunction.Context):
        pass

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        pass

    @abc.abstractmethod
    def process_element(self, value: Any, ctx: BroadcastProcessFunction.ReadOnlyContext) -> Iterable[OUT] | None:
        """Process a record of the non-broadcast input; the broadcast state is read-only here.

        Args:
            value: The record.
            ctx: `get_broadcast_state(descriptor)` (read-only), `timestamp()`, `current_watermark()`,
                `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """

    @abc.abstractmethod
    def process_broadcast_element(self, value: Any, ctx: BroadcastProcessFunction.Context) -> Iterable[OUT] | None:
        """Process a record of the broadcast input; every subtask sees every one and may update the broadcast
        state (identically, so all subtasks keep the same copy).

        Args:
            value: The broadcast record.
            ctx: `get_broadcast_state(descriptor)` (writable), `timestamp()`, `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN, OUT]):
    """Joins a keyed stream with a broadcast stream: keyed state and timers on the data side, and
    `apply_to_keyed_state` on the broadcast side."""

    class Context(BaseBroadcastProcessFunction.Context):
        @abc.abstractmethod
        def apply_to_keyed_state(self, state_descriptor: Any, function: Any) -> None: ...

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        @abc.abstractmethod
        def timer_service(self) -> Any: ...

        @abc.abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(ReadOnlyContext):
        @abc.abstractmethod
        def time_domain(self) -> Any: ...

    @abc.abstractmethod
    def process_element(self, value: Any, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext) -> Iterable[OUT] | None:
        """Process a record of the keyed input, with its key's state; broadcast state is read-only here.

        Args:
            value: The record.
            ctx: `get_broadcast_state(descriptor)`, `get_current_key()`, `timer_service()`, `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """

    @abc.abstractmethod
    def process_broadcast_element(self, value: Any, ctx: KeyedBroadcastProcessFunction.Context) -> Iterable[OUT] | None:
        """Process a record of the broadcast input; may update the broadcast state, and visit every key's
        state with `ctx.apply_to_keyed_state(descriptor, function)`.

        Args:
            value: The broadcast record.
            ctx: `get_broadcast_state(descriptor)` (writable), `apply_to_keyed_state(...)`, `output(tag, value)`.

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """

    def on_timer(self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext) -> Iterable[OUT] | None:
        """Called when a timer of the keyed side fires, for its key.

        Args:
            timestamp: The timer's time.
            ctx: `time_domain()`, `get_current_key()`, `get_broadcast_state(descriptor)` (read-only).

        Returns:
            The records to emit: an iterable (a generator works), or None for none.
        """
        pass


# -- async I/O (AsyncDataStream; runtime.async_operator) ------------------------------------------------------


class AsyncFunction(Function, Generic[IN, OUT]):
    """`async def async_invoke(value)` returns the list of results for one record; `timeout(value)` is called
    when it takes longer than the operator's timeout (the default raises TimeoutError, failing the job)."""

    @abc.abstractmethod
    async def async_invoke(self, value: IN) -> list[OUT]:
        """Start the asynchronous work for one record (a coroutine on the subtask's asyncio loop).

        Args:
            value: The record.

        Returns:
            The list of results to emit for it.
        """

    def timeout(self, value: IN) -> list[OUT]:
        """Answer a record whose `async_invoke` did not finish within the timeout. The default raises a
        TimeoutError, which fails the job.

        Args:
            value: The record.

        Returns:
            The list of results to emit instead.
        """
        raise TimeoutError(f"async_invoke of {type(self).__name__} timed out for {value!r}")


class AsyncRetryPredicate(abc.ABC, Generic[OUT]):
    """When an async call is retried: on a result (`result_predicate`) or an exception (`exception_predicate`);
    None means never on that side."""

    @abc.abstractmethod
    def result_predicate(self) -> Any:
        """A function of a result list returning True when it should be retried, or None."""

    @abc.abstractmethod
    def exception_predicate(self) -> Any:
        """A function of an exception returning True when it should be retried, or None."""


class AsyncRetryStrategy(abc.ABC, Generic[OUT]):
    """How often and after what back-off an async call is retried. `current_attempts` counts from 1."""

    @abc.abstractmethod
    def can_retry(self, current_attempts: int) -> bool:
        """Whether another attempt may follow.

        Args:
            current_attempts: The attempts made so far.

        Returns:
            True to retry.
        """

    @abc.abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """How long to wait before the next attempt.

        Args:
            current_attempts: The attempts made so far.

        Returns:
            The delay in ms.
        """

    @abc.abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """The predicate deciding which results and exceptions are retried."""

    # PyFlink's factories (the strategies live in async_retry_strategies, which imports this module).
    @staticmethod
    def no_restart() -> AsyncRetryStrategy:
        """The strategy that never retries (PyFlink's name for it)."""
        from fluvial.datastream.async_retry_strategies import NO_RETRY_STRATEGY

        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: Callable[[list], bool] | None,
        exception_predicate: Callable[[BaseException], bool] | None,
    ) -> AsyncRetryStrategy:
        """A FixedDelayRetryStrategy.

        Args:
            max_attempts: Retries allowed after the first call.
            backoff_time_millis: The wait before each retry.
            result_predicate: Retry when it is true of a result list (None: never on results).
            exception_predicate: Retry when it is true of an exception (None: never on exceptions).

        Returns:
            The strategy.
        """
        from fluvial.datastream.async_retry_strategies import FixedDelayRetryStrategy

        return FixedDelayRetryStrategy(max_attempts, backoff_time_millis, result_predicate, exception_predicate)

    @staticmethod
    def exponential_backoff(
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: Callable[[list], bool] | None,
        exception_predicate: Callable[[BaseException], bool] | None,
    ) -> AsyncRetryStrategy:
        """An ExponentialBackoffDelayRetryStrategy: waits `initial_delay` ms, then `multiplier` times longer per
        retry, at most `max_retry_delay` ms; `max_attempts` and the predicates as in `fixed_delay`."""
        from fluvial.datastream.async_retry_strategies import ExponentialBackoffDelayRetryStrategy

        return ExponentialBackoffDelayRetryStrategy(
            max_attempts, initial_delay, max_retry_delay, multiplier, result_predicate, exception_predicate
        )


class AsyncFunctionDescriptor:
    """What an async wait operator is built from: the function, its timeout (ms), capacity (in-flight
    records), retry strategy and output mode."""

    class OutputMode(enum.Enum):
        ORDERED = 0
        UNORDERED = 1

    def __init__(
        self,
        async_function: AsyncFunction,
        timeout: Any,
        capacity: int,
        async_retry_strategy: AsyncRetryStrategy | None,
        output_mode: AsyncFunctionDescriptor.OutputMode,
    ) -> None:
        self.async_function = async_function
        self.timeout = timeout
        self.capacity = capacity
        self.async_retry_strategy = async_retry_strategy
        self.output_mode = output_mode


_LATE = {
    "WindowFunction": "fluvial.datastream.window_functions",
    "AllWindowFunction": "fluvial.datastream.window_functions",
    "ProcessWindowFunction": "fluvial.datastream.window_functions",
    "ProcessAllWindowFunction": "fluvial.datastream.window_functions",
    "KeyedStateStore": "fluvial.datastream.window_functions",
    "TimerService": "fluvial.datastream.timerservice",
}
# PyFlink keeps the window functions and TimerService in this module too; they live in `window_functions`
# and `timerservice`, which import this module.
__getattr__ = lazy_names(__name__, _LATE, globals())
