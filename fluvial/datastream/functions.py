"""User function interfaces, with PyFlink's names and signatures.

A plain callable works wherever a function object does: the runtime adapts it once when the task opens, so
the per-record path never asks which kind it was given. `open(runtime_context)` runs on the task thread before
the first record; `close()` after the last one (also when the job fails or is cancelled).
"""

from __future__ import annotations

import abc
import enum
from typing import Any, Callable, Generic, Iterable, TypeVar

from fluvial.common.lazy_names import lazy_names

IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
ACC = TypeVar("ACC")


class RuntimeContext(abc.ABC):
    """What a running function knows about its subtask, and where it gets its keyed state."""

    @abc.abstractmethod
    def get_task_name(self) -> str: ...

    @abc.abstractmethod
    def get_number_of_parallel_subtasks(self) -> int: ...

    @abc.abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int: ...

    @abc.abstractmethod
    def get_index_of_this_subtask(self) -> int: ...

    @abc.abstractmethod
    def get_attempt_number(self) -> int: ...

    def get_task_name_with_subtasks(self) -> str:
        return (
            f"{self.get_task_name()} ({self.get_index_of_this_subtask() + 1}/"
            f"{self.get_number_of_parallel_subtasks()})"
        )

    @abc.abstractmethod
    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None: ...

    @abc.abstractmethod
    def get_state(self, state_descriptor: Any) -> Any: ...

    @abc.abstractmethod
    def get_list_state(self, state_descriptor: Any) -> Any: ...

    @abc.abstractmethod
    def get_map_state(self, state_descriptor: Any) -> Any: ...

    @abc.abstractmethod
    def get_reducing_state(self, state_descriptor: Any) -> Any: ...

    @abc.abstractmethod
    def get_aggregating_state(self, state_descriptor: Any) -> Any: ...

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
    @abc.abstractmethod
    def map(self, value: IN) -> OUT: ...


class FlatMapFunction(Function, Generic[IN, OUT]):
    @abc.abstractmethod
    def flat_map(self, value: IN) -> Iterable[OUT]: ...


class FilterFunction(Function, Generic[IN]):
    @abc.abstractmethod
    def filter(self, value: IN) -> bool: ...


class ReduceFunction(Function, Generic[IN]):
    @abc.abstractmethod
    def reduce(self, value1: IN, value2: IN) -> IN: ...


class AggregateFunction(Function, Generic[IN, ACC, OUT]):
    """Incremental aggregation: `add` folds a value into an accumulator; `merge` joins two (session windows)."""

    @abc.abstractmethod
    def create_accumulator(self) -> ACC: ...

    @abc.abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC: ...

    @abc.abstractmethod
    def get_result(self, accumulator: ACC) -> OUT: ...

    def merge(self, acc_a: ACC, acc_b: ACC) -> ACC:
        raise NotImplementedError(f"{type(self).__name__}.merge is needed for merging (session) windows")


class KeySelector(Function, Generic[IN, KEY]):
    @abc.abstractmethod
    def get_key(self, value: IN) -> KEY: ...


class NullByteKeySelector(KeySelector):
    """Puts every record under one key: the key of `window_all` and `global_` streams."""

    def get_key(self, value: Any) -> int:
        return 0


class Partitioner(Function, Generic[KEY]):
    """Chooses a channel for a key (`partition_custom`)."""

    @abc.abstractmethod
    def partition(self, key: KEY, num_partitions: int) -> int: ...


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
    def process_element(self, value: IN, ctx: "ProcessFunction.Context") -> Iterable[OUT] | None: ...


class KeyedProcessFunction(Function, Generic[KEY, IN, OUT]):
    """Per-record processing on a keyed stream, with keyed state and timers."""

    class Context(BaseContext):
        @abc.abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context):
        @abc.abstractmethod
        def time_domain(self) -> Any: ...

    @abc.abstractmethod
    def process_element(self, value: IN, ctx: "KeyedProcessFunction.Context") -> Iterable[OUT] | None: ...

    def on_timer(self, timestamp: int, ctx: "KeyedProcessFunction.OnTimerContext") -> Iterable[OUT] | None:
        pass


class CoMapFunction(Function, Generic[IN, OUT]):
    @abc.abstractmethod
    def map1(self, value: Any) -> OUT: ...

    @abc.abstractmethod
    def map2(self, value: Any) -> OUT: ...


class CoFlatMapFunction(Function, Generic[IN, OUT]):
    @abc.abstractmethod
    def flat_map1(self, value: Any) -> Iterable[OUT]: ...

    @abc.abstractmethod
    def flat_map2(self, value: Any) -> Iterable[OUT]: ...


class CoProcessFunction(Function, Generic[IN, OUT]):
    class Context(BaseContext):
        pass

    @abc.abstractmethod
    def process_element1(self, value: Any, ctx: "CoProcessFunction.Context") -> Iterable[OUT] | None: ...

    @abc.abstractmethod
    def process_element2(self, value: Any, ctx: "CoProcessFunction.Context") -> Iterable[OUT] | None: ...


