"""Transformations → StreamGraph (virtual transformations become edge properties) and the JSON execution plan."""

from __future__ import annotations

import json

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import OutputTag
from fluvial.datastream.transformations import ChainingStrategy, PartitionerKind
from fluvial.graph.translate import build_stream_graph
from tests.unit.graph.plans import (
    identity,
    keep,
    new_env,
    nid,
    numbers,
    stream_edge,
    stream_edges,
)


class CoIdentity:
    def map1(self, value):
        return value

    def map2(self, value):
        return value


def plan_of(env) -> dict[int, dict]:
    plan = json.loads(env.get_execution_plan())
    assert list(plan) == ["nodes"]
    return {node["id"]: node for node in plan["nodes"]}


# -- nodes and edges ----------------------------------------------------------------------------------------------


def test_virtual_transformations_produce_no_nodes() -> None:
    tag = OutputTag("late")
    env = new_env(2)
    source = numbers(env)
    processed = source.rebalance().process(lambda value, ctx: [value])
    keyed = processed.key_by(identity).reduce(lambda a, b: a + b)
    merged = keyed.union(processed.get_side_output(tag)).map(identity)
    sink = merged.print()
    graph = env.get_stream_graph()
    assert sorted(graph.nodes) == sorted(nid(h) for h in (source, processed, keyed, merged, sink))
    assert [n.name for n in graph.nodes.values()] == [
        "Source: numbers",
        "Process",
        "Keyed Reduce",
        "Map",
        "Print to Std. Out",
    ]
    assert stream_edge(graph, source, processed).partitioner.kind is PartitionerKind.REBALANCE
    assert stream_edge(graph, processed, keyed).partitioner.kind is PartitionerKind.HASH
    side = [e for e in stream_edges(graph, processed, merged)]
    assert [(e.output_tag, e.partitioner.kind) for e in side] == [(tag, PartitionerKind.FORWARD)]
    assert stream_edge(graph, keyed, merged).output_tag is None


def test_edges_are_registered_on_both_ends() -> None:
    env = new_env(2)
    source = numbers(env)
    source.map(identity).filter(keep).print()
    graph = env.get_stream_graph()
    for edge in graph.edges:
        assert edge in graph.node(edge.source_id).out_edges
        assert edge in graph.node(edge.target_id).in_edges
    assert len(graph.edges) == 3
    assert graph.source_ids == [nid(source)]


def test_the_later_partitioning_wins() -> None:
    env = new_env(2)
    source = numbers(env)
    mapped = source.rebalance().shuffle().map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    assert stream_edge(graph, source, mapped).partitioner.kind is PartitionerKind.SHUFFLE


def test_a_partition_on_a_union_applies_to_every_input() -> None:
    env = new_env(2)
    first, second = numbers(env, name="a"), numbers(env, name="b")
    mapped = first.union(second).rescale().map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    kinds = [e.partitioner.kind for e in graph.node(nid(mapped)).in_edges]
    assert kinds == [PartitionerKind.RESCALE, PartitionerKind.RESCALE]


def test_connect_edges_carry_input_type_numbers() -> None:
    env = new_env(2)
    first, second = numbers(env, name="a"), numbers(env, name="b")
    co_mapped = first.connect(second).map(CoIdentity())
    co_mapped.print()
    graph = env.get_stream_graph()
    assert stream_edge(graph, first, co_mapped).type_number == 1
    assert stream_edge(graph, second, co_mapped).type_number == 2
    assert stream_edge(graph, first, co_mapped).edge_id == f"{nid(first)}_{nid(co_mapped)}_1"


def test_union_edges_have_type_number_zero() -> None:
    env = new_env(2)
    first, second = numbers(env, name="a"), numbers(env, name="b")
    mapped = first.union(second).map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    assert [e.type_number for e in graph.node(nid(mapped)).in_edges] == [0, 0]


def test_self_union_edges_have_distinct_ids() -> None:
    env = new_env(2)
    source = numbers(env)
    mapped = source.union(source).map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    edges = stream_edges(graph, source, mapped)
    assert len(edges) == 2
    assert edges[0].edge_id == f"{nid(source)}_{nid(mapped)}_0"
    assert edges[1].edge_id != edges[0].edge_id


def test_transformations_no_sink_reaches_are_left_out() -> None:
    env = new_env(2)
    source = numbers(env)
    dangling = source.map(identity).name("dangling")
    source.filter(keep).print()
    graph = env.get_stream_graph()
    assert nid(dangling) not in graph.nodes
    assert [n.name for n in graph.nodes.values()] == ["Source: numbers", "Filter", "Print to Std. Out"]


