"""StreamGraph → JobGraph (DESIGN 2.1, 2.2): chains become vertices, the rest become JobEdges; slot arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import OutputTag, SlotSharingGroup
from fluvial.graph.chaining import ChainVerdict, chain_verdict
from fluvial.graph.job_graph import DistributionPattern, build_job_graph
from tests.unit.graph.plans import (
    identity,
    job_edge,
    keep,
    new_env,
    nid,
    numbers,
    random_jobs,
    vertex_of,
)

# -- seed examples ------------------------------------------------------------------------------------------------


def test_source_map_filter_of_equal_parallelism_is_one_vertex() -> None:
    env = new_env(4)
    numbers(env, 4).map(identity).set_parallelism(4).filter(keep).set_parallelism(4).print()
    job_graph = env.get_job_graph()
    assert [v.name for v in job_graph.vertices] == ["Source: numbers -> Map -> Filter -> Print to Std. Out"]
    assert job_graph.edges == []
    assert job_graph.vertices[0].parallelism == 4


def test_source_map_filter_is_one_vertex_when_the_sink_stands_apart() -> None:
    env = new_env(4)
    filtered = numbers(env, 4).map(identity).filter(keep)
    sink = filtered.print().set_parallelism(1)
    job_graph = env.get_job_graph()
    assert [v.name for v in job_graph.vertices] == ["Source: numbers -> Map -> Filter", "Print to Std. Out"]
    edge = job_edge(job_graph, filtered, sink)
    assert edge.ship_strategy == "REBALANCE"
    assert edge.chain_break is ChainVerdict.NOT_FORWARD


def test_source_2_map_4_is_two_vertices_over_rebalance() -> None:
    env = new_env(4)
    source = numbers(env, 2)
    mapped = source.map(identity).set_parallelism(4)
    mapped.print()
    job_graph = env.get_job_graph()
    assert [(v.operator_names, v.parallelism) for v in job_graph.vertices] == [
        (["Source: numbers"], 2),
        (["Map", "Print to Std. Out"], 4),
    ]
    (edge,) = job_graph.edges
    assert (edge.source_node_id, edge.target_node_id) == (nid(source), nid(mapped))
    assert edge.ship_strategy == "REBALANCE"
    assert edge.distribution_pattern is DistributionPattern.ALL_TO_ALL
    assert (edge.source, edge.target) == (job_graph.vertices[0].id, job_graph.vertices[1].id)


def test_two_sources_union_map_do_not_chain() -> None:
    env = new_env(2)
    first, second = numbers(env, name="one"), numbers(env, name="two")
    mapped = first.union(second).map(identity)
    mapped.print()
    job_graph = env.get_job_graph()
    assert len(job_graph.vertices) == 3
    breaks = {(e.source_node_id, e.target_node_id): e.chain_break for e in job_graph.edges}
    assert breaks == {
        (nid(first), nid(mapped)): ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS,
        (nid(second), nid(mapped)): ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS,
    }
    assert vertex_of(job_graph, mapped).operator_names == ["Map", "Print to Std. Out"]


def seed_002_env():
    env = new_env(1)
    (
        env.from_collection(["a", "b"])
        .map(identity)
        .filter(keep)
        .slot_sharing_group("group_03")
        .map(identity)
        .filter(keep)
        .slot_sharing_group("group_04")
        .map(identity)
        .print()
    )
    return env


def test_seed_002_three_vertices_in_three_groups() -> None:
    job_graph = seed_002_env().get_job_graph()
    assert [v.slot_sharing_group for v in job_graph.vertices] == ["default", "group_03", "group_04"]
    assert [v.operator_names for v in job_graph.vertices] == [
        ["Source: Collection Source", "Map"],
        ["Filter", "Map"],
        ["Filter", "Map", "Print to Std. Out"],
    ]
    assert [e.chain_break for e in job_graph.edges] == [ChainVerdict.DIFFERENT_SLOT_SHARING_GROUPS] * 2
    assert [e.ship_strategy for e in job_graph.edges] == ["FORWARD", "FORWARD"]
    assert job_graph.slot_sharing_groups() == {"default": 1, "group_03": 1, "group_04": 1}
    assert job_graph.required_slots() == 3


def thirty_slot_env():
    """Seed 002: group "default" at most 10 wide, group "test" at most 20 → 30 slots."""
    env = new_env(10)
    mapped = numbers(env).map(identity).set_parallelism(20).slot_sharing_group("test")
    mapped.filter(keep).print()  # inherits "test", parallelism 10
    return env


def test_slots_are_summed_over_groups_of_their_highest_parallelism() -> None:
    job_graph = thirty_slot_env().get_job_graph()
    assert job_graph.slot_sharing_groups() == {"default": 10, "test": 20}
    assert job_graph.required_slots() == 30
    assert [(v.slot_sharing_group, v.parallelism) for v in job_graph.vertices] == [
        ("default", 10),
        ("test", 20),
        ("test", 10),
    ]


def test_one_group_needs_only_its_widest_vertex() -> None:
    env = new_env(3)
    numbers(env).rebalance().map(identity).set_parallelism(7).rebalance().map(identity).set_parallelism(5).print()
    job_graph = env.get_job_graph()
    assert len(job_graph.vertices) == 4
    assert job_graph.slot_sharing_groups() == {"default": 7}
    assert job_graph.required_slots() == 7


# -- slot sharing groups ------------------------------------------------------------------------------------------


def test_an_operator_without_a_group_inherits_its_inputs_group() -> None:
    env = new_env(2)
    source = numbers(env).slot_sharing_group("src")
    keyed = source.key_by(identity).reduce(lambda a, b: a + b)  # through a virtual partition node
    sink = keyed.map(identity).print()
    graph = env.get_stream_graph()
    assert {node.slot_sharing_group for node in graph.nodes.values()} == {"src"}
    assert graph.node(nid(sink)).slot_sharing_group == "src"


def test_inputs_of_different_groups_give_default() -> None:
    env = new_env(2)
    first = numbers(env, name="a").slot_sharing_group("a")
    second = numbers(env, name="b").slot_sharing_group("b")
    unioned = first.union(second).map(identity)
    unioned.print()
    same = first.union(numbers(env, name="c").slot_sharing_group("a")).map(identity)
    same.print()
    graph = env.get_stream_graph()
    assert graph.node(nid(unioned)).slot_sharing_group == "default"
    assert graph.node(nid(same)).slot_sharing_group == "a"


def test_connected_inputs_of_different_groups_give_default() -> None:
    class CoIdentity:
        def map1(self, value):
            return value

        def map2(self, value):
            return value

    env = new_env(2)
    first = numbers(env, name="a").slot_sharing_group("a")
    second = numbers(env, name="b")
    co_mapped = first.connect(second).map(CoIdentity())
    co_mapped.print()
    assert env.get_stream_graph().node(nid(co_mapped)).slot_sharing_group == "default"


def test_slot_sharing_group_objects_are_accepted() -> None:
    env = new_env(2)
    source = numbers(env)
    mapped = source.map(identity).slot_sharing_group(SlotSharingGroup("plain"))
    built = mapped.filter(keep).slot_sharing_group(
        SlotSharingGroup.builder("built").set_cpu_cores(1.0).set_task_heap_memory_mb(64).build()
    )
    built.print()
    job_graph = env.get_job_graph()
    assert [v.slot_sharing_group for v in job_graph.vertices] == ["default", "plain", "built"]
    assert job_graph.required_slots() == 6


@pytest.mark.parametrize("bad", ["", None, 3])
def test_a_bad_slot_sharing_group_is_refused(bad) -> None:
    env = new_env(2)
    with pytest.raises(InvalidJobError, match="slot_sharing_group"):
        numbers(env).map(identity).slot_sharing_group(bad)


# -- JobVertex fields ---------------------------------------------------------------------------------------------


def test_operator_ids_are_depth_first_in_a_branching_chain() -> None:
    env = new_env(2)
    source = numbers(env)
    left = source.map(identity).name("left")
    right = source.map(identity).name("right")
    left_sink = left.print()
    right_sink = right.print()
    (vertex,) = env.get_job_graph().vertices
    assert vertex.operator_ids == [nid(source), nid(left), nid(left_sink), nid(right), nid(right_sink)]
    assert vertex.name == "Source: numbers -> left -> Print to Std. Out -> right -> Print to Std. Out"
    assert vertex.head.id == nid(source) and vertex.is_source
    assert len(vertex.chained_edges) == 4


def test_vertex_parallelism_and_max_parallelism_come_from_the_head() -> None:
    env = new_env(3)
    source = numbers(env).set_max_parallelism(64)
    keyed = source.key_by(identity).reduce(lambda a, b: a + b)
    keyed.print()
    job_graph = env.get_job_graph()
    head, reduce_vertex = job_graph.vertices
    assert (head.parallelism, head.max_parallelism) == (3, 64)
    assert (reduce_vertex.parallelism, reduce_vertex.max_parallelism) == (3, 128)


def test_env_max_parallelism_reaches_every_vertex() -> None:
    env = new_env(3).set_max_parallelism(12)
    numbers(env).rebalance().map(identity).print()
    assert {v.max_parallelism for v in env.get_job_graph().vertices} == {12}


def test_co_location_group_is_carried_onto_the_vertices() -> None:
    env = new_env(2)
    first = numbers(env).map(identity).co_location_group("k")
    second = first.rebalance().map(identity).co_location_group("k")
    second.print()
    job_graph = env.get_job_graph()
    assert [v.co_location_group for v in job_graph.vertices] == ["k", "k"]
    plain = new_env(2)
    numbers(plain).rebalance().map(identity).print()
    assert [v.co_location_group for v in plain.get_job_graph().vertices] == [None, None]


def test_co_location_with_different_parallelism_is_refused() -> None:
    env = new_env(2)
    first = numbers(env).map(identity).co_location_group("k")
    first.rebalance().map(identity).set_parallelism(3).co_location_group("k").print()
    with pytest.raises(InvalidJobError, match=r"co-location group 'k'.*parallelism 2.*parallelism 3"):
        env.get_job_graph()


def test_co_location_across_slot_sharing_groups_is_refused() -> None:
    env = new_env(2)
    first = numbers(env).map(identity).co_location_group("k")
    first.rebalance().map(identity).slot_sharing_group("other").co_location_group("k").print()
    with pytest.raises(InvalidJobError, match="co-location group 'k'"):
        env.get_job_graph()


def test_two_co_location_groups_in_one_chain_are_refused() -> None:
    env = new_env(2)
    numbers(env).map(identity).co_location_group("k1").map(identity).co_location_group("k2").print()
    with pytest.raises(InvalidJobError, match="k1.*k2"):
        env.get_job_graph()


# -- JobEdges -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("partition", "ship", "pattern"),
    [
        (lambda s: s.map(identity).start_new_chain(), "FORWARD", DistributionPattern.POINTWISE),
        (lambda s: s.key_by(identity).map(identity), "HASH", DistributionPattern.ALL_TO_ALL),
        (lambda s: s.rebalance().map(identity), "REBALANCE", DistributionPattern.ALL_TO_ALL),
        (lambda s: s.rescale().map(identity), "RESCALE", DistributionPattern.POINTWISE),
        (lambda s: s.broadcast().map(identity), "BROADCAST", DistributionPattern.ALL_TO_ALL),
        (lambda s: s.shuffle().map(identity), "SHUFFLE", DistributionPattern.ALL_TO_ALL),
        (lambda s: s.global_().map(identity), "GLOBAL", DistributionPattern.ALL_TO_ALL),
        (
            lambda s: s.partition_custom(lambda k, n: 0, identity).map(identity),
            "CUSTOM",
            DistributionPattern.ALL_TO_ALL,
        ),
    ],
    ids=["forward", "hash", "rebalance", "rescale", "broadcast", "shuffle", "global", "custom"],
)
def test_ship_strategy_and_distribution_pattern(partition, ship, pattern) -> None:
    env = new_env(2)
    source = numbers(env)
    consumer = partition(source)
    consumer.print()
    job_graph = env.get_job_graph()
    edge = job_edge(job_graph, source, consumer)
    assert edge.ship_strategy == ship
    assert edge.distribution_pattern is pattern
    assert edge.dataset.producer_vertex_id == edge.source == vertex_of(job_graph, source).id
    assert edge.target == vertex_of(job_graph, consumer).id
    assert edge.edge_id == edge.dataset.id == f"{nid(source)}_{nid(consumer)}_0"


def test_explicit_forward_between_different_parallelisms_becomes_rebalance() -> None:
    env = new_env(4)
    source = numbers(env, 2)
    mapped = source.forward().map(identity)
    mapped.print()
    edge = job_edge(env.get_job_graph(), source, mapped)
    assert edge.ship_strategy == "REBALANCE"
    assert edge.distribution_pattern is DistributionPattern.ALL_TO_ALL


def test_rescale_between_different_parallelisms_stays_pointwise() -> None:
    env = new_env(4)
    source = numbers(env, 2)
    mapped = source.rescale().map(identity)
    mapped.print()
    edge = job_edge(env.get_job_graph(), source, mapped)
    assert (edge.ship_strategy, edge.distribution_pattern) == ("RESCALE", DistributionPattern.POINTWISE)


def test_vertices_are_topologically_ordered_even_when_built_out_of_order() -> None:
    env = new_env(1)
    first = env.from_collection([1, 2])
    widened = first.map(identity).set_parallelism(2).name("widened")
    widest = widened.map(identity).set_parallelism(3).name("widest")
    second = env.from_collection([3, 4])
    merged = widest.union(second).map(identity).set_parallelism(3).name("merged")
    merged.print()
    job_graph = env.get_job_graph()
    # Chains are discovered breadth-first from the sources, so "merged" is found before "widest" feeds it.
    assert [v.id for v in job_graph.vertices] != sorted(v.id for v in job_graph.vertices)
    position = {v.id: i for i, v in enumerate(job_graph.vertices)}
    assert all(position[e.source] < position[e.target] for e in job_graph.edges)
    assert [v.operator_names[0] for v in job_graph.vertices] == [
        "Source: Collection Source",
        "Source: Collection Source",
        "widened",
        "widest",
        "merged",
        "Print to Std. Out",
    ]


def test_vertex_inputs_and_outputs_list_its_job_edges() -> None:
    env = new_env(2)
    source = numbers(env)
    left = source.rebalance().map(identity)
    right = source.shuffle().map(identity)
    left.union(right).map(identity).print()
    job_graph = env.get_job_graph()
    for vertex in job_graph.vertices:
        assert vertex.inputs == [e for e in job_graph.edges if e.target == vertex.id]
        assert vertex.outputs == [e for e in job_graph.edges if e.source == vertex.id]
    assert len(vertex_of(job_graph, source).outputs) == 2


def test_side_output_edges_carry_their_tag() -> None:
    tag = OutputTag("odd")

    def route(value, ctx):
        yield (tag, value) if value % 2 else value

    env = new_env(2)
    main = numbers(env).process(route)
    side = main.get_side_output(tag)
    chained_side = side.map(identity).name("chained side")
    wide_side = side.map(identity).set_parallelism(3).name("wide side")
    chained_side.print()
    wide_side.print()
    main.print()
    job_graph = env.get_job_graph()
    graph = env.get_stream_graph()
    assert all(node.name != f"SideOutput({tag.tag_id})" for node in graph.nodes.values())

    edge = job_edge(job_graph, main, wide_side)
    assert edge.output_tag == tag
    assert edge.edge_id == f"{nid(main)}_{nid(wide_side)}_0_odd"
    assert edge.ship_strategy == "REBALANCE"

    vertex = vertex_of(job_graph, main)
    assert nid(chained_side) in vertex.operator_ids
    tags = {(e.source_id, e.target_id): e.output_tag for e in vertex.chained_edges}
    assert tags[(nid(main), nid(chained_side))] == tag
    assert [
        e.output_tag for e in vertex.chained_edges if e.source_id == nid(main) and e.target_id != nid(chained_side)
    ] == [None]


def test_main_and_side_output_into_one_union_are_two_edges() -> None:
    tag = OutputTag("side")
    env = new_env(2)
    main = numbers(env).process(lambda value, ctx: [value, (tag, value)])
    merged = main.union(main.get_side_output(tag)).map(identity)
    merged.print()
    job_graph = env.get_job_graph()
    edges = [e for e in job_graph.edges if e.target_node_id == nid(merged)]
    assert sorted(str(e.output_tag) for e in edges) == sorted([str(None), str(tag)])
    assert len({e.edge_id for e in edges}) == 2
    assert {e.chain_break for e in edges} == {ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS}


def test_self_union_gives_two_distinct_datasets() -> None:
    env = new_env(2)
    source = numbers(env)
    mapped = source.union(source).map(identity)
    mapped.print()
    job_graph = env.get_job_graph()
    assert len(job_graph.edges) == 2
    assert len({e.dataset.id for e in job_graph.edges}) == 2


def test_job_id_is_given_or_fresh() -> None:
    env = new_env(1)
    numbers(env).print()
    graph = env.get_stream_graph()
    assert build_job_graph(graph, job_id="abc").job_id == "abc"
    first, second = build_job_graph(graph).job_id, build_job_graph(graph).job_id
    assert first != second and len(first) == 32


def test_job_name_is_carried() -> None:
    env = new_env(1)
    numbers(env).print()
    assert env.get_job_graph("my job").job_name == "my job"
    assert env.get_job_graph().job_name == "Flink Streaming Job"


# -- refused jobs -------------------------------------------------------------------------------------------------


def test_a_job_without_a_sink_is_refused() -> None:
    env = new_env(2)
    numbers(env).map(identity)
    with pytest.raises(InvalidJobError, match="No operators defined"):
        env.get_job_graph()
    with pytest.raises(InvalidJobError, match="No operators defined"):
        env.get_execution_plan()


def test_parallelism_zero_is_refused_naming_the_value() -> None:
    env = new_env(2)
    mapped = numbers(env).map(identity)
    with pytest.raises(InvalidJobError, match=r"Map.*got 0"):
        mapped.set_parallelism(0)
    with pytest.raises(InvalidJobError, match="got 0"):
        env.set_parallelism(0)


def test_max_parallelism_above_the_bound_is_refused_naming_the_value() -> None:
    env = new_env(2)
    mapped = numbers(env).map(identity)
    with pytest.raises(InvalidJobError, match="40000"):
        mapped.set_max_parallelism(40000)
    with pytest.raises(InvalidJobError, match="40000"):
        env.set_max_parallelism(40000)


def test_max_parallelism_below_parallelism_is_refused_naming_both() -> None:
    env = new_env(2)
    mapped = numbers(env).map(identity).set_parallelism(4)
    with pytest.raises(InvalidJobError, match=r"max parallelism 2 .*parallelism 4"):
        mapped.set_max_parallelism(2)
    capped = numbers(new_env(2)).map(identity).set_max_parallelism(2)
    with pytest.raises(InvalidJobError, match=r"parallelism 3 .*max parallelism 2"):
        capped.set_parallelism(3)


def test_env_max_parallelism_below_an_operator_parallelism_is_refused_at_planning() -> None:
    env = new_env(2).set_max_parallelism(2)
    numbers(env).map(identity).set_parallelism(4).print()
    with pytest.raises(InvalidJobError, match=r"'Map'.* is 2, below its parallelism 4"):
        env.get_job_graph()


def test_a_collection_source_cannot_be_made_parallel() -> None:
    env = new_env(2)
    with pytest.raises(InvalidJobError, match="fixed at 1"):
        env.from_collection([1]).set_parallelism(2)


# -- invariants over random jobs ----------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env=random_jobs())
def test_job_graph_invariants(env) -> None:
    graph = env.get_stream_graph()
    job_graph = build_job_graph(graph)
    vertices = job_graph.vertices

    # Every operator runs in exactly one vertex; a vertex is one parallelism and one slot sharing group.
    assert sorted(i for v in vertices for i in v.operator_ids) == sorted(graph.nodes)
    for vertex in vertices:
        assert {n.parallelism for n in vertex.nodes} == {vertex.parallelism}
        assert {n.slot_sharing_group for n in vertex.nodes} == {vertex.slot_sharing_group}
        assert vertex.name == " -> ".join(vertex.operator_names)
        # Depth-first: every operator after the head is fed by a chained edge from an earlier one.
        for index, node in enumerate(vertex.nodes[1:], start=1):
            (edge,) = node.in_edges
            assert edge in vertex.chained_edges
            assert edge.source_id in vertex.operator_ids[:index]

    # Every StreamEdge is either chained (and chainable) or a JobEdge naming why it is not.
    chained = [e for v in vertices for e in v.chained_edges]
    assert len(chained) + len(job_graph.edges) == len(graph.edges)
    assert all(chain_verdict(e, graph) is ChainVerdict.CHAINABLE for e in chained)
    by_stream_edge = {e.edge_id: e for e in graph.edges}
    assert len(by_stream_edge) == len(graph.edges)
    for edge in job_graph.edges:
        verdict = chain_verdict(by_stream_edge[edge.edge_id], graph)
        assert edge.chain_break is verdict is not ChainVerdict.CHAINABLE
        pointwise = edge.ship_strategy in ("FORWARD", "RESCALE")
        assert (edge.distribution_pattern is DistributionPattern.POINTWISE) is pointwise

    # Producers before consumers.
    position = {v.id: i for i, v in enumerate(vertices)}
    assert all(position[e.source] < position[e.target] for e in job_graph.edges)

    # Slots: per group, its widest operator.
    widest: dict[str, int] = {}
    for node in graph.nodes.values():
        widest[node.slot_sharing_group] = max(widest.get(node.slot_sharing_group, 0), node.parallelism)
    assert job_graph.slot_sharing_groups() == widest
    assert job_graph.required_slots() == sum(widest.values())
