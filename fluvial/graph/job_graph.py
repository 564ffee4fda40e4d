"""StreamGraph → JobGraph: operator chains become JobVertices; the edges between chains become JobEdges over
IntermediateDataSets. Also the slot arithmetic of DESIGN 2.2 (`required_slots`)."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.datastream.output_tag import OutputTag
from fluvial.datastream.transformations import PartitionerKind, PartitionerSpec
from fluvial.graph.chaining import ChainVerdict, chain_verdict
from fluvial.graph.stream_graph import StreamEdge, StreamGraph, StreamNode


class DistributionPattern(enum.Enum):
    POINTWISE = "POINTWISE"
    ALL_TO_ALL = "ALL_TO_ALL"


POINTWISE_KINDS = (PartitionerKind.FORWARD, PartitionerKind.RESCALE)


@dataclass(frozen=True)
class IntermediateDataSet:
    id: str
    producer_vertex_id: int


@dataclass
class JobEdge:
    source: int  # producing JobVertex id
    target: int  # consuming JobVertex id
    dataset: IntermediateDataSet
    distribution_pattern: DistributionPattern
    partitioner: PartitionerSpec
    type_number: int
    source_node_id: int
    target_node_id: int
    output_tag: OutputTag | None
    chain_break: ChainVerdict

    @property
    def ship_strategy(self) -> str:
        return self.partitioner.kind.value

    @property
    def edge_id(self) -> str:
        return self.dataset.id


@dataclass
class JobVertex:
    id: int
    name: str
    nodes: list[StreamNode]  # chained operators, depth-first from the head
    chained_edges: list[StreamEdge]
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    co_location_group: str | None
    inputs: list[JobEdge] = field(default_factory=list)
    outputs: list[JobEdge] = field(default_factory=list)

    @property
    def operator_ids(self) -> list[int]:
        return [node.id for node in self.nodes]

    @property
    def operator_names(self) -> list[str]:
        return [node.name for node in self.nodes]

    @property
    def head(self) -> StreamNode:
        return self.nodes[0]

    @property
    def is_source(self) -> bool:
        return self.head.is_source


@dataclass
class JobGraph:
    job_id: str
    job_name: str
    vertices: list[JobVertex]  # topologically ordered
    edges: list[JobEdge]
    execution_config: Any = None
    configuration: Any = None
    fault_tolerance: Any = None
    main_classes: bytes | None = None  # the script's classes, for TaskManager processes (cluster/code_shipping.py)
    python_environment: Any = None  # its JobPythonEnvironment, built by the cluster that runs it

    def vertex(self, vertex_id: int) -> JobVertex:
        for vertex in self.vertices:
            if vertex.id == vertex_id:
                return vertex
        raise KeyError(vertex_id)

    def slot_sharing_groups(self) -> dict[str, int]:
        """Each group's need: the highest parallelism among its vertices."""
        needs: dict[str, int] = {}
        for vertex in self.vertices:
            needs[vertex.slot_sharing_group] = max(needs.get(vertex.slot_sharing_group, 0), vertex.parallelism)
        return needs

    def required_slots(self) -> int:
        """Slots needed = sum over slot sharing groups of the group's highest parallelism (seed 002)."""
        return sum(self.slot_sharing_groups().values())


def build_job_graph(graph: StreamGraph, job_id: str | None = None) -> JobGraph:
    """Chains are built depth-first from each head, sources first in node-id order (DESIGN 2.1)."""
    node_to_vertex: dict[int, int] = {}
    vertices: list[JobVertex] = []
    breaks: list[tuple[StreamEdge, ChainVerdict]] = []
    heads = list(graph.source_ids)
    seen_heads: set[int] = set()
    while heads:
        head_id = heads.pop(0)
        if head_id in seen_heads:
            continue
        seen_heads.add(head_id)
        nodes, chained, outside = _collect_chain(graph, head_id)
        vertex = _make_vertex(len(vertices) + 1, nodes, chained)
        vertices.append(vertex)
        for node in nodes:
            node_to_vertex[node.id] = vertex.id
        for edge, verdict in outside:
            breaks.append((edge, verdict))
            heads.append(edge.target_id)
    edges = [_make_edge(edge, verdict, node_to_vertex) for edge, verdict in breaks]
    by_id = {vertex.id: vertex for vertex in vertices}
    for job_edge in edges:
        by_id[job_edge.source].outputs.append(job_edge)
        by_id[job_edge.target].inputs.append(job_edge)
    ordered = _topological(vertices)
    _check_co_location(ordered)
    return JobGraph(
        job_id=job_id or os.urandom(16).hex(),
        job_name=graph.job_name,
        vertices=ordered,
        edges=edges,
        execution_config=graph.execution_config,
        configuration=graph.configuration,
        fault_tolerance=graph.fault_tolerance,
    )


