"""OperatorChain: the operators of one JobVertex, wired by method calls.

Built in three steps, each decided once:
1. every StreamNode of the vertex becomes an operator (each parallel subtask gets its own copy of the user's
   function, see `_subtask_spec`);
2. runs of stateless map/filter/flat_map operators (possibly headed by a running keyed reduce), each feeding
   only the next, are fused into one operator (`operators.fused`);
3. outputs are wired: an operator's results go to the inputs of the chained operators after it (behind a
   boundary that labels failures with the receiving operator's name and counts its numRecordsIn) and to the
   record writers of its outgoing JobEdges; its Output counts its numRecordsOut. Nothing is rebound later.
   Where the main output leaves the chain of functions — to a record writer or a sink — a declared type
   that only checks is checked per buffer (`fluvial.common.type_checks`), as PyFlink applies it where it
   serializes the stream.
A buffer entering the head flows through the chain within one call stack; events (watermarks, idleness, end
of input) travel between buffers, so per-record semantics hold.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.instance_layout import stand_in, write_back
from fluvial.common.type_checks import BatchCheck, batch_checker, batch_shaper, key_checker
from fluvial.datastream import transformations as t
from fluvial.graph.job_graph import JobVertex
from fluvial.graph.stream_graph import StreamNode
from fluvial.graph.typed_outputs import TypedFunction
from fluvial.runtime.deployment import checks_the_keys_it_meets
from fluvial.runtime.operators import process as p
from fluvial.runtime.operators import sink as s
from fluvial.runtime.operators.base import (
    StreamOperator,
    close_each,
    counted_input,
    key_by_name,
    label_failure,
    labelled_input,
)
from fluvial.runtime.operators.basic import (
    BatchKeyedReduceOperator,
    FilterOperator,
    FlatMapOperator,
    KeyedReduceOperator,
    MapOperator,
    TimestampsAndWatermarksOperator,
)
from fluvial.runtime.operators.fused import FusedOperator, can_head_a_run, is_fusable
from fluvial.runtime.operators.runtime_context import OperatorContext
from fluvial.runtime.output import Output
from fluvial.runtime.records import RecordBatch

if TYPE_CHECKING:
    from fluvial.datastream.output_tag import OutputTag
    from fluvial.graph.stream_graph import StreamEdge
    from fluvial.runtime.output import BatchSink
    from fluvial.runtime.records import Watermark, WatermarkStatus

OPERATOR_BUILDERS: dict[type[t.OperatorSpec], Callable[[Any, OperatorContext], StreamOperator]] = {
    t.MapSpec: MapOperator,
    t.FilterSpec: FilterOperator,
    t.FlatMapSpec: FlatMapOperator,
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


def _keyed_reduce(spec: t.OperatorSpec, context: OperatorContext) -> StreamOperator:
    """A rolling reduce, or in a BATCH job one final result per key."""
    return BatchKeyedReduceOperator(spec, context) if spec.batch else KeyedReduceOperator(spec, context)


OPERATOR_BUILDERS[t.KeyedReduceSpec] = _keyed_reduce


def _window_operator(spec: t.OperatorSpec, context: OperatorContext) -> StreamOperator:
    """Window jobs load the window machinery; every other job starts without it."""
    from fluvial.runtime.operators.window import WindowOperator

    return WindowOperator(spec, context)


OPERATOR_BUILDERS[t.WindowSpec] = _window_operator


def _broadcast_operator(spec: t.OperatorSpec, context: OperatorContext) -> StreamOperator:
    from fluvial.runtime.operators.broadcast import BroadcastProcessOperator

    return BroadcastProcessOperator(spec, context)


OPERATOR_BUILDERS[t.BroadcastProcessSpec] = _broadcast_operator


def _async_operator(spec: t.OperatorSpec, context: OperatorContext) -> StreamOperator:
    from fluvial.runtime.operators.async_wait import AsyncWaitOperator

    return AsyncWaitOperator(spec, context)


OPERATOR_BUILDERS[t.AsyncWaitSpec] = _async_operator


def _bundle_operator(spec: t.OperatorSpec, context: OperatorContext) -> StreamOperator:
    from fluvial.runtime.operators.bundle import MapBundleOperator

    return MapBundleOperator(spec, context)


OPERATOR_BUILDERS[t.MapBundleSpec] = _bundle_operator


class SourceOperator(StreamOperator):
    """The chain position of a source: the task's source input emits straight into this operator's output."""

    def process_batch(self, batch: RecordBatch) -> None:
        output = self.output
        if output is None:
            raise RuntimeError(f"source operator {self.name} got records before its output was set up")
        output.collect(batch)


def build_operator(
    node: StreamNode,
    context: OperatorContext,
    templates: dict[str, Any] | None = None,
    stand_ins: list[tuple[Any, Any]] | None = None,
) -> StreamOperator:
    """The operator of `node` for one subtask: `templates` are the node's pristine objects by field (from the
    JobMaster); `stand_ins` collects (user's object, stand-in) pairs (`_own_object`), for the chain to write
    back when it closes."""
    if node.is_source:
        return SourceOperator(node.operator, context)
    builder = OPERATOR_BUILDERS.get(type(node.operator))
    if builder is None:
        raise TypeError(f"no runtime operator for {type(node.operator).__name__} ('{node.name}')")
    if node.operator.batch and context.state_backend is not None:
        # BATCH jobs ignore the configured state backend (as Flink does): no checkpoints, so state stays in
        # plain Python objects, the fastest place for it
        context = dataclasses.replace(context, state_backend=None)
    return builder(_subtask_spec(node, context.task_info, templates or {}, stand_ins), context)


def _subtask_spec(
    node: StreamNode, info: Any, templates: dict[str, Any], stand_ins: list[tuple[Any, Any]] | None
) -> t.OperatorSpec:
    """The node's operator description with this subtask's own objects in its user-object fields (its function,
    a window's ProcessWindowFunction: `t.USER_OBJECT_FIELDS`). Sink descriptions only build writers and are
    never copied."""
    spec = node.operator
    if isinstance(spec, t.SinkSpec):
        return spec
    own = {}
    for field in t.USER_OBJECT_FIELDS:
        obj = getattr(spec, field, None)
        if obj is not None:
            mine = _own_object(node, info, obj, templates.get(field), stand_ins)
            if mine is not obj:
                own[field] = mine
    return dataclasses.replace(spec, **own) if own else spec


def _own_object(node: StreamNode, info: Any, obj: Any, template: Any, stand_ins: list[tuple[Any, Any]] | None) -> Any:
    """Each parallel subtask, and each restarted attempt, gets its own copy of a user's object, as each Flink
    subtask deserializes its own: what a function keeps in `open()` (its subtask index, state handles) must not
    be overwritten by a sibling, nor survive from a failed attempt. Copies come from the JobMaster's pristine
    `template` (taken before anything opened the object) when there is one.

    Subtask 0 of the first attempt runs the user's own object, so a job in thread mode can read back what it
    collected — except that once a template was pickled from it, the object is on CPython's slow attribute
    layout (`common.instance_layout`): that subtask then runs a stand-in sharing the object's attribute values
    (appended to in place, as the object's own), whose attributes the chain writes back to the object when it
    closes; the pair goes to `stand_ins`."""
    source = template if template is not None else obj
    thaw = getattr(source, "thaw", None)  # a PickledFunction: unpickle a fresh copy
    if info.subtask_index == 0 and info.attempt_number == 0:
        if thaw is None or stand_ins is None:
            return obj
        inner = obj.wrapped_function if isinstance(obj, TypedFunction) else obj
        twin = stand_in(inner)
        if twin is inner:
            return obj
        stand_ins.append((inner, twin))
        return obj.wrapping(twin) if isinstance(obj, TypedFunction) else twin
    try:
        return thaw() if thaw is not None else copy.deepcopy(source)
    except Exception as error:  # noqa: BLE001 - re-raised with the fix
        raise InvalidJobError(
            f"the function of '{node.name}' ({type(obj).__name__}) cannot be copied for subtask "
            f"{info.subtask_index} ({error}); each parallel subtask needs its own copy: create unpicklable "
            "resources (locks, connections, files) in open(), not in __init__"
        ) from error


def _new_key_check(vertex: JobVertex) -> Callable[[Any], None] | None:
    """The check of a typed key_by's keys by the operator that consumes it (`deployment.checks_the_keys_it_meets`):
    the error it raises is the producer's writer's (`type_checks.key_checker`), labelled as the key_by's."""
    for edge in vertex.inputs:
        partitioner = edge.partitioner
        if partitioner.kind is not t.PartitionerKind.HASH:
            continue
        name = key_by_name(partitioner.key_selector)
        check = key_checker(partitioner.key_type, name)
        if check is None:
            continue

        def labelled(key: Any, check: Callable[[Any], None] = check, name: str = name) -> None:
            try:
                check(key)
            except InvalidJobError as error:
                label_failure(error, name)
                raise

        return labelled
    return None


def _checked_push(push: Callable[[RecordBatch], None], check: BatchCheck) -> Callable[[RecordBatch], None]:
    """`push` behind a declared type's per-buffer check; the buffer itself goes on when all its values fit."""

    def checked(batch: RecordBatch) -> None:
        values = batch.values
        fitted = check(values)
        push(batch if fitted is values else RecordBatch(fitted, batch.timestamps))

    return checked


def _shaped_side(tag: OutputTag, targets: list[BatchSink], operator: str) -> list[BatchSink]:
    """A side output's targets behind its tag's declared type: PyFlink converts every side output by its
    OutputTag's type, whatever the operator's own output type, so values are checked or shaped here, once per
    buffer, where the operator hands them on (`type_checks.batch_shaper`)."""
    shape = batch_shaper(tag.type_info, operator)
    if shape is None:
        return targets
    return [_checked_push(target, shape) for target in targets]


class OperatorChain:
    """Operators in depth-first order (head first), fused runs replacing their members; `writers` maps JobEdge
    dataset id → RecordWriter."""

    def __init__(
        self,
        vertex: JobVertex,
        make_context: Callable[[StreamNode], OperatorContext],
        writers: dict[str, Any],
        templates: dict[int, Any] | None = None,
    ) -> None:
        self.vertex = vertex
        self._nodes = {node.id: node for node in vertex.nodes}
        self._stand_ins: list[tuple[Any, Any]] = []  # (the user's object, what runs in its place)
        built = {
            node.id: build_operator(node, make_context(node), (templates or {}).get(node.id), self._stand_ins)
            for node in vertex.nodes
        }
        if checks_the_keys_it_meets(vertex):
            built[vertex.head.id].new_key_check = _new_key_check(vertex)
        self._metrics = {node_id: operator.context.metrics for node_id, operator in built.items()}
        self._owner: dict[int, StreamOperator] = dict(built)  # node id -> the operator that runs it
        self._last_node: dict[int, int] = {}  # id(operator) -> the node whose outgoing edges are its outputs
        self.order = self._fuse_runs(built)
        for operator in self.order:
            operator.setup(self._output_of(self._last_node[id(operator)], writers))
        self.head = self.order[0]
        self._holders = [operator for operator in self.order if operator.holds_input]
        self.holds_input = bool(self._holders)
        self._finished = 0  # how many operators (head first) have finished
        self._finishing = False  # whether order[_finished] has been told that its input ended

    def _fuse_runs(self, built: dict[int, StreamOperator]) -> list[StreamOperator]:
        """Step 2: each run of >= 2 operators, each feeding only the next — stateless map/filter/flat_map ones,
        possibly headed by a running keyed reduce — becomes one FusedOperator that takes the run's place (and
        the last member's outputs)."""
        successors: dict[int, list[StreamEdge]] = {node.id: [] for node in self.vertex.nodes}
        for edge in self.vertex.chained_edges:
            successors[edge.source_id].append(edge)
        external = {edge.source_node_id for edge in self.vertex.outputs}
        order: list[StreamOperator] = []
        run: list[int] = []

        def flush() -> None:
            if len(run) >= 2:
                fused = FusedOperator([built[node_id] for node_id in run])
                for node_id in run:
                    self._owner[node_id] = fused
                self._last_node[id(fused)] = run[-1]
                order.append(fused)
            elif run:
                order.append(built[run[0]])
                self._last_node[id(built[run[0]])] = run[0]
            run.clear()

        for node in self.vertex.nodes:
            operator = built[node.id]
            head = can_head_a_run(operator)
            if not head and not is_fusable(operator):
                flush()
                order.append(operator)
                self._last_node[id(operator)] = node.id
                continue
            if head:
                flush()
            run.append(node.id)
            edges = successors[node.id]
            if not (len(edges) == 1 and edges[0].output_tag is None and node.id not in external):
                flush()
        flush()
        return order

    def _output_of(self, node_id: int, writers: dict[str, Any]) -> Output:
        """Step 3: where the results of `node_id` go."""
        node = self._nodes[node_id]
        # a source's values were checked when the job was built (from_collection) or are its connector's
        check = None if node.is_source else batch_checker(node.output_type, node.output_type_origin or node.name)
        main: list[BatchSink] = []
        side: dict[OutputTag, list[BatchSink]] = {}
        watermark_targets: list[Callable[[Watermark], None]] = []
        status_targets: list[Callable[[WatermarkStatus], None]] = []
        for edge in self.vertex.chained_edges:
            if edge.source_id != node_id:
                continue
            target = self._owner[edge.target_id]
            entry = target.input(edge.type_number)
            push = counted_input(entry.process_batch, target, self._metrics[edge.target_id].records_in)
            if check is not None and not edge.output_tag and self._nodes[edge.target_id].is_sink:
                push = _checked_push(push, check)
            (side.setdefault(edge.output_tag, []) if edge.output_tag else main).append(push)
            watermark_targets.append(labelled_input(entry.process_watermark, target))
            status_targets.append(entry.process_status)
        for job_edge in self.vertex.outputs:
            if job_edge.source_node_id != node_id:
                continue
            writer = writers[job_edge.edge_id]
            emit = writer.emit if check is None or job_edge.output_tag else _checked_push(writer.emit, check)
            (side.setdefault(job_edge.output_tag, []) if job_edge.output_tag else main).append(emit)
            watermark_targets.append(writer.broadcast_watermark)
            status_targets.append(writer.broadcast_event)
        side = {tag: _shaped_side(tag, targets, node.name) for tag, targets in side.items()}
        return Output(main, side, watermark_targets, status_targets, self._metrics[node_id].records_out)

    # -- lifecycle, head to tail or tail to head ----------------------------------------------------------------

    def initialize_state(self, restore_of: Callable[[str], Any]) -> None:
        """Every operator's state, restored (`restore_of(operator_id)`: its OperatorRestore) or empty."""
        for operator in self.order:
            operator.initialize_state(restore_of(operator.context.operator_id))

    def open(self) -> None:
        """Open downstream operators first, so a head that emits while opening finds them ready."""
        for operator in reversed(self.order):
            operator.open()

    def input_blocked(self) -> bool:
        """Whether an operator that holds its inputs (async I/O) can take no more now."""
        for operator in self._holders:
            if operator.input_blocked():
                return True
        return False

    def finish(self) -> bool:
        """Flush operators head to tail: each may emit into the next before that one is told input ended. An
        operator that still holds inputs whose results come later (`is_quiescent` False) stops the walk: return
        False, and call again once mails brought its results; True when every operator has finished."""
        order = self.order
        while self._finished < len(order):
            operator = order[self._finished]
            if not self._finishing:
                self._finishing = True
                operator.finish()
            if not operator.is_quiescent():
                return False
            self._finished += 1
            self._finishing = False
        return True

    def close(self) -> list[BaseException]:
        """Close every operator even if some fail; return their errors (the task decides what to report). The
        user's objects that stand-ins ran for get what the stand-ins hold now."""
        errors = close_each(self.order)
        for original, twin in self._stand_ins:
            write_back(original, twin)
        return errors

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for operator in self.order:
            operator.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        for operator in self.order:
            operator.notify_checkpoint_aborted(checkpoint_id)
