"""DataStream and DataStreamSink (PyFlink `pyflink.datastream.data_stream`): each call records a frozen
Transformation in the environment and returns a handle; nothing runs until `execute()`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from fluvial.common.configuration import check_buffer_timeout
from fluvial.common.errors import InvalidJobError
from fluvial.common.lazy_names import lazy_names
from fluvial.common.typeinfo import TypeInformation
from fluvial.datastream import transformations as t
from fluvial.datastream.output_tag import OutputTag
from fluvial.datastream.slot_sharing_group import SlotSharingGroup

if TYPE_CHECKING:
    from fluvial.datastream.connectors.sink import Sink
    from fluvial.datastream.keyed_stream import KeyedStream
    from fluvial.datastream.stream_execution_environment import StreamExecutionEnvironment


def check_function(func: Any, method: str, what: str) -> None:
    """Accept an object with `method` or a plain callable, else say which one was expected."""
    if not (hasattr(func, method) or callable(func)):
        raise InvalidJobError(f"{what} expects a callable or an object with .{method}(), got {func!r}")


class _TransformationHandle:
    """Shared setters of DataStream and DataStreamSink: each replaces the transformation in the env
    with a changed copy, never mutating the one other handles may hold."""

    def __init__(self, env: StreamExecutionEnvironment, transformation_id: int) -> None:
        self._env = env
        self._id = transformation_id

    @property
    def _transformation(self) -> t.Transformation:
        return self._env._transformation(self._id)

    def _update(self, **changes: Any) -> None:
        self._env._replace_transformation(dataclasses.replace(self._transformation, **changes))

    def get_name(self) -> str:
        return self._transformation.name

    def name(self, name: str):
        self._update(name=str(name))
        return self

    def uid(self, uid: str):
        self._update(uid=str(uid))
        return self

    def set_uid_hash(self, uid_hash: str):
        return self.uid(uid_hash)

    def set_description(self, description: str):
        self._update(description=str(description))
        return self

    def set_parallelism(self, parallelism: int):
        tr = self._transformation
        if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
            raise InvalidJobError(
                f"parallelism of '{tr.name}' must be an integer >= 1, got {parallelism!r}: pass e.g. set_parallelism(2)"
            )
        if tr.parallelism_fixed and parallelism != tr.parallelism:
            raise InvalidJobError(
                f"'{tr.name}' is not parallel: its parallelism is fixed at {tr.parallelism}; "
                "use from_source(NumberSequenceSource(...)) or FileSource for a parallel source"
            )
        if tr.max_parallelism is not None and parallelism > tr.max_parallelism:
            raise InvalidJobError(
                f"parallelism {parallelism} of '{tr.name}' is above its max parallelism {tr.max_parallelism}: "
                "raise set_max_parallelism(...) first"
            )
        self._update(parallelism=parallelism)
        return self

    def set_max_parallelism(self, max_parallelism: int):
        tr = self._transformation
        if not isinstance(max_parallelism, int) or not 1 <= max_parallelism <= 32768:
            raise InvalidJobError(
                f"max parallelism of '{tr.name}' must be an integer in [1, 32768], got {max_parallelism!r}"
            )
        if tr.parallelism is not None and max_parallelism < tr.parallelism:
            raise InvalidJobError(
                f"max parallelism {max_parallelism} of '{tr.name}' is below its parallelism {tr.parallelism}: "
                f"raise it to at least {tr.parallelism}"
            )
        self._update(max_parallelism=max_parallelism)
        return self

    def slot_sharing_group(self, slot_sharing_group: str | SlotSharingGroup):
        if isinstance(slot_sharing_group, SlotSharingGroup):
            name = slot_sharing_group.name
            if slot_sharing_group.has_resources():
                self._env.register_slot_sharing_group(slot_sharing_group)
        elif isinstance(slot_sharing_group, str) and slot_sharing_group:
            name = slot_sharing_group
        else:
            raise InvalidJobError(f"slot_sharing_group takes a name or a SlotSharingGroup, got {slot_sharing_group!r}")
        self._update(slot_sharing_group=name)
        return self

    def co_location_group(self, key: str):
        """Beyond PyFlink (Flink's `setCoLocationGroupKey`): subtask i of every operator with this key runs in
        the same slot. Co-located operators must share a slot sharing group and a parallelism."""
        self._update(co_location_group=str(key))
        return self

    def start_new_chain(self):
        self._update(chaining_strategy=t.ChainingStrategy.HEAD)
        return self

    def disable_chaining(self):
        self._update(chaining_strategy=t.ChainingStrategy.NEVER)
        return self


class DataStream(_TransformationHandle):
    """A stream of records (PyFlink's DataStream)."""

    def get_type(self) -> Any:
        """The records' declared type (a TypeInformation), or None when undeclared."""
        return self._transformation.output_type

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        """The StreamExecutionEnvironment this stream belongs to."""
        return self._env

    def get_execution_config(self) -> Any:
        """The ExecutionConfig of this stream's environment."""
        return self._env.get_config()

    def get_transformation_id(self) -> int:
        """The id of the transformation that makes this stream (unique within its environment)."""
        return self._id

    def force_non_parallel(self) -> DataStream:
        """Run the operator with parallelism 1 and max parallelism 1.

        Returns:
            This stream.
        """
        self.set_parallelism(1)
        return self.set_max_parallelism(1)

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        """Any bound >= 0 holds: buffers here go out per batch, with no timeout to wait for; -1 is refused."""
        check_buffer_timeout(timeout_millis)
        return self

    # -- one-input operators ------------------------------------------------------------------------------------

    def _one_input(self, name: str, spec: t.OperatorSpec, output_type: Any = None, type_name: str | None = None):
        tid = self._env._add_transformation(
            t.OneInputTransformation,
            name=name,
            input_id=self._id,
            operator=spec,
            output_type=output_type,
            type_name=type_name or name,
        )
        return DataStream(self._env, tid)

    def _key(self) -> Any:
        """The key selector operators apply under; None outside a KeyedStream."""
        return None

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply `func` to every record, emitting one record each.

        Args:
            func: A MapFunction, or any callable of one record.
            output_type: The results' type; declare it as PyFlink users do (records are shaped by it).

        Returns:
            The stream of results.

        Example:
            ```python
            ds.map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
            ```
        """
        check_function(func, "map", "map")
        return self._one_input("Map", t.MapSpec(func, self._key()), output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply `func` to every record, emitting each element of the iterable it returns (none, one or many).

        Args:
            func: A FlatMapFunction, or any callable of one record returning an iterable (a generator works).
            output_type: The results' type.

        Returns:
            The stream of results.

        Example:
            ```python
            lines.flat_map(str.split, output_type=Types.STRING())
            ```
        """
        check_function(func, "flat_map", "flat_map")
        return self._one_input("FlatMap", t.FlatMapSpec(func, self._key()), output_type)

    def filter(self, func: Any) -> DataStream:
        """Keep the records for which `func` returns true.

        Args:
            func: A FilterFunction, or any callable of one record.

        Returns:
            The stream of the records kept, of the same type.
        """
        check_function(func, "filter", "filter")
        return self._one_input("Filter", t.FilterSpec(func, self._key()), self.get_type())

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Apply a ProcessFunction: it sees each record with a context (timestamp, current watermark, timer service,
        side outputs) and emits any number of records.

        Args:
            func: A ProcessFunction.
            output_type: The results' type.

        Returns:
            The stream of results.
        """
        check_function(func, "process_element", "process")
        return self._one_input("Process", t.ProcessSpec(func), output_type)

    def assign_timestamps_and_watermarks(self, watermark_strategy: Any) -> DataStream:
        """Give records timestamps (its assigner) and generate watermarks (its generator) from here on;
        watermarks arriving from upstream are dropped, except the final one at end of input (as in Flink)."""
        if not hasattr(watermark_strategy, "create_watermark_generator"):
            raise InvalidJobError(
                f"assign_timestamps_and_watermarks expects a WatermarkStrategy, got {watermark_strategy!r}"
            )
        spec = t.TimestampsAndWatermarksSpec(watermark_strategy)
        return self._one_input("Timestamps/Watermarks", spec, self.get_type())

    def window_all(self, window_assigner: Any) -> Any:
        """Windows over the whole stream (not per key), evaluated in a single subtask."""
        from fluvial.datastream.windowed_stream import AllWindowedStream

        return AllWindowedStream(self, window_assigner)

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        """Partition the stream by key: records of one key go to one subtask, where keyed state and timers are
        scoped to that key.

        Args:
            key_selector: A KeySelector, or any callable of one record returning its key (hashable).
            key_type: The key's TypeInformation, as in PyFlink: a key that does not fit it fails the job with
                an error naming the key_by, the key and the type (checked once per distinct key where the key
                is computed for partitioning). None: any hashable key.

        Returns:
            The KeyedStream.

        Example:
            ```python
            pairs.key_by(lambda pair: pair[0], key_type=Types.STRING())
            ```
        """
        from fluvial.datastream.keyed_stream import KeyedStream

        check_function(key_selector, "get_key", "key_by")
        if key_type is not None and not isinstance(key_type, TypeInformation):
            raise InvalidJobError(
                f"key_by's key_type must be a TypeInformation such as Types.STRING(), got {key_type!r}"
            )
        partitioner = t.PartitionerSpec(t.PartitionerKind.HASH, key_selector=key_selector, key_type=key_type)
        tid = self._partition_id(partitioner)
        return KeyedStream(self._env, tid, key_selector, self)

    # -- partitioning -------------------------------------------------------------------------------------------

    def _partition_id(self, partitioner: t.PartitionerSpec) -> int:
        return self._env._add_transformation(
            t.PartitionTransformation,
            name="Partition",
            input_id=self._id,
            partitioner=partitioner,
            output_type=self.get_type(),
        )

    def _partition(self, kind: t.PartitionerKind) -> DataStream:
        return DataStream(self._env, self._partition_id(t.PartitionerSpec(kind)))

    def shuffle(self) -> DataStream:
        """Send each record to a uniformly random subtask of the next operator.

        Returns:
            The repartitioned stream.
        """
        return self._partition(t.PartitionerKind.SHUFFLE)

    def rebalance(self) -> DataStream:
        """Send records round-robin to every subtask of the next operator (evens out skew).

        Returns:
            The repartitioned stream.
        """
        return self._partition(t.PartitionerKind.REBALANCE)

    def rescale(self) -> DataStream:
        """Send records round-robin to a subset of the next operator's subtasks (local groups when the
        parallelisms are multiples of each other).

        Returns:
            The repartitioned stream.
        """
        return self._partition(t.PartitionerKind.RESCALE)

    def forward(self) -> DataStream:
        """Send each subtask's records to the same subtask of the next operator (equal parallelism needed); such an
        edge may chain.

        Returns:
            The stream.
        """
        return self._partition(t.PartitionerKind.FORWARD)

    def global_(self) -> DataStream:
        """Send every record to subtask 0 of the next operator.

        Returns:
            The stream.
        """
        return self._partition(t.PartitionerKind.GLOBAL)

    def broadcast(self, *broadcast_state_descriptors: Any) -> Any:
        """Every record to every subtask; with MapStateDescriptors, a BroadcastStream to `connect` to."""
        stream = self._partition(t.PartitionerKind.BROADCAST)
        if not broadcast_state_descriptors:
            return stream
        from fluvial.datastream.broadcast_stream import BroadcastStream

        return BroadcastStream(stream, broadcast_state_descriptors)

    def project(self, *field_indexes: int) -> DataStream:
        """Keep the given fields of each tuple, in the given order (PyFlink: only tuple-typed streams)."""
        from fluvial.common.typeinfo import TupleTypeInfo, Types

        type_info = self.get_type()
        if not isinstance(type_info, TupleTypeInfo):
            raise InvalidJobError(
                "Only Tuple DataStreams can be projected: give the stream a Types.TUPLE([...]) type "
                f"(output_type=... or type_info=...); its type is {type_info!r}"
            )
        arity = type_info.get_arity()
        for index in field_indexes:
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < arity:
                raise InvalidJobError(f"project: field index {index!r} is not in [0, {arity}) of {type_info!r}")
        if not field_indexes:
            raise InvalidJobError("project needs at least one field index")
        field_types = type_info.get_field_types()
        output_type = Types.TUPLE([field_types[i] for i in field_indexes])
        return self._one_input("Projection", t.MapSpec(_Projection(tuple(field_indexes))), output_type)

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        """Send each record to the subtask a Partitioner picks for its key.

        Args:
            partitioner: A Partitioner (or a callable `(key, num_partitions) -> index`).
            key_selector: A KeySelector (or a callable of one record) giving the key passed to `partitioner`.

        Returns:
            The repartitioned stream.

        Raises:
            InvalidJobError: either argument is not a function of the right kind.
        """
        check_function(partitioner, "partition", "partition_custom")
        check_function(key_selector, "get_key", "partition_custom")
        spec = t.PartitionerSpec(t.PartitionerKind.CUSTOM, key_selector=key_selector, custom_partitioner=partitioner)
        return DataStream(self._env, self._partition_id(spec))

    # -- combining ----------------------------------------------------------------------------------------------

    def union(self, *streams: DataStream) -> DataStream:
        """Merge this stream with others of the same type into one stream (no order between them).

        Args:
            *streams: The other DataStreams.

        Returns:
            The union.
        """
        for stream in streams:
            if stream._env is not self._env:
                raise InvalidJobError("union of streams from different StreamExecutionEnvironments; use one env")
        tid = self._env._add_transformation(
            t.UnionTransformation,
            name="Union",
            inputs=(self._id, *(s._id for s in streams)),
            output_type=self.get_type(),
        )
        return DataStream(self._env, tid)

    def connect(self, ds: Any) -> Any:
        """A ConnectedStreams with another DataStream, or a BroadcastConnectedStream with a BroadcastStream."""
        from fluvial.datastream.broadcast_stream import BroadcastConnectedStream, BroadcastStream
        from fluvial.datastream.connected_streams import ConnectedStreams

        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds)
        if ds._env is not self._env:
            raise InvalidJobError("connect of streams from different StreamExecutionEnvironments; use one env")
        return ConnectedStreams(self, ds)

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The stream of the records a process function emitted to `output_tag` (`ctx.output(tag, value)`), or
        that a window operator sent there as late data.

        Args:
            output_tag: The OutputTag, with its type.

        Returns:
            The side-output stream.
        """
        if not isinstance(output_tag, OutputTag):
            raise InvalidJobError(f"get_side_output expects an OutputTag, got {output_tag!r}")
        tid = self._env._add_transformation(
            t.SideOutputTransformation,
            name=f"SideOutput({output_tag.tag_id})",
            input_id=self._id,
            output_tag=output_tag,
            output_type=output_tag.type_info,
        )
        return DataStream(self._env, tid)

    # -- sinks --------------------------------------------------------------------------------------------------

    def _sink(self, name: str, spec: t.OperatorSpec) -> DataStreamSink:
        tid = self._env._add_transformation(t.SinkTransformation, name=name, input_id=self._id, operator=spec)
        self._env._pending_sinks.append(tid)
        return DataStreamSink(self._env, tid)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """Write every record to standard output as `str(record)`, prefixed by the subtask's number (`2> `) when
        the parallelism is above 1 and by `sink_identifier` when given.

        Args:
            sink_identifier: A prefix that tells several print sinks apart.

        Returns:
            The sink.
        """
        return self._sink("Print to Std. Out", t.PrintSpec(type_info=self.get_type(), sink_identifier=sink_identifier))

    def print_to_err(self, sink_identifier: str | None = None) -> DataStreamSink:
        """As `print`, to standard error.

        Args:
            sink_identifier: A prefix that tells several print sinks apart.

        Returns:
            The sink.
        """
        spec = t.PrintSpec(type_info=self.get_type(), sink_identifier=sink_identifier, to_stderr=True)
        return self._sink("Print to Std. Err", spec)

    def sink_to(self, sink: Sink) -> DataStreamSink:
        """Write to a Sink; a sink that SupportsPreprocessing transforms the stream first."""
        if not hasattr(sink, "create_writer"):
            raise InvalidJobError(f"sink_to expects a Sink (e.g. FileSink), got {sink!r}; use add_sink for functions")
        stream: DataStream = self
        get_transformer = getattr(sink, "get_transformer", None)
        transformer = get_transformer() if callable(get_transformer) else None
        if transformer is not None:
            stream = transformer.apply(self)
        with_input_type = getattr(sink, "with_input_type", None)
        if callable(with_input_type):
            sink = with_input_type(stream.get_type())
        return stream._sink(sink.default_name(), t.SinkSpec(sink))

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        """A SinkFunction or plain callable; a Sink (e.g. Flink 1.x's StreamingFileSink) goes to `sink_to`."""
        if hasattr(sink_func, "create_writer"):
            return self.sink_to(sink_func)
        check_function(sink_func, "invoke", "add_sink")
        return self._sink("Sink: Unnamed", t.SinkFunctionSpec(sink_func))

    def execute_and_collect(self, job_execution_name: str | None = None, limit: int | None = None):
        """Run the job and return its records: a CloseableIterator (also a context manager), or a list of at
        most `limit` records when a limit is given."""
        return self._env._execute_and_collect(self, job_execution_name, limit)


class DataStreamSink(_TransformationHandle):
    """The end of a stream (PyFlink's DataStreamSink)."""


class _Projection:
    """`project(...)`'s map: a tuple of the chosen fields."""

    __slots__ = ("indexes",)

    def __init__(self, indexes: tuple[int, ...]) -> None:
        self.indexes = indexes

    def map(self, value: Any) -> tuple:
        return tuple(value[i] for i in self.indexes)

    def __reduce__(self) -> tuple:
        return (_Projection, (self.indexes,))


_LATE = {
    "KeyedStream": "fluvial.datastream.keyed_stream",
    "ConnectedStreams": "fluvial.datastream.connected_streams",
    "WindowedStream": "fluvial.datastream.windowed_stream",
    "AllWindowedStream": "fluvial.datastream.windowed_stream",
    "BroadcastStream": "fluvial.datastream.broadcast_stream",
    "BroadcastConnectedStream": "fluvial.datastream.broadcast_stream",
    "CloseableIterator": "fluvial.datastream.closeable_iterator",
}

# PyFlink's module holds every stream class; here they live in modules that import this one.
__getattr__ = lazy_names(__name__, _LATE, globals())
