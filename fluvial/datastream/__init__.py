"""The DataStream API (PyFlink `pyflink.datastream`)."""

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

__all__ = [
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
]
