"""Transformations → StreamGraph, one small translator per kind.

Virtual transformations (partition, union, side output) produce no node: they resolve to the upstream
node(s) they refer to, carrying a partitioner or an output tag onto the edges built for their consumer.
Parallelism, max parallelism and slot sharing group are resolved here, so later stages read plain numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.key_groups import default_max_parallelism, validate_parallelism
from fluvial.datastream import transformations as t
from fluvial.datastream.output_tag import OutputTag
from fluvial.graph.batch_mode import for_batch
from fluvial.graph.stream_graph import StreamEdge, StreamGraph, StreamNode

OperatorTransformation = (
    t.SourceTransformation | t.OneInputTransformation | t.TwoInputTransformation | t.SinkTransformation
)
"""The transformations that become a StreamNode (partitions, unions and side outputs only re-route)."""

DEFAULT_SLOT_SHARING_GROUP = "default"


@dataclass(frozen=True, slots=True)
class UpstreamRef:
    """Where an input really comes from once virtual transformations are looked through."""

    node_id: int
    partitioner: t.PartitionerSpec | None = None
    output_tag: OutputTag | None = None
    exchange_mode: t.ExchangeMode = t.ExchangeMode.UNDEFINED


class _Translator:
    def __init__(
        self,
        transformations: dict[int, t.Transformation],
        default_parallelism: int,
        default_max_parallelism: int | None,
        batch: bool = False,
    ) -> None:
        self._transformations = transformations
        self._default_parallelism = default_parallelism
        self._default_max_parallelism = default_max_parallelism
        self._batch = batch
        self._refs: dict[int, list[UpstreamRef]] = {}
        self.nodes: dict[int, StreamNode] = {}

    def translate(self, tid: int) -> list[UpstreamRef]:
        if tid not in self._refs:
            tr = self._transformations[tid]
            if isinstance(tr, t.PartitionTransformation):
                refs = [
                    replace(ref, partitioner=tr.partitioner, exchange_mode=tr.exchange_mode)
                    for ref in self.translate(tr.input_id)
                ]
            elif isinstance(tr, t.UnionTransformation):
                refs = [ref for input_id in tr.inputs for ref in self.translate(input_id)]
            elif isinstance(tr, t.SideOutputTransformation):
                refs = [replace(ref, output_tag=tr.output_tag) for ref in self.translate(tr.input_id)]
            elif isinstance(tr, OperatorTransformation):
                self._translate_node(tr)
                refs = [UpstreamRef(tr.id)]
            else:
                raise InvalidJobError(f"'{tr.name}' is a {type(tr).__name__}, which no StreamGraph node stands for")
            self._refs[tid] = refs
        return self._refs[tid]

    def _translate_node(self, tr: OperatorTransformation) -> None:
        inputs = [(type_number, self.translate(input_id)) for type_number, input_id in _typed_inputs(tr)]
        parallelism = tr.parallelism or self._default_parallelism
        max_parallelism = tr.max_parallelism or self._default_max_parallelism or default_max_parallelism(parallelism)
        validate_parallelism(parallelism, max_parallelism, tr.name)
        operator = _typed_operator(tr)
        if self._batch:
            operator = for_batch(operator)
        node = StreamNode(
            id=tr.id,
            name=tr.name,
            type_name=getattr(tr, "type_name", tr.name),
            operator=operator,
            parallelism=parallelism,
            max_parallelism=max_parallelism,
            slot_sharing_group=self._slot_sharing_group(tr, inputs),
            chaining_strategy=tr.chaining_strategy,
            is_source=isinstance(tr, t.SourceTransformation),
            is_sink=isinstance(tr, t.SinkTransformation),
            co_location_group=tr.co_location_group,
            uid=tr.uid,
            description=tr.description,
            output_type=tr.output_type,
            output_type_origin=self._output_type_origin(tr, inputs),
        )
        self.nodes[tr.id] = node
        for type_number, refs in inputs:
            for ref in refs:
                self._connect(ref, node, type_number)

    def _output_type_origin(self, tr: t.Transformation, inputs: list[tuple[int, list[UpstreamRef]]]) -> str:
        """The operator that made the values of `tr`'s declared type: `tr` itself, unless it only hands on its
        one input's values under that input's type (a filter, a timestamp assigner) — then whoever made those."""
        operator = getattr(tr, "operator", None)
        refs = [ref for _, input_refs in inputs for ref in input_refs]
        if isinstance(operator, _PASS_THROUGH) and len(refs) == 1:
            upstream = self.nodes[refs[0].node_id]
            if upstream.output_type is tr.output_type and tr.output_type is not None:
                return upstream.output_type_origin or upstream.name
        return tr.name

    def _slot_sharing_group(self, tr: t.Transformation, inputs: list[tuple[int, list[UpstreamRef]]]) -> str:
        """Explicit group wins; else the inputs' group when they all share one; else "default" (DESIGN 2.2)."""
        if tr.slot_sharing_group is not None:
            return tr.slot_sharing_group
        groups = {self.nodes[ref.node_id].slot_sharing_group for _, refs in inputs for ref in refs}
        return groups.pop() if len(groups) == 1 else DEFAULT_SLOT_SHARING_GROUP

    def _connect(self, ref: UpstreamRef, target: StreamNode, type_number: int) -> None:
        source = self.nodes[ref.node_id]
        partitioner = ref.partitioner
        same_parallelism = source.parallelism == target.parallelism
        if partitioner is None or (partitioner.kind is t.PartitionerKind.FORWARD and not same_parallelism):
            # Flink's default: forward between equal parallelisms, else rebalance.
            kind = t.PartitionerKind.FORWARD if same_parallelism else t.PartitionerKind.REBALANCE
            partitioner = t.PartitionerSpec(kind)
        unique_id = sum(1 for e in target.in_edges if e.source_id == source.id)
        edge = StreamEdge(source.id, target.id, type_number, partitioner, ref.exchange_mode, ref.output_tag, unique_id)
        source.out_edges.append(edge)
        target.in_edges.append(edge)