class KeyedCoProcessFunction(Function, Generic[KEY, IN, OUT]):
    class Context(BaseContext):
        @abc.abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context):
        @abc.abstractmethod
        def time_domain(self) -> Any: ...

    @abc.abstractmethod
    def process_element1(self, value: Any, ctx: "KeyedCoProcessFunction.Context") -> Iterable[OUT] | None: ...

    @abc.abstractmethod
    def process_element2(self, value: Any, ctx: "KeyedCoProcessFunction.Context") -> Iterable[OUT] | None: ...

    def on_timer(self, timestamp: int, ctx: "KeyedCoProcessFunction.OnTimerContext") -> Iterable[OUT] | None:
        pass


class SinkFunction(Function, Generic[IN]):
    """A record-at-a-time sink (`add_sink`). Override `invoke`; `invoke_batch` is the fast path the runtime calls.

    Contract: `invoke_batch` receives each buffer once, in order, on the task thread; it must not keep the list
    (the runtime may hand the same list to other consumers).
    """

    def invoke(self, value: IN, context: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must override invoke(value, context)")

    def invoke_batch(self, values: list, context: Any) -> None:
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
    def run(self, ctx: Any) -> None: ...

    def cancel(self) -> None:
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
    def process_element(self, value: Any, ctx: "BroadcastProcessFunction.ReadOnlyContext") -> Iterable[OUT] | None: ...

    @abc.abstractmethod
    def process_broadcast_element(self, value: Any, ctx: "BroadcastProcessFunction.Context") -> Iterable[OUT] | None: ...


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
    def process_element(
        self, value: Any, ctx: "KeyedBroadcastProcessFunction.ReadOnlyContext"
    ) -> Iterable[OUT] | None: ...

    @abc.abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: "KeyedBroadcastProcessFunction.Context"
    ) -> Iterable[OUT] | None: ...

    def on_timer(self, timestamp: int, ctx: "KeyedBroadcastProcessFunction.OnTimerContext") -> Iterable[OUT] | None:
        pass


# -- async I/O (AsyncDataStream; runtime.async_operator) ------------------------------------------------------


class AsyncFunction(Function, Generic[IN, OUT]):
    """`async def async_invoke(value)` returns the list of results for one record; `timeout(value)` is called
    when it takes longer than the operator's timeout (the default raises TimeoutError, failing the job)."""

    @abc.abstractmethod
    async def async_invoke(self, value: IN) -> list[OUT]: ...

    def timeout(self, value: IN) -> list[OUT]:
        raise TimeoutError(f"async_invoke of {type(self).__name__} timed out for {value!r}")


class AsyncRetryPredicate(abc.ABC, Generic[OUT]):
    """When an async call is retried: on a result (`result_predicate`) or an exception (`exception_predicate`);
    None means never on that side."""

    @abc.abstractmethod
    def result_predicate(self) -> Any: ...

    @abc.abstractmethod
    def exception_predicate(self) -> Any: ...


class AsyncRetryStrategy(abc.ABC, Generic[OUT]):
    """How often and after what back-off an async call is retried. `current_attempts` counts from 1."""

    @abc.abstractmethod
    def can_retry(self, current_attempts: int) -> bool: ...

    @abc.abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int: ...

    @abc.abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]: ...

    # PyFlink's factories (the strategies live in async_retry_strategies, which imports this module).
    @staticmethod
    def no_restart() -> "AsyncRetryStrategy":
        from fluvial.datastream.async_retry_strategies import NO_RETRY_STRATEGY

        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(max_attempts: int, backoff_time_millis: int, result_predicate: Callable[[list], bool] | None,
                    exception_predicate: Callable[[BaseException], bool] | None) -> "AsyncRetryStrategy":
        from fluvial.datastream.async_retry_strategies import FixedDelayRetryStrategy

        return FixedDelayRetryStrategy(max_attempts, backoff_time_millis, result_predicate, exception_predicate)

    @staticmethod
    def exponential_backoff(max_attempts: int, initial_delay: int, max_retry_delay: int, multiplier: float,
                            result_predicate: Callable[[list], bool] | None,
                            exception_predicate: Callable[[BaseException], bool] | None) -> "AsyncRetryStrategy":
        from fluvial.datastream.async_retry_strategies import ExponentialBackoffDelayRetryStrategy

        return ExponentialBackoffDelayRetryStrategy(max_attempts, initial_delay, max_retry_delay, multiplier,
                                                    result_predicate, exception_predicate)


class AsyncFunctionDescriptor:
    """What an async wait operator is built from: the function, its timeout (ms), capacity (in-flight
    records), retry strategy and output mode."""

    class OutputMode(enum.Enum):
        ORDERED = 0
        UNORDERED = 1

    def __init__(self, async_function: AsyncFunction, timeout: Any, capacity: int,
                 async_retry_strategy: AsyncRetryStrategy | None, output_mode: "AsyncFunctionDescriptor.OutputMode") -> None:
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
