"""Builders shared by the graph tests: small jobs through the public API, and hand-built two-node
StreamGraphs for the chaining rules the API cannot reach (no operator, a blocking exchange, a forward edge
between different parallelisms)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.data_stream import DataStream
from fluvial.datastream.transformations import (
    ChainingStrategy,
    ExchangeMode,
    MapSpec,
    PartitionerKind,
    PartitionerSpec,
    SourceSpec,
)
from fluvial.graph.job_graph import JobEdge, JobGraph, JobVertex
from fluvial.graph.stream_graph import StreamEdge, StreamGraph, StreamNode


def identity(value: Any) -> Any:
    return value


def keep(value: Any) -> bool:
    return True


def new_env(parallelism: int = 4) -> StreamExecutionEnvironment:
    """An environment with an explicit default parallelism, so plans do not follow the machine's CPU count."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def numbers(env: StreamExecutionEnvironment, parallelism: int | None = None, name: str = "numbers") -> DataStream:
    source = env.from_source(NumberSequenceSource(1, 100), source_name=name)
    if parallelism is not None:
        source.set_parallelism(parallelism)
    return source


def nid(handle: Any) -> int:
    """The StreamNode id of a DataStream or DataStreamSink (node ids are transformation ids)."""
    if isinstance(handle, int):
        return handle
    return handle._id


def stream_edges(graph: StreamGraph, source: Any, target: Any) -> list[StreamEdge]:
    return [e for e in graph.edges if e.source_id == nid(source) and e.target_id == nid(target)]


def stream_edge(graph: StreamGraph, source: Any, target: Any) -> StreamEdge:
    (edge,) = stream_edges(graph, source, target)
    return edge


def job_edge(job_graph: JobGraph, source: Any, target: Any) -> JobEdge:
    (edge,) = [e for e in job_graph.edges if e.source_node_id == nid(source) and e.target_node_id == nid(target)]
    return edge


def vertex_of(job_graph: JobGraph, handle: Any) -> JobVertex:
    (vertex,) = [v for v in job_graph.vertices if nid(handle) in v.operator_ids]
    return vertex


SOURCE_OPERATOR = SourceSpec()
MAP_OPERATOR = MapSpec()


def hand_built(
    *,
    up_parallelism: int = 2,
    down_parallelism: int = 2,
    up_group: str = "default",
    down_group: str = "default",
    up_strategy: ChainingStrategy = ChainingStrategy.HEAD,
    down_strategy: ChainingStrategy = ChainingStrategy.ALWAYS,
    up_is_source: bool = True,
    up_operator: Any = SOURCE_OPERATOR,
    down_operator: Any = MAP_OPERATOR,
    kind: PartitionerKind = PartitionerKind.FORWARD,
    exchange: ExchangeMode = ExchangeMode.UNDEFINED,
    chaining_enabled: bool = True,
    extra_input: bool = False,
) -> tuple[StreamGraph, StreamEdge]:
    """`up (1) -> down (2)`, chainable with the defaults; each keyword breaks (at most) one rule. With
    `extra_input`, a second source (3) also feeds `down`."""
    up = StreamNode(1, "up", "up", up_operator, up_parallelism, 128, up_group, up_strategy, is_source=up_is_source)
    down = StreamNode(2, "down", "Map", down_operator, down_parallelism, 128, down_group, down_strategy)
    edge = StreamEdge(
        source_id=1, target_id=2, type_number=0, partitioner=PartitionerSpec(kind), exchange_mode=exchange
    )
    up.out_edges.append(edge)
    down.in_edges.append(edge)
    nodes = {1: up, 2: down}
    if extra_input:
        other = StreamNode(
            3, "other", "other", SourceSpec(), down_parallelism, 128, down_group, ChainingStrategy.HEAD, is_source=True
        )
        other_edge = StreamEdge(source_id=3, target_id=2, type_number=0, partitioner=PartitionerSpec(kind))
        other.out_edges.append(other_edge)
        down.in_edges.append(other_edge)
        nodes[3] = other
    return StreamGraph("hand-built", nodes, chaining_enabled), edge


STEP_KINDS = (
    "map",
    "map_p",
    "filter_group",
    "new_chain",
    "disable",
    "rebalance",
    "rescale",
    "key_by",
    "union",
    "connect",
    "source",
)


@st.composite
def random_jobs(draw: st.DrawFn) -> StreamExecutionEnvironment:
    """A random small DAG job built through the public API, with one or two sinks."""
    env = new_env(draw(st.integers(1, 3)))
    if draw(st.integers(0, 4)) == 0:
        env.disable_operator_chaining()
    streams: list[DataStream] = [numbers(env, draw(st.integers(1, 3)), name="s0")]
    for step in range(draw(st.integers(1, 8))):
        s = streams[draw(st.integers(0, len(streams) - 1))]
        kind = draw(st.sampled_from(STEP_KINDS))
        if kind == "map":
            new = s.map(identity)
        elif kind == "map_p":
            new = s.map(identity).set_parallelism(draw(st.integers(1, 4)))
        elif kind == "filter_group":
            new = s.filter(keep).slot_sharing_group(draw(st.sampled_from(["default", "a", "b"])))
        elif kind == "new_chain":
            new = s.map(identity).start_new_chain()
        elif kind == "disable":
            new = s.map(identity).disable_chaining()
        elif kind == "rebalance":
            new = s.rebalance().map(identity)
        elif kind == "rescale":
            new = s.rescale().map(identity).set_parallelism(draw(st.integers(1, 4)))
        elif kind == "key_by":
            new = s.key_by(lambda v: v % 3).reduce(lambda a, b: a + b)
        elif kind == "union":
            other = streams[draw(st.integers(0, len(streams) - 1))]
            new = s.union(other).map(identity)
        elif kind == "connect":
            other = streams[draw(st.integers(0, len(streams) - 1))]
            new = s.connect(other).map(_CoIdentity())
        else:
            new = numbers(env, draw(st.integers(1, 3)), name=f"s{step + 1}").map(identity)
        streams.append(new)
    streams[-1].print()
    if len(streams) > 2 and draw(st.booleans()):
        streams[draw(st.integers(0, len(streams) - 2))].print()
    return env


class _CoIdentity:
    def map1(self, value: Any) -> Any:
        return value

    def map2(self, value: Any) -> Any:
        return value
