"""StreamGraph: one StreamNode per operator, one StreamEdge per connection (virtual partition, union and
side-output transformations have become edge properties). Also renders Flink's JSON execution plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fluvial.datastream.output_tag import OutputTag
from fluvial.datastream.transformations import ChainingStrategy, ExchangeMode, OperatorSpec, PartitionerSpec


@dataclass
class StreamEdge:
    source_id: int
    target_id: int
    type_number: int  # 0 for one-input operators; 1 or 2 for the inputs of a two-input operator
    partitioner: PartitionerSpec
    exchange_mode: ExchangeMode = ExchangeMode.UNDEFINED
    output_tag: OutputTag | None = None
    # Tells apart parallel edges between the same two nodes (a stream unioned with itself), as Flink's
    # StreamEdge.uniqueId does (FLINK-25199): without it their datasets and channels would share one id.
    unique_id: int = 0

    @property
    def edge_id(self) -> str:
        tag = f"_{self.output_tag.tag_id}" if self.output_tag else ""
        unique = f"_#{self.unique_id}" if self.unique_id else ""
        return f"{self.source_id}_{self.target_id}_{self.type_number}{tag}{unique}"


@dataclass
class StreamNode:
    id: int
    name: str
    type_name: str
    operator: OperatorSpec
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    chaining_strategy: ChainingStrategy
    is_source: bool = False
    is_sink: bool = False
    co_location_group: str | None = None
    uid: str | None = None
    description: str | None = None
    output_type: Any = None
    output_type_origin: str | None = None  # the operator that made values of that type (misfits name it)
    in_edges: list[StreamEdge] = field(default_factory=list)
    out_edges: list[StreamEdge] = field(default_factory=list)

    @property
    def operator_id(self) -> str:
        """The id that matches an operator's state across runs: its uid, else its position in the job."""
        return self.uid or f"node-{self.id}"

    @property
    def pact(self) -> str:
        return "Data Source" if self.is_source else "Data Sink" if self.is_sink else "Operator"


@dataclass
class StreamGraph:
    job_name: str
    nodes: dict[int, StreamNode]
    chaining_enabled: bool
    execution_config: Any = None
    configuration: Any = None
    fault_tolerance: Any = None  # FaultTolerance: checkpoints, state backend, restarts, savepoint to restore

    @property
    def edges(self) -> list[StreamEdge]:
        return [edge for node in self.nodes.values() for edge in node.out_edges]

    @property
    def source_ids(self) -> list[int]:
        return sorted(node_id for node_id, node in self.nodes.items() if node.is_source)

    def node(self, node_id: int) -> StreamNode:
        return self.nodes[node_id]

    def to_execution_plan_json(self) -> str:
        """Flink's execution-plan JSON: what `env.get_execution_plan()` returns and the Flink visualizer reads."""
        import json

        plan = []
        for node in sorted(self.nodes.values(), key=lambda n: n.id):
            entry: dict[str, Any] = {
                "id": node.id,
                "type": node.type_name,
                "pact": node.pact,
                "contents": node.name,
                "parallelism": node.parallelism,
            }
            if node.in_edges:
                entry["predecessors"] = [
                    {"id": e.source_id, "ship_strategy": e.partitioner.kind.value, "side": "second"}
                    for e in node.in_edges
                ]
            plan.append(entry)
        return json.dumps({"nodes": plan}, indent=2)
