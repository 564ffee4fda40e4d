"""OperatorChain: the operators of one JobVertex, wired by method calls, built downstream-first.

A buffer entering the head flows through the chained operators within one call stack; events (watermarks,
end of input) travel between buffers, so per-record semantics hold. Results leave the chain through record
writers, one per outgoing JobEdge.
"""

from __future__ import annotations

from typing import Any, Callable

from fluvial.datastream import transformations as t
from fluvial.graph.job_graph import JobEdge, JobVertex
from fluvial.graph.stream_graph import StreamNode
from fluvial.runtime import process_operators as p
from fluvial.runtime import sink_operators as s
from fluvial.runtime.operators import (
    FilterOperator,
    FlatMapOperator,
    KeyedReduceOperator,
    MapOperator,
    StreamOperator,
)
from fluvial.runtime.output import Output
from fluvial.runtime.runtime_context import OperatorContext

OPERATOR_BUILDERS: dict[type[t.OperatorSpec], type[StreamOperator]] = {
    t.MapSpec: MapOperator,
    t.FilterSpec: FilterOperator,
    t.FlatMapSpec: FlatMapOperator,
    t.KeyedReduceSpec: KeyedReduceOperator,
    t.ProcessSpec: p.ProcessOperator,
    t.KeyedProcessSpec: p.KeyedProcessOperator,
    t.CoMapSpec: p.CoMapOperator,
    t.CoFlatMapSpec: p.CoFlatMapOperator,
    t.CoProcessSpec: p.CoProcessOperator,
    t.KeyedCoProcessSpec: p.KeyedCoProcessOperator,
    t.SinkSpec: s.SinkWriterOperator,
    t.SinkFunctionSpec: s.SinkFunctionOperator,
    t.PrintSpec: s.PrintOperator,
    t.CollectSpec: s.CollectOperator,
}


class SourceOperatorStub(StreamOperator):
    """The chain position of a source: the task feeds buffers it read into `process_batch`, which forwards."""

    def open(self) -> None:
        self.process_batch = self.output.collect  # type: ignore[method-assign]


def build_operator(node: StreamNode, context: OperatorContext) -> StreamOperator:
    if node.is_source:
        return SourceOperatorStub(node.operator, context)
    builder = OPERATOR_BUILDERS.get(type(node.operator))
    if builder is None:
        raise TypeError(f"no runtime operator for {type(node.operator).__name__} ('{node.name}')")
    return builder(node.operator, context)


def _input_method(operator: StreamOperator, type_number: int) -> Callable[[Any], None]:
    if type_number == 1:
        return operator.process_batch1  # type: ignore[attr-defined]
    if type_number == 2:
        return operator.process_batch2  # type: ignore[attr-defined]
    return lambda batch: operator.process_batch(batch)


class OperatorChain:
    """Operators in depth-first order (head first); `writers` maps JobEdge dataset id → RecordWriter."""

    def __init__(self, vertex: JobVertex, make_context: Callable[[StreamNode], OperatorContext],
                 writers: dict[str, Any]) -> None:
        self.vertex = vertex
        self.operators: dict[int, StreamOperator] = {}
        self.order: list[StreamOperator] = []
        for node in vertex.nodes:
            operator = build_operator(node, make_context(node))
            self.operators[node.id] = operator
            self.order.append(operator)
        for node in vertex.nodes:
            self.operators[node.id].setup(self._output_of(node, vertex.outputs, writers))
        self.head = self.order[0]

    def _output_of(self, node: StreamNode, out_edges: list[JobEdge], writers: dict[str, Any]) -> Output:
        main: list[Callable] = []
        side: dict[Any, list[Callable]] = {}
        watermark_targets: list[Callable] = []
        for edge in self.vertex.chained_edges:
            if edge.source_id != node.id:
                continue
            target = self.operators[edge.target_id]
            # late binding: the target's process_batch may be rebound in open() (sinks, sources)
            entry = _input_method(target, edge.type_number)
            (side.setdefault(edge.output_tag, []) if edge.output_tag else main).append(entry)
            watermark_targets.append(target.process_watermark)
        for job_edge in out_edges:
            if job_edge.source_node_id != node.id:
                continue
            writer = writers[job_edge.edge_id]
            (side.setdefault(job_edge.output_tag, []) if job_edge.output_tag else main).append(writer.emit)
            watermark_targets.append(writer.broadcast_watermark)
        return Output(main, side, watermark_targets)

    def open(self) -> None:
        """Open downstream operators first, so a head that emits while opening finds them ready."""
        for operator in reversed(self.order):
            operator.open()

    def end_input(self) -> None:
        """Flush operators head to tail: each may emit into the next before that one is told input ended."""
        for operator in self.order:
            operator.end_input()

    def close(self) -> list[BaseException]:
        """Close every operator even if some fail; return their errors (the task decides what to report)."""
        errors: list[BaseException] = []
        for operator in self.order:
            try:
                operator.close()
            except BaseException as exc:  # noqa: BLE001 - collected and reported by the task
                errors.append(exc)
        return errors
