"""ExecutionGraph: one ExecutionVertex per subtask with guarded state transitions, consumers deployed before
producers, and TaskSpecs whose channel ids pair the right subtasks and carry the attempt."""

from __future__ import annotations

import pytest

from fluvial.cluster.execution_graph import ExecutionGraph
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.runtime.channels import ChannelId
from fluvial.runtime.execution_state import ExecutionState, IllegalExecutionStateTransition


def graph_of(describe, parallelism: int = 2) -> ExecutionGraph:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    env.get_config().set_global_job_parameters({"threshold": "7"})
    env.get_config().set_auto_watermark_interval(50)
    describe(env)
    return ExecutionGraph(env.get_job_graph(), {"threshold": "7"})


def numbers(env, parallelism: int):
    return env.from_source(NumberSequenceSource(1, 10)).set_parallelism(parallelism)


def source_rebalance_map(env) -> None:
    env.from_collection([1]).set_parallelism(1).name("src").rebalance().map(lambda v: v).set_parallelism(3).name(
        "map"
    ).add_sink(lambda v: None).set_parallelism(3)


def test_one_execution_vertex_per_subtask_starting_created() -> None:
    graph = graph_of(source_rebalance_map)
    names = sorted(execution.name for execution in graph)
    assert len(names) == 4 and all(e.state is ExecutionState.CREATED and e.attempt == 0 for e in graph)
    assert graph.all_in(ExecutionState.CREATED) and not graph.all_terminal()
    source = graph.job_graph.vertices[0]
    assert graph.vertex(source.id, 0).name == "src (1/1)" and graph.vertex(source.id, 1) is None


def test_a_legal_transition_moves_and_an_illegal_one_names_both_states() -> None:
    execution = next(iter(graph_of(source_rebalance_map)))
    execution.transition(ExecutionState.DEPLOYING)
    execution.transition(ExecutionState.RUNNING)
    with pytest.raises(IllegalExecutionStateTransition) as info:
        execution.transition(ExecutionState.DEPLOYING)
    message = str(info.value)
    assert execution.name in message and "attempt 0" in message
    assert "from RUNNING to DEPLOYING" in message and "it may go to CANCELED, CANCELING, FAILED, FINISHED" in message
    assert execution.state is ExecutionState.RUNNING


def test_a_new_attempt_replaces_only_an_ended_one() -> None:
    execution = next(iter(graph_of(source_rebalance_map)))
    execution.transition(ExecutionState.DEPLOYING)
    with pytest.raises(IllegalExecutionStateTransition, match="attempt 0 is still DEPLOYING"):
        execution.reset_for_new_attempt()
    execution.transition(ExecutionState.FAILED)
    with pytest.raises(IllegalExecutionStateTransition, match="it may go to nothing: it has ended"):
        execution.transition(ExecutionState.RUNNING)
    execution.reset_for_new_attempt()
    assert (execution.attempt, execution.state) == (1, ExecutionState.CREATED)


def test_consumers_are_deployed_before_their_producers() -> None:
    graph = graph_of(source_rebalance_map)
    order = [(e.job_vertex.name, e.subtask_index) for e in graph.deployment_order()]
    map_vertex, source_vertex = graph.job_graph.vertices[1].name, graph.job_graph.vertices[0].name
    assert order == [(map_vertex, 0), (map_vertex, 1), (map_vertex, 2), (source_vertex, 0)]


def test_all_to_all_specs_connect_every_producer_with_every_consumer() -> None:
    graph = graph_of(
        lambda env: (
            numbers(env, 2).rebalance().map(lambda v: v).set_parallelism(3).add_sink(lambda v: None).set_parallelism(3)
        )
    )
    source, mapper = graph.job_graph.vertices
    (edge,) = source.outputs
    producer_spec = graph.task_spec(graph.vertex(source.id, 1))
    (output,) = producer_spec.outputs
    job = graph.job_id  # channels name their job: a session cluster's TaskManagers run several jobs
    assert output.channel_ids == tuple(ChannelId(edge.edge_id, 1, j, 0, job) for j in range(3))
    assert (output.consumer_parallelism, output.consumer_max_parallelism) == (3, mapper.max_parallelism)
    consumer_spec = graph.task_spec(graph.vertex(mapper.id, 2))
    assert [i.channel_id for i in consumer_spec.inputs] == [ChannelId(edge.edge_id, p, 2, 0, job) for p in range(2)]
    assert {i.type_number for i in consumer_spec.inputs} == {0}


def test_rescale_connects_each_producer_to_its_own_block_of_consumers() -> None:
    graph = graph_of(
        lambda env: (
            numbers(env, 2).rescale().map(lambda v: v).set_parallelism(4).add_sink(lambda v: None).set_parallelism(4)
        )
    )
    source, mapper = graph.job_graph.vertices
    targets = [
        [c.consumer_index for c in graph.task_spec(graph.vertex(source.id, p)).outputs[0].channel_ids] for p in range(2)
    ]
    assert targets == [[0, 1], [2, 3]]
    sources_of = [
        [i.channel_id.producer_index for i in graph.task_spec(graph.vertex(mapper.id, c)).inputs] for c in range(4)
    ]
    assert sources_of == [[0], [0], [1], [1]]


def test_channel_ids_carry_the_attempt_so_a_restarted_job_never_meets_old_channels() -> None:
    graph = graph_of(source_rebalance_map)
    for execution in graph:
        execution.transition(ExecutionState.CANCELED)
        execution.reset_for_new_attempt()
    source = graph.job_graph.vertices[0]
    spec = graph.task_spec(graph.vertex(source.id, 0))
    assert spec.attempt == 1 and all(c.attempt == 1 for c in spec.outputs[0].channel_ids)
    consumer = graph.task_spec(graph.vertex(graph.job_graph.vertices[1].id, 0))
    assert all(i.channel_id.attempt == 1 for i in consumer.inputs)


def test_a_task_spec_carries_what_its_task_needs() -> None:
    graph = graph_of(source_rebalance_map)
    source, mapper = graph.job_graph.vertices
    settings, restore, templates = object(), {"op": "assignment"}, {1: "template"}
    spec = graph.task_spec(graph.vertex(source.id, 0), settings, restore, templates, "receiver settings")
    assert (spec.job_id, spec.vertex, spec.subtask_index) == (graph.job_id, source, 0)
    assert spec.job_parameters == {"threshold": "7"} and spec.auto_watermark_interval == 50
    assert (spec.checkpointing, spec.restore, spec.function_templates) == (settings, restore, templates)
    assert spec.receiver_settings == "receiver settings" and spec.execution_key == (source.id, 0)
    assert graph.task_spec(graph.vertex(mapper.id, 0), receiver_settings="x").receiver_settings is None, (
        "only source subtasks read receivers"
    )
