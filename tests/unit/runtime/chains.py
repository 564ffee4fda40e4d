"""Builders shared by the runtime tests: a job described through the public API, compiled to its JobGraph, and
one vertex of it built into a live OperatorChain whose record writers only record what they are given."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fluvial.common.task_info import TaskInfo
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.functions import SinkFunction
from fluvial.graph.job_graph import JobGraph, JobVertex
from fluvial.runtime.chain import OperatorChain
from fluvial.runtime.operators.runtime_context import OperatorContext
from fluvial.runtime.records import RecordBatch, Watermark, WatermarkStatus

JOB = "runtime-test"


class RecordingWriter:
    """A RecordWriter stand-in: what the chain hands to one outgoing JobEdge, in order."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.room = True

    def emit(self, batch: RecordBatch) -> None:
        self.items.append(list(batch.values))

    def broadcast_watermark(self, watermark: Watermark) -> None:
        self.items.append(watermark)

    def broadcast_event(self, event: Any) -> None:
        self.items.append(event)

    def writable(self) -> bool:
        return self.room

    def records(self) -> list:
        return [value for item in self.items if isinstance(item, list) for value in item]

    def watermarks(self) -> list[int]:
        return [item.timestamp for item in self.items if isinstance(item, Watermark)]

    def statuses(self) -> list[bool]:
        return [item.idle for item in self.items if isinstance(item, WatermarkStatus)]


class Collect(SinkFunction):
    """A sink that keeps what it receives, in a list the test holds (thread mode runs the very object)."""

    def __init__(self, into: list) -> None:
        self.into = into

    def invoke(self, value: Any, context: Any) -> None:
        self.into.append(value)


def job_graph(describe: Callable[[StreamExecutionEnvironment], Any], parallelism: int = 1) -> JobGraph:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    describe(env)
    return env.get_job_graph()


def context_factory(
    subtask_index: int = 0, state_backend: Any = None, processing_time: Any = None
) -> Callable[[Any], OperatorContext]:
    def make(node: Any) -> OperatorContext:
        info = TaskInfo(JOB, node.name, subtask_index, node.parallelism, node.max_parallelism)
        return OperatorContext(
            info, node.name, node.max_parallelism, {}, None, processing_time, 200, node.operator_id, state_backend
        )

    return make


def build_chain(vertex: JobVertex, **context: Any) -> tuple[OperatorChain, dict[str, RecordingWriter]]:
    """The vertex's chain, wired to one RecordingWriter per outgoing JobEdge (keyed by the edge's id)."""
    writers = {edge.edge_id: RecordingWriter() for edge in vertex.outputs}
    return OperatorChain(vertex, context_factory(**context), writers), writers


def open_chain(chain: OperatorChain, restore_of: Callable[[str], Any] = lambda operator_id: None) -> OperatorChain:
    chain.initialize_state(restore_of)
    chain.open()
    return chain
