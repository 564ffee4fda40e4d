"""The job as inert data: one dataclass per kind of transformation, plus the (frozen) operator and partitioner
descriptions they carry.

API calls build these; `fluvial.graph` compiles them; `fluvial.runtime` builds live operators from the
operator descriptions (`OperatorSpec`s) when a task opens. Nothing here runs user code.
Transformations refer to their inputs by id, so a DataStream call like `set_parallelism` replaces one record in
the environment's registry (`dataclasses.replace`) instead of mutating a shared object. Transformations are
never mutated after they are built, by that convention, not enforced: `frozen=True` on them would add about a
millisecond to every process's import of this module (measured: 5.4 ms → 6.5 ms), and start-up time is part of
every small job's latency. OperatorSpec and PartitionerSpec, which travel to tasks, are frozen.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fluvial.datastream.output_tag import OutputTag


class ChainingStrategy(enum.Enum):
    ALWAYS = "ALWAYS"
    HEAD = "HEAD"
    NEVER = "NEVER"
    HEAD_WITH_SOURCES = "HEAD_WITH_SOURCES"


class PartitionerKind(enum.Enum):
    """The ship strategies of DESIGN 2.1; the value is the name Flink shows in plans."""

    FORWARD = "FORWARD"
    REBALANCE = "REBALANCE"
    RESCALE = "RESCALE"
    HASH = "HASH"
    BROADCAST = "BROADCAST"
    SHUFFLE = "SHUFFLE"
    GLOBAL = "GLOBAL"
    CUSTOM = "CUSTOM"


class ExchangeMode(enum.Enum):
    UNDEFINED = "UNDEFINED"
    PIPELINED = "PIPELINED"
    BATCH = "BATCH"


@dataclass(frozen=True)
class PartitionerSpec:
    """How records of one edge are spread over the consumer's subtasks."""

    kind: PartitionerKind
    key_selector: Callable[[Any], Any] | None = None  # HASH and CUSTOM
    custom_partitioner: Callable[[Any, int], int] | None = None  # CUSTOM: (key, n) -> channel
    key_type: Any = None  # HASH: the key's declared TypeInformation (`key_by(..., key_type=...)`), checked per key


# ---------------------------------------------------------------------------------------------------------------
# Operator descriptions. A runtime builder exists for each. Kinds without fields of their own are plain
# subclasses (not regenerated dataclasses): job start-up time counts for small jobs.


# The fields of an operator description that hold a user's object (a function object, or a window's
# ProcessWindowFunction beside its reduce): each subtask and each attempt runs its own copy of each
# (`cluster.function_templates`, `runtime.chain`), as each Flink subtask deserializes its whole operator.
USER_OBJECT_FIELDS = ("function", "window_function")


@dataclass(frozen=True)
class OperatorSpec:
    """Base of operator descriptions. `function` is a user function object or plain callable; `key_selector`
    is set when the operator runs on a KeyedStream, so it sees keyed state for each record's key."""

    function: Any = None
    key_selector: Any = None
    key_selector2: Any = None  # two-input operators on keyed connected streams: the second input's key
    # Set by the compiler for jobs in BATCH execution mode (`fluvial.graph.batch_mode`): keyed reduces emit
    # one final result per key, timers fire at end of input. Keyword-only, so it never shifts the positional
    # fields of the kinds below.
    batch: bool = field(default=False, kw_only=True)

    # What runtime support the kind still lacks (None: it runs). Submitting a job that reaches such an
    # operator fails with NotYetSupportedError naming this, never silently.
    pending_runtime: ClassVar[str | None] = None


class MapSpec(OperatorSpec):
    __slots__ = ()


class FlatMapSpec(OperatorSpec):
    __slots__ = ()


class FilterSpec(OperatorSpec):
    __slots__ = ()


class ProcessSpec(OperatorSpec):
    __slots__ = ()


class KeyedProcessSpec(OperatorSpec):
    __slots__ = ()