# operators whose output values are their input's, unchanged (so is their type: `DataStream.get_type()`)
_PASS_THROUGH = (t.FilterSpec, t.TimestampsAndWatermarksSpec)


def _typed_inputs(tr: t.Transformation) -> list[tuple[int, int]]:
    if isinstance(tr, t.TwoInputTransformation):
        return [(1, tr.input1_id), (2, tr.input2_id)]
    return [(0, input_id) for input_id in tr.input_ids]


def _typed_operator(tr: OperatorTransformation) -> t.OperatorSpec:
    """The operator, its results shaped by its declared output type (the typing machinery loads only for jobs
    that declare types)."""
    output_type = getattr(tr, "output_type", None)
    if output_type is None:
        return tr.operator
    from fluvial.graph.typed_outputs import apply_output_type

    return apply_output_type(tr.operator, output_type, tr.name)


def build_stream_graph(
    *,
    transformations: dict[int, t.Transformation],
    sink_ids: list[int],
    job_name: str,
    default_parallelism: int,
    default_max_parallelism: int | None,
    chaining_enabled: bool,
    execution_config: Any = None,
    configuration: Any = None,
    fault_tolerance: Any = None,
    batch: bool = False,
) -> StreamGraph:
    """Translate everything the given sinks depend on; transformations no sink reaches are left out. `batch`:
    the job runs in BATCH execution mode (`fluvial.graph.batch_mode`)."""
    if default_parallelism < 1:
        raise InvalidJobError(f"default parallelism must be >= 1, got {default_parallelism}")
    translator = _Translator(transformations, default_parallelism, default_max_parallelism, batch)
    for sink_id in sorted(sink_ids):
        translator.translate(sink_id)
    nodes = dict(sorted(translator.nodes.items()))
    return StreamGraph(job_name, nodes, chaining_enabled, execution_config, configuration, fault_tolerance)


def stream_graph_of(pipeline: Any) -> StreamGraph:
    """The StreamGraph of a Pipeline (what `execute()` hands to an executor)."""
    return build_stream_graph(
        transformations=pipeline.transformations,
        sink_ids=list(pipeline.sink_ids),
        job_name=pipeline.job_name,
        default_parallelism=pipeline.default_parallelism,
        default_max_parallelism=pipeline.default_max_parallelism,
        chaining_enabled=pipeline.chaining_enabled,
        execution_config=pipeline.execution_config,
        configuration=pipeline.configuration,
        fault_tolerance=pipeline.fault_tolerance,
        batch=pipeline.batch,
    )