def _collect_chain(
    graph: StreamGraph, head_id: int
) -> tuple[list[StreamNode], list[StreamEdge], list[tuple[StreamEdge, ChainVerdict]]]:
    nodes: list[StreamNode] = []
    chained: list[StreamEdge] = []
    outside: list[tuple[StreamEdge, ChainVerdict]] = []

    def visit(node_id: int) -> None:
        node = graph.node(node_id)
        nodes.append(node)
        for edge in node.out_edges:
            verdict = chain_verdict(edge, graph)
            if verdict is ChainVerdict.CHAINABLE:
                chained.append(edge)
                visit(edge.target_id)
            else:
                outside.append((edge, verdict))

    visit(head_id)
    return nodes, chained, outside


def _make_vertex(vertex_id: int, nodes: list[StreamNode], chained: list[StreamEdge]) -> JobVertex:
    head = nodes[0]
    co_location = {node.co_location_group for node in nodes if node.co_location_group}
    if len(co_location) > 1:
        raise InvalidJobError(
            f"operators chained into '{head.name}' name different co-location groups {sorted(co_location)}: "
            "give them one group or break the chain with start_new_chain()"
        )
    return JobVertex(
        id=vertex_id,
        name=" -> ".join(node.name for node in nodes),
        nodes=nodes,
        chained_edges=chained,
        parallelism=head.parallelism,
        max_parallelism=head.max_parallelism,
        slot_sharing_group=head.slot_sharing_group,
        co_location_group=co_location.pop() if co_location else None,
    )


def _make_edge(edge: StreamEdge, verdict: ChainVerdict, node_to_vertex: dict[int, int]) -> JobEdge:
    source_vertex = node_to_vertex[edge.source_id]
    pattern = (
        DistributionPattern.POINTWISE if edge.partitioner.kind in POINTWISE_KINDS else DistributionPattern.ALL_TO_ALL
    )
    return JobEdge(
        source=source_vertex,
        target=node_to_vertex[edge.target_id],
        dataset=IntermediateDataSet(edge.edge_id, source_vertex),
        distribution_pattern=pattern,
        partitioner=edge.partitioner,
        type_number=edge.type_number,
        source_node_id=edge.source_id,
        target_node_id=edge.target_id,
        output_tag=edge.output_tag,
        chain_break=verdict,
    )


def _topological(vertices: list[JobVertex]) -> list[JobVertex]:
    """Producers before consumers; among ready vertices, creation order (sources first)."""
    remaining = {vertex.id: len({edge.source for edge in vertex.inputs}) for vertex in vertices}
    by_id = {vertex.id: vertex for vertex in vertices}
    ordered: list[JobVertex] = []
    ready = [vertex.id for vertex in vertices if remaining[vertex.id] == 0]
    while ready:
        ready.sort()
        vertex = by_id[ready.pop(0)]
        ordered.append(vertex)
        for consumer in sorted({edge.target for edge in vertex.outputs}):
            remaining[consumer] -= 1
            if remaining[consumer] == 0:
                ready.append(consumer)
    if len(ordered) != len(vertices):
        raise InvalidJobError("the job graph has a cycle; iterations are not supported")
    return ordered


def _check_co_location(vertices: list[JobVertex]) -> None:
    groups: dict[str, JobVertex] = {}
    for vertex in vertices:
        key = vertex.co_location_group
        if key is None:
            continue
        first = groups.setdefault(key, vertex)
        if (first.slot_sharing_group, first.parallelism) != (vertex.slot_sharing_group, vertex.parallelism):
            raise InvalidJobError(
                f"co-location group '{key}' joins '{first.name}' (group {first.slot_sharing_group}, parallelism "
                f"{first.parallelism}) and '{vertex.name}' (group {vertex.slot_sharing_group}, parallelism "
                f"{vertex.parallelism}): co-located operators need one slot sharing group and one parallelism"
            )