class KeyedReduceSpec(OperatorSpec):
    """A running reduce per key, emitting the new aggregate for every record (sum/min/max/... compile to it)."""

    __slots__ = ()


class CoMapSpec(OperatorSpec):
    __slots__ = ()


class CoFlatMapSpec(OperatorSpec):
    __slots__ = ()


class CoProcessSpec(OperatorSpec):
    __slots__ = ()


class KeyedCoProcessSpec(OperatorSpec):
    __slots__ = ()


@dataclass(frozen=True)
class SourceSpec(OperatorSpec):
    """`function` is a `fluvial.datastream.connectors.source.Source`."""

    watermark_strategy: Any = None


@dataclass(frozen=True)
class TimestampsAndWatermarksSpec(OperatorSpec):
    """`assign_timestamps_and_watermarks`: `function` is the WatermarkStrategy."""


class WindowAggregation(enum.Enum):
    """How a window's contents are kept between firings."""

    REDUCE = "reduce"  # one value, folded with the ReduceFunction in `function`
    AGGREGATE = "aggregate"  # one accumulator of the AggregateFunction in `function`
    ELEMENTS = "elements"  # every element (process/apply without pre-aggregation, or with an evictor)


class WindowFunctionKind(enum.Enum):
    """What runs when a window fires, on its (pre-aggregated) contents."""

    PASS_THROUGH = "pass-through"  # emit the reduced value / aggregate result as is
    PROCESS = "process"  # ProcessWindowFunction.process(key, context, elements)
    APPLY = "apply"  # WindowFunction.apply(key, window, inputs)
    ALL_PROCESS = "all-process"  # ProcessAllWindowFunction.process(context, elements)
    ALL_APPLY = "all-apply"  # AllWindowFunction.apply(window, inputs)


@dataclass(frozen=True)
class WindowSpec(OperatorSpec):
    """A window operator: `function` is the ReduceFunction / AggregateFunction (or None for ELEMENTS)."""

    assigner: Any = None
    trigger: Any = None  # None: the assigner's default trigger
    evictor: Any = None
    allowed_lateness: int = 0
    late_data_tag: OutputTag | None = None
    aggregation: WindowAggregation = WindowAggregation.ELEMENTS
    window_function: Any = None
    window_function_kind: WindowFunctionKind = WindowFunctionKind.PASS_THROUGH


@dataclass(frozen=True)
class MapBundleSpec(OperatorSpec):
    """A mini-batch (Flink's MapBundleOperator; KeyedMapBundleOperator when `key_selector` is set): each record
    is folded into its key's entry of an in-memory bundle by `function.add_input(entry_or_None, record)`, and
    the bundle goes to `function.finish_bundle(bundle, context)` when it holds `max_size` records, `latency_millis`
    after its first record (processing time), before a watermark or a checkpoint barrier is passed on, and at end
    of input. The bundle is never state: it is emptied before every barrier. `bundle_key` computes the entry a
    record folds into (the key selector's function when keyed)."""

    bundle_key: Any = None
    max_size: int = 1000
    latency_millis: int = 1000


@dataclass(frozen=True)
class BroadcastProcessSpec(OperatorSpec):
    """`connect(broadcast_stream).process(f)`: input 1 is the data stream (keyed when `key_selector` is set),
    input 2 the broadcast stream; `descriptors` name the broadcast states (MapStateDescriptors)."""

    descriptors: tuple = ()


@dataclass(frozen=True)
class AsyncWaitSpec(OperatorSpec):
    """`AsyncDataStream.*_wait`: `function` is the AsyncFunction."""

    timeout_ms: int = 0
    capacity: int = 100
    ordered: bool = True
    retry_strategy: Any = None


class SinkSpec(OperatorSpec):
    """`function` is a `fluvial.datastream.connectors.sink.Sink`."""

    __slots__ = ()