def test_flags_of_sources_and_sinks() -> None:
    env = new_env(2)
    source = numbers(env)
    mapped = source.map(identity)
    sink = mapped.print()
    graph = env.get_stream_graph()
    assert [(graph.node(nid(h)).is_source, graph.node(nid(h)).is_sink) for h in (source, mapped, sink)] == [
        (True, False),
        (False, False),
        (False, True),
    ]
    assert graph.node(nid(source)).chaining_strategy is ChainingStrategy.HEAD
    assert graph.node(nid(mapped)).chaining_strategy is ChainingStrategy.ALWAYS


def test_parallelism_resolution() -> None:
    env = new_env(3)
    fixed = env.from_collection([1, 2])
    default = fixed.map(identity)
    explicit = default.map(identity).set_parallelism(5)
    explicit.print()
    graph = env.get_stream_graph()
    assert [graph.node(nid(h)).parallelism for h in (fixed, default, explicit)] == [1, 3, 5]


@pytest.mark.parametrize(("parallelism", "expected"), [(1, 128), (85, 128), (86, 256), (200, 512)])
def test_default_max_parallelism(parallelism, expected) -> None:
    env = new_env(parallelism)
    numbers(env).print()
    assert {n.max_parallelism for n in env.get_stream_graph().nodes.values()} == {expected}


def test_names_uids_and_descriptions_reach_the_nodes() -> None:
    env = new_env(2)
    mapped = numbers(env).map(identity).name("double").uid("double-uid").set_description("doubles")
    mapped.print()
    node = env.get_stream_graph().node(nid(mapped))
    assert (node.name, node.type_name, node.uid, node.description) == ("double", "Map", "double-uid", "doubles")


def test_job_name_and_chaining_flag() -> None:
    env = new_env(2)
    numbers(env).print()
    assert env.get_stream_graph("named").job_name == "named"
    assert env.get_stream_graph().chaining_enabled is True
    env.disable_operator_chaining()
    assert env.get_stream_graph().chaining_enabled is False


def test_build_stream_graph_refuses_a_default_parallelism_of_zero() -> None:
    with pytest.raises(InvalidJobError, match="got 0"):
        build_stream_graph(
            transformations={},
            sink_ids=[],
            job_name="j",
            default_parallelism=0,
            default_max_parallelism=None,
            chaining_enabled=True,
        )


# -- the JSON execution plan --------------------------------------------------------------------------------------


def test_execution_plan_json_fields() -> None:
    env = new_env(2)
    source = numbers(env, 4)
    doubled = source.map(identity).name("double")
    keyed = doubled.key_by(identity).reduce(lambda a, b: a + b)
    rebalanced = keyed.rebalance().map(identity).set_parallelism(3)
    sink = rebalanced.print()
    plan = plan_of(env)
    assert list(plan) == [nid(h) for h in (source, doubled, keyed, rebalanced, sink)]
    assert plan[nid(source)] == {
        "id": nid(source),
        "type": "Source: numbers",
        "pact": "Data Source",
        "contents": "Source: numbers",
        "parallelism": 4,
    }
    assert "predecessors" not in plan[nid(source)]
    assert plan[nid(doubled)]["type"] == "Map"
    assert plan[nid(doubled)]["contents"] == "double"
    assert plan[nid(doubled)]["parallelism"] == 2
    assert [plan[nid(h)]["pact"] for h in (doubled, keyed, rebalanced)] == ["Operator"] * 3
    assert plan[nid(sink)]["pact"] == "Data Sink"
    strategies = {
        node_id: [(p["id"], p["ship_strategy"]) for p in node.get("predecessors", [])] for node_id, node in plan.items()
    }
    assert strategies == {
        nid(source): [],
        nid(doubled): [(nid(source), "REBALANCE")],
        nid(keyed): [(nid(doubled), "HASH")],
        nid(rebalanced): [(nid(keyed), "REBALANCE")],
        nid(sink): [(nid(rebalanced), "REBALANCE")],
    }


def test_execution_plan_lists_every_input() -> None:
    env = new_env(2)
    first, second, third = numbers(env, name="a"), numbers(env, name="b"), numbers(env, name="c")
    unioned = first.union(second).map(identity)
    co_mapped = unioned.connect(third.broadcast()).map(CoIdentity())
    co_mapped.print()
    plan = plan_of(env)
    assert [p["id"] for p in plan[nid(unioned)]["predecessors"]] == [nid(first), nid(second)]
    predecessors = plan[nid(co_mapped)]["predecessors"]
    assert [(p["id"], p["ship_strategy"]) for p in predecessors] == [
        (nid(unioned), "FORWARD"),
        (nid(third), "BROADCAST"),
    ]
    assert plan[nid(co_mapped)]["type"] == "Co-Map"
    # Flink's JSONGenerator adds the input before asking the array's size, so every side reads "second".
    assert {p["side"] for p in predecessors} == {"second"}


def test_execution_plan_does_not_consume_the_sinks() -> None:
    env = new_env(2)
    numbers(env).print()
    assert env.get_execution_plan() == env.get_execution_plan()
    assert len(env.get_job_graph().vertices) == 1
