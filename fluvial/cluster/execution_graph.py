"""ExecutionGraph: the JobGraph expanded to subtasks — one ExecutionVertex per subtask, each with its current
attempt and that attempt's ExecutionState — and the channels between them wired.

For each JobEdge, producer subtask i writes to consumer subtask j over ChannelId(dataset, i, j, attempt): all
pairs for ALL_TO_ALL, Flink's pointwise blocks for POINTWISE. Each subtask attempt becomes a TaskSpec (Flink's
deployment descriptor) that a TaskManager can run. The graph is owned by the scheduler, on the JobMaster's
thread: nothing here locks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fluvial.graph.job_graph import DistributionPattern, JobEdge, JobGraph, JobVertex
from fluvial.graph.partitioners import pointwise_targets
from fluvial.runtime.channels import ChannelId
from fluvial.runtime.deployment import (
    BufferDebloatSettings,
    ExecutionAttemptId,
    InputSpec,
    OutputSpec,
    TaskCancellationSettings,
    TaskSpec,
)
from fluvial.runtime.execution_state import ExecutionState, IllegalExecutionStateTransition, checked_transition

if TYPE_CHECKING:
    from fluvial.checkpoint.snapshots import RestoreAssignment

ExecutionVertexId = tuple[int, int]
"""(vertex id, subtask index): names a subtask across its attempts (the checkpoint coordinator's task id)."""


@dataclass(slots=True)
class ExecutionVertex:
    """One subtask of a JobVertex: its current attempt and that attempt's state (guarded transitions)."""

    job_vertex: JobVertex
    subtask_index: int
    attempt: int = 0
    state: ExecutionState = ExecutionState.CREATED

    @property
    def id(self) -> ExecutionVertexId:
        return (self.job_vertex.id, self.subtask_index)

    @property
    def name(self) -> str:
        return f"{self.job_vertex.name} ({self.subtask_index + 1}/{self.job_vertex.parallelism})"

    def transition(self, target: ExecutionState) -> None:
        """Move the current attempt to `target`; IllegalExecutionStateTransition names both states if it may not."""
        self.state = checked_transition(self.state, target, f"subtask {self.name} attempt {self.attempt}")

    def reset_for_new_attempt(self) -> None:
        """A restart: the next attempt starts CREATED. Only an attempt that has ended may be replaced."""
        if not self.state.is_terminal:
            raise IllegalExecutionStateTransition(
                f"subtask {self.name} cannot start a new attempt: attempt {self.attempt} is still {self.state.value}"
            )
        self.attempt += 1
        self.state = ExecutionState.CREATED


def consumers_of(edge: JobEdge, producer_index: int, producers: int, consumers: int) -> list[int]:
    if edge.distribution_pattern is DistributionPattern.ALL_TO_ALL:
        return list(range(consumers))
    return pointwise_targets(producer_index, producers, consumers)


class ExecutionGraph:
    def __init__(self, job_graph: JobGraph, job_parameters: dict[str, str] | None = None) -> None:
        self.job_graph = job_graph
        self._by_id = {vertex.id: vertex for vertex in job_graph.vertices}
        self._edge_source = {edge.edge_id: edge.source for edge in job_graph.edges}
        self._edge_target = {edge.edge_id: edge.target for edge in job_graph.edges}
        self._job_parameters = job_parameters or {}
        tolerance = job_graph.fault_tolerance
        self._state_backend = tolerance.state_backend if tolerance is not None else None
        config = job_graph.execution_config
        self._auto_watermark_interval = config.get_auto_watermark_interval() if config is not None else 200
        configuration = job_graph.configuration
        self._metrics_interval = (
            configuration.get("metrics.fetcher.update-interval") if configuration is not None else 1000
        )
        self._cancellation = TaskCancellationSettings.of(job_graph.configuration)
        self._buffer_debloat = BufferDebloatSettings.of(job_graph.configuration)
        self.vertices: dict[ExecutionVertexId, ExecutionVertex] = {
            (vertex.id, index): ExecutionVertex(vertex, index)
            for vertex in job_graph.vertices
            for index in range(vertex.parallelism)
        }

    @property
    def job_id(self) -> str:
        return self.job_graph.job_id

    def __iter__(self) -> Iterator[ExecutionVertex]:
        return iter(self.vertices.values())

    def vertex(self, vertex_id: int, subtask_index: int) -> ExecutionVertex | None:
        return self.vertices.get((vertex_id, subtask_index))

    def current(self, attempt_id: ExecutionAttemptId) -> ExecutionVertex | None:
        """The subtask of `attempt_id` if that attempt is its current one; None for a late word from an earlier
        attempt (or another job)."""
        execution = self.vertices.get(attempt_id.execution_vertex_id)
        if execution is None or execution.attempt != attempt_id.attempt or attempt_id.job_id != self.job_id:
            return None
        return execution

    def attempt_id(self, execution: ExecutionVertex) -> ExecutionAttemptId:
        """The ExecutionAttemptId of `execution`'s current attempt."""
        return ExecutionAttemptId(self.job_id, execution.job_vertex.id, execution.subtask_index, execution.attempt)

    def all_in(self, *states: ExecutionState) -> bool:
        return all(vertex.state in states for vertex in self.vertices.values())

    def all_terminal(self) -> bool:
        return all(vertex.state.is_terminal for vertex in self.vertices.values())

    def in_state(self, state: ExecutionState) -> list[ExecutionVertex]:
        return [vertex for vertex in self.vertices.values() if vertex.state is state]

    def producers_of(self, execution: ExecutionVertex) -> list[ExecutionVertex]:
        """The upstream subtasks whose output channels feed `execution` (every one for ALL_TO_ALL edges, the
        pointwise block for POINTWISE ones)."""
        vertex, index = execution.job_vertex, execution.subtask_index
        producers: list[ExecutionVertex] = []
        for edge in vertex.inputs:
            producer = self._by_id[edge.source]
            producers.extend(
                self.vertices[(producer.id, i)]
                for i in range(producer.parallelism)
                if index in consumers_of(edge, i, producer.parallelism, vertex.parallelism)
            )
        return producers

    def deployment_order(self) -> list[ExecutionVertex]:
        """Consumers before producers, so no producer's first buffer waits on a consumer not yet deployed."""
        return [self.vertices[(v.id, i)] for v in reversed(self.job_graph.vertices) for i in range(v.parallelism)]

    def task_spec(
        self,
        execution: ExecutionVertex,
        checkpointing: Any = None,
        restore: dict[str, RestoreAssignment] | None = None,
        function_templates: dict[int, Any] | None = None,
        receiver_settings: Any = None,
    ) -> TaskSpec:
        vertex, index, attempt = execution.job_vertex, execution.subtask_index, execution.attempt
        return TaskSpec(
            job_id=self.job_id,
            vertex=vertex,
            subtask_index=index,
            attempt=attempt,
            inputs=self._inputs(vertex, index, attempt),
            outputs=[self._output(edge, index, attempt) for edge in vertex.outputs],
            job_parameters=self._job_parameters,
            auto_watermark_interval=self._auto_watermark_interval,
            checkpointing=checkpointing,
            restore=restore,
            function_templates=_own_templates(vertex, function_templates),
            state_backend=self._state_backend,
            receiver_settings=receiver_settings if vertex.is_source else None,
            main_classes=self.job_graph.main_classes,
            job_name=self.job_graph.job_name,
            metrics_interval_ms=self._metrics_interval,
            cancellation=self._cancellation,
            buffer_debloat=self._buffer_debloat,
            python_environment=self.job_graph.python_environment,
        )

    def channel_peers(self, spec: TaskSpec) -> dict[ChannelId, ExecutionVertexId]:
        """For every channel of `spec`, the subtask at its other end."""
        peers: dict[ChannelId, ExecutionVertexId] = {}
        for output in spec.outputs:
            target = self._edge_target[output.dataset_id]
            for channel_id in output.channel_ids:
                peers[channel_id] = (target, channel_id.consumer_index)
        for input_spec in spec.inputs:
            channel_id = input_spec.channel_id
            peers[channel_id] = (self._edge_source[channel_id.dataset_id], channel_id.producer_index)
        return peers

    def _output(self, edge: JobEdge, producer_index: int, attempt: int) -> OutputSpec:
        producer, consumer = self._by_id[edge.source], self._by_id[edge.target]
        targets = consumers_of(edge, producer_index, producer.parallelism, consumer.parallelism)
        return OutputSpec(
            dataset_id=edge.edge_id,
            partitioner=edge.partitioner,
            channel_ids=tuple(ChannelId(edge.edge_id, producer_index, j, attempt, self.job_id) for j in targets),
            consumer_max_parallelism=consumer.max_parallelism,
            consumer_parallelism=consumer.parallelism,
        )

    def _inputs(self, vertex: JobVertex, consumer_index: int, attempt: int) -> list[InputSpec]:
        inputs = []
        for edge in vertex.inputs:
            producer = self._by_id[edge.source]
            for i in range(producer.parallelism):
                if consumer_index in consumers_of(edge, i, producer.parallelism, vertex.parallelism):
                    inputs.append(
                        InputSpec(ChannelId(edge.edge_id, i, consumer_index, attempt, self.job_id), edge.type_number)
                    )
        return inputs


def _own_templates(vertex: JobVertex, templates: dict[int, Any] | None) -> dict[int, Any] | None:
    """The pristine functions of `vertex`'s operators only: a subtask never needs another vertex's, and each
    one travels to the TaskManager (in process mode, pickled) with every deployment."""
    if templates is None:
        return None
    return {node.id: templates[node.id] for node in vertex.nodes if node.id in templates}
