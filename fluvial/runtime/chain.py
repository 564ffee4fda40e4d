"""OperatorChain: the operators of one JobVertex, wired by method calls, built downstream-first.

A buffer entering the head flows through the chained operators within one call stack; events (watermarks,
end of input) travel between buffers, so per-record semantics hold. Results leave the chain through record
writers, one per outgoing JobEdge.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import transformations as t
from fluvial.graph.job_graph import JobEdge, JobVertex
from fluvial.graph.stream_graph import StreamNode
from fluvial.runtime import process_operators as p
from fluvial.runtime import sink_operators as s
from fluvial.runtime.operators import (
    FilterOperator,
    FlatMapOperator,
    FusedStatelessOperator,
    KeyedReduceOperator,
    MapOperator,
    StreamOperator,
    TimestampsAndWatermarksOperator,
    is_fusable,
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
    t.TimestampsAndWatermarksSpec: TimestampsAndWatermarksOperator,
}


def _window_operator(spec: t.OperatorSpec, context: OperatorContext) -> StreamOperator:
    """Window jobs load the window machinery; every other job starts without it."""
    from fluvial.runtime.window_operator import WindowOperator

    return WindowOperator(spec, context)


OPERATOR_BUILDERS[t.WindowSpec] = _window_operator  # type: ignore[assignment]


class SourceOperatorStub(StreamOperator):
    """The chain position of a source: the task feeds buffers it read into `process_batch`, which forwards."""

    def open(self) -> None:
        self.process_batch = self.output.collect  # type: ignore[method-assign]


def build_operator(node: StreamNode, context: OperatorContext, template: Any = None) -> StreamOperator:
    if node.is_source:
        return SourceOperatorStub(node.operator, context)
    builder = OPERATOR_BUILDERS.get(type(node.operator))
    if builder is None:
        raise TypeError(f"no runtime operator for {type(node.operator).__name__} ('{node.name}')")
    return builder(_subtask_spec(node, context.task_info, template), context)


def _subtask_spec(node: StreamNode, info: Any, template: Any) -> t.OperatorSpec:
    """Each parallel subtask, and each restarted attempt, gets its own copy of the user's function object, as
    each Flink subtask deserializes its own: what a function keeps in `open()` (its subtask index, state
    handles) must not be overwritten by a sibling, nor survive from a failed attempt. Copies come from the
    JobMaster's pristine `template` (taken before anything opened the function) when there is one. Subtask 0
    of the first attempt keeps the original object, so a job in thread mode runs the very object the user
    passed; Sink descriptions only build writers and are never copied."""
    spec = node.operator
    if (info.subtask_index == 0 and info.attempt_number == 0) or spec.function is None \
            or isinstance(spec, t.SinkSpec):
        return spec
    source = template if template is not None else spec.function
    thaw = getattr(source, "thaw", None)  # a PickledFunction: unpickle a fresh copy
    try:
        own = thaw() if thaw is not None else copy.deepcopy(source)
    except Exception as error:  # noqa: BLE001 - re-raised with the fix
        raise InvalidJobError(
            f"the function of '{node.name}' ({type(spec.function).__name__}) cannot be copied for subtask "
            f"{info.subtask_index} ({error}); each parallel subtask needs its own copy: create unpicklable "
            "resources (locks, connections, files) in open(), not in __init__"
        ) from error
    return dataclasses.replace(spec, function=own)


def _input_method(operator: StreamOperator, type_number: int) -> Callable[[Any], None]:
    if type_number == 1:
        return operator.process_batch1  # type: ignore[attr-defined]
    if type_number == 2:
        return operator.process_batch2  # type: ignore[attr-defined]
    return lambda batch: operator.process_batch(batch)


class OperatorChain:
    """Operators in depth-first order (head first); `writers` maps JobEdge dataset id → RecordWriter."""

    def __init__(self, vertex: JobVertex, make_context: Callable[[StreamNode], OperatorContext],
                 writers: dict[str, Any], templates: dict[int, Any] | None = None) -> None:
        self.vertex = vertex
        self.operators: dict[int, StreamOperator] = {}
        self.order: list[StreamOperator] = []
        for node in vertex.nodes:
            operator = build_operator(node, make_context(node), (templates or {}).get(node.id))
            self.operators[node.id] = operator
            self.order.append(operator)
        for node in vertex.nodes:
            self.operators[node.id].setup(self._output_of(node, vertex.outputs, writers))
        self._fuse_stateless_runs()
        self.head = self.order[0]

    def _fuse_stateless_runs(self) -> None:
        """Replace each run of >= 2 unkeyed map/filter operators, each feeding only the next, by one
        FusedStatelessOperator that takes the run's place (and the last member's output)."""
        successors: dict[int, list] = {node.id: [] for node in self.vertex.nodes}
        for edge in self.vertex.chained_edges:
            successors[edge.source_id].append(edge)
        external = {edge.source_node_id for edge in self.vertex.outputs}
        by_operator = {id(op): node_id for node_id, op in self.operators.items()}
        fused_order: list[StreamOperator] = []
        run: list[StreamOperator] = []

        def flush() -> None:
            if len(run) >= 2:
                fused = FusedStatelessOperator(list(run))
                fused.setup(run[-1].output)
                fused_order.append(fused)
                for member in run:
                    self.operators[by_operator[id(member)]] = fused
            else:
                fused_order.extend(run)
            run.clear()

        for operator in self.order:
            node_id = by_operator[id(operator)]
            if run and not is_fusable(operator):
                flush()
            if not is_fusable(operator):
                fused_order.append(operator)
                continue
            run.append(operator)
            edges = successors[node_id]
            feeds_only_next = (len(edges) == 1 and edges[0].output_tag is None and node_id not in external)
            if not feeds_only_next:
                flush()
        flush()
        if len(fused_order) != len(self.order):
            self._rewire(fused_order)
            self.order = fused_order

    def _rewire(self, fused_order: list[StreamOperator]) -> None:
        """Whatever fed a run's first member (an upstream output's late-bound lambda, or the task's input)
        must now feed the fused operator."""
        for operator in fused_order:
            if isinstance(operator, FusedStatelessOperator):
                first = operator.members[0]
                first.process_batch = operator.process_batch  # type: ignore[method-assign]

    def _output_of(self, node: StreamNode, out_edges: list[JobEdge], writers: dict[str, Any]) -> Output:
        main: list[Callable] = []
        side: dict[Any, list[Callable]] = {}
        watermark_targets: list[Callable] = []
        status_targets: list[Callable] = []
        for edge in self.vertex.chained_edges:
            if edge.source_id != node.id:
                continue
            target = self.operators[edge.target_id]
            # late binding: the target's process_batch may be rebound in open() (sinks, sources)
            entry = _input_method(target, edge.type_number)
            (side.setdefault(edge.output_tag, []) if edge.output_tag else main).append(entry)
            watermark_targets.append(target.process_watermark)
            status_targets.append(lambda status, t=target: t.output.emit_watermark_status(status))
        for job_edge in out_edges:
            if job_edge.source_node_id != node.id:
                continue
            writer = writers[job_edge.edge_id]
            (side.setdefault(job_edge.output_tag, []) if job_edge.output_tag else main).append(writer.emit)
            watermark_targets.append(writer.broadcast_watermark)
            status_targets.append(writer.broadcast_event)
        return Output(main, side, watermark_targets, status_targets)

    def open(self) -> None:
        """Open downstream operators first, so a head that emits while opening finds them ready."""
        for operator in reversed(self.order):
            operator.open()
            operator.after_open()

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
