"""The DataStream API (PyFlink `pyflink.datastream`).

The names every job uses are imported here; the rest load on first use (PEP 562), since start-up time is
part of every small job's latency.
"""

from __future__ import annotations

from fluvial.common.lazy_names import lazy_names
from fluvial.datastream.connected_streams import ConnectedStreams
from fluvial.datastream.data_stream import DataStream, DataStreamSink
from fluvial.datastream.functions import (
    AggregateFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
)
from fluvial.datastream.keyed_stream import KeyedStream
from fluvial.datastream.output_tag import OutputTag
from fluvial.datastream.slot_sharing_group import SlotSharingGroup
from fluvial.datastream.stream_execution_environment import StreamExecutionEnvironment

_FUNCTIONS = "fluvial.datastream.functions"
_WINDOW = "fluvial.datastream.window"
_LATE = {
    "WindowedStream": "fluvial.datastream.windowed_stream",
    "AllWindowedStream": "fluvial.datastream.windowed_stream",
    "BroadcastStream": "fluvial.datastream.broadcast_stream",
    "BroadcastConnectedStream": "fluvial.datastream.broadcast_stream",
    "AsyncDataStream": "fluvial.datastream.async_data_stream",
    "WindowFunction": _FUNCTIONS,
    "ProcessWindowFunction": _FUNCTIONS,
    "AllWindowFunction": _FUNCTIONS,
    "ProcessAllWindowFunction": _FUNCTIONS,
    "BroadcastProcessFunction": _FUNCTIONS,
    "KeyedBroadcastProcessFunction": _FUNCTIONS,
    "AsyncFunction": _FUNCTIONS,
    "AsyncRetryPredicate": _FUNCTIONS,
    "AsyncRetryStrategy": _FUNCTIONS,
    "SourceFunction": _FUNCTIONS,
    "TimerService": "fluvial.datastream.timerservice",
    "TimeDomain": "fluvial.datastream.time_domain",
    "CheckpointingMode": "fluvial.datastream.checkpointing_mode",
    "CheckpointConfig": "fluvial.datastream.checkpoint_config",
    "ExternalizedCheckpointRetention": "fluvial.datastream.externalized_checkpoint_retention",
    "StateBackend": "fluvial.datastream.state_backend",
    "HashMapStateBackend": "fluvial.datastream.state_backend",
    "EmbeddedRocksDBStateBackend": "fluvial.datastream.state_backend",
    "CustomStateBackend": "fluvial.datastream.state_backend",
    "PredefinedOptions": "fluvial.datastream.state_backend",
    "CheckpointStorage": "fluvial.datastream.checkpoint_storage",
    "JobManagerCheckpointStorage": "fluvial.datastream.checkpoint_storage",
    "FileSystemCheckpointStorage": "fluvial.datastream.checkpoint_storage",
    "CustomCheckpointStorage": "fluvial.datastream.checkpoint_storage",
    "RuntimeExecutionMode": "fluvial.datastream.execution_mode",
    "Window": _WINDOW,
    "TimeWindow": _WINDOW,
    "CountWindow": _WINDOW,
    "GlobalWindow": _WINDOW,
    "WindowAssigner": _WINDOW,
    "MergingWindowAssigner": _WINDOW,
    "TriggerResult": _WINDOW,
    "Trigger": _WINDOW,
    "MemorySize": "fluvial.datastream.slot_sharing_group",
}

__all__ = sorted(
    [
        "AggregateFunction",
        "CoFlatMapFunction",
        "CoMapFunction",
        "CoProcessFunction",
        "ConnectedStreams",
        "DataStream",
        "DataStreamSink",
        "FilterFunction",
        "FlatMapFunction",
        "KeySelector",
        "KeyedCoProcessFunction",
        "KeyedProcessFunction",
        "KeyedStream",
        "MapFunction",
        "OutputTag",
        "Partitioner",
        "ProcessFunction",
        "ReduceFunction",
        "RuntimeContext",
        "SinkFunction",
        "SlotSharingGroup",
        "StreamExecutionEnvironment",
        *_LATE,
    ]
)


__getattr__ = lazy_names(__name__, _LATE, globals())


def __dir__() -> list[str]:
    return __all__
