"""User function interfaces, with PyFlink's names and signatures.

A plain callable works wherever a function object does: the runtime adapts it once when the task opens, so
the per-record path never asks which kind it was given. `open(runtime_context)` runs on the task thread before
the first record; `close()` after the last one (also when the job fails or is cancelled).
"""

from __future__ import annotations

import abc
from typing import Any, Generic, Iterable, TypeVar

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