class SinkFunctionSpec(OperatorSpec):
    """`function` is a `SinkFunction` or a plain callable taking one value."""

    __slots__ = ()


@dataclass(frozen=True)
class PrintSpec(OperatorSpec):
    type_info: Any = None
    sink_identifier: str | None = None
    to_stderr: bool = False


@dataclass(frozen=True)
class CollectSpec(OperatorSpec):
    """Sends records to the client that called `execute_and_collect`; `collect_id` names its queue."""

    collect_id: str = ""


# ---------------------------------------------------------------------------------------------------------------
# Transformations


@dataclass(eq=False, repr=False)
class Transformation:
    id: int
    name: str
    parallelism: int | None = None  # None: the environment's default
    max_parallelism: int | None = None
    uid: str | None = None
    description: str | None = None
    slot_sharing_group: Any = None  # None (inherit), a name, or a SlotSharingGroup
    co_location_group: str | None = None
    chaining_strategy: ChainingStrategy = ChainingStrategy.ALWAYS
    output_type: Any = None
    parallelism_fixed: bool = False  # from_collection: parallelism 1, not changeable

    @property
    def input_ids(self) -> tuple[int, ...]:
        return ()

    def __repr__(self) -> str:
        # generated reprs, equality and frozen setters are left out on purpose: a dozen dataclasses with a
        # dozen fields each cost a noticeable part of a small job's start-up. Transformations are compared by
        # identity and never mutated (a convention, see the module docstring): every change goes through
        # `dataclasses.replace` in the environment.
        return f"{type(self).__name__}(id={self.id}, name={self.name!r}, inputs={self.input_ids})"

    @property
    def is_virtual(self) -> bool:
        """Partition, union and side-output transformations become edges, not nodes."""
        return False


@dataclass(eq=False, repr=False)
class SourceTransformation(Transformation):
    operator: SourceSpec = field(default_factory=SourceSpec)
    chaining_strategy: ChainingStrategy = ChainingStrategy.HEAD


@dataclass(eq=False, repr=False)
class OneInputTransformation(Transformation):
    input_id: int = -1
    operator: OperatorSpec = field(default_factory=OperatorSpec)
    type_name: str = "Map"  # what Flink's plan shows as "type"

    @property
    def input_ids(self) -> tuple[int, ...]:
        return (self.input_id,)


@dataclass(eq=False, repr=False)
class TwoInputTransformation(Transformation):
    input1_id: int = -1
    input2_id: int = -1
    operator: OperatorSpec = field(default_factory=OperatorSpec)
    type_name: str = "Co-Map"

    @property
    def input_ids(self) -> tuple[int, ...]:
        return (self.input1_id, self.input2_id)


@dataclass(eq=False, repr=False)
class SinkTransformation(Transformation):
    input_id: int = -1
    operator: OperatorSpec = field(default_factory=OperatorSpec)

    @property
    def input_ids(self) -> tuple[int, ...]:
        return (self.input_id,)


@dataclass(eq=False, repr=False)
class PartitionTransformation(Transformation):
    input_id: int = -1
    partitioner: PartitionerSpec = PartitionerSpec(PartitionerKind.FORWARD)
    exchange_mode: ExchangeMode = ExchangeMode.UNDEFINED

    @property
    def input_ids(self) -> tuple[int, ...]:
        return (self.input_id,)

    @property
    def is_virtual(self) -> bool:
        return True


@dataclass(eq=False, repr=False)
class UnionTransformation(Transformation):
    inputs: tuple[int, ...] = ()

    @property
    def input_ids(self) -> tuple[int, ...]:
        return self.inputs

    @property
    def is_virtual(self) -> bool:
        return True


@dataclass(eq=False, repr=False)
class SideOutputTransformation(Transformation):
    input_id: int = -1
    output_tag: OutputTag | None = None

    @property
    def input_ids(self) -> tuple[int, ...]:
        return (self.input_id,)

    @property
    def is_virtual(self) -> bool:
        return True
