"""ExecutionGraph: the JobGraph expanded to subtasks, with the channels between them wired.

For each JobEdge, producer subtask i writes to consumer subtask j over ChannelId(dataset, i, j): all pairs for
ALL_TO_ALL, Flink's pointwise blocks for POINTWISE. Each subtask becomes a TaskSpec a TaskManager can run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fluvial.graph.job_graph import DistributionPattern, JobEdge, JobGraph, JobVertex
from fluvial.graph.partitioners import pointwise_targets
from fluvial.runtime.channels import ChannelId
from fluvial.runtime.task import TaskSpec
from fluvial.runtime.writer import InputSpec, OutputSpec


@dataclass(frozen=True, slots=True)
class ExecutionVertexId:
    vertex_id: int
    subtask_index: int


def consumers_of(edge: JobEdge, producer_index: int, producers: int, consumers: int) -> list[int]:
    if edge.distribution_pattern is DistributionPattern.ALL_TO_ALL:
        return list(range(consumers))
    return pointwise_targets(producer_index, producers, consumers)


class ExecutionGraph:
    def __init__(self, job_graph: JobGraph, job_parameters: dict[str, str] | None = None) -> None:
        self.job_graph = job_graph
        self._by_id = {vertex.id: vertex for vertex in job_graph.vertices}
        self._job_parameters = job_parameters or {}
        tolerance = job_graph.fault_tolerance
        self._state_backend = tolerance.state_backend if tolerance is not None else None
        config = job_graph.execution_config
        self._auto_watermark_interval = config.get_auto_watermark_interval() if config is not None else 200

    @property
    def job_id(self) -> str:
        return self.job_graph.job_id

    def subtasks(self) -> list[ExecutionVertexId]:
        return [ExecutionVertexId(v.id, i) for v in self.job_graph.vertices for i in range(v.parallelism)]

    def task_spec(self, vertex: JobVertex, subtask_index: int, attempt: int = 0, checkpointing: Any = None,
                  restore: dict | None = None, function_templates: dict | None = None) -> TaskSpec:
        return TaskSpec(
            job_id=self.job_id,
            vertex=vertex,
            subtask_index=subtask_index,
            attempt=attempt,
            inputs=self._inputs(vertex, subtask_index),
            outputs=[self._output(edge, subtask_index) for edge in vertex.outputs],
            job_parameters=self._job_parameters,
            auto_watermark_interval=self._auto_watermark_interval,
            checkpointing=checkpointing,
            restore=restore,
            function_templates=function_templates,
            state_backend=self._state_backend,
        )

    def _output(self, edge: JobEdge, producer_index: int) -> OutputSpec:
        producer, consumer = self._by_id[edge.source], self._by_id[edge.target]
        targets = consumers_of(edge, producer_index, producer.parallelism, consumer.parallelism)
        return OutputSpec(
            dataset_id=edge.edge_id,
            partitioner=edge.partitioner,
            channel_ids=tuple(ChannelId(edge.edge_id, producer_index, j) for j in targets),
            consumer_max_parallelism=consumer.max_parallelism,
            consumer_parallelism=consumer.parallelism,
        )

    def _inputs(self, vertex: JobVertex, consumer_index: int) -> list[InputSpec]:
        inputs = []
        for edge in vertex.inputs:
            producer = self._by_id[edge.source]
            for i in range(producer.parallelism):
                if consumer_index in consumers_of(edge, i, producer.parallelism, vertex.parallelism):
                    inputs.append(InputSpec(ChannelId(edge.edge_id, i, consumer_index), edge.type_number))
        return inputs
