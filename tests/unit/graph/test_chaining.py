"""Chaining rules of DESIGN 2.1, each alone: the ChainVerdict of the exact edge, and the predicate behind it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.datastream.transformations import (
    ChainingStrategy,
    ExchangeMode,
    PartitionerKind,
)
from fluvial.graph import chaining
from fluvial.graph.chaining import RULES, ChainVerdict, chain_verdict, is_chainable
from fluvial.graph.stream_graph import StreamEdge, StreamGraph
from tests.unit.graph.plans import (
    hand_built,
    identity,
    job_edge,
    keep,
    new_env,
    numbers,
    stream_edge,
    stream_edges,
    vertex_of,
)

Scenario = Callable[[], tuple[StreamGraph, StreamEdge]]


# -- one scenario per verdict: the edge it names, and nothing else broken --------------------------------------


def _chainable() -> tuple[StreamGraph, StreamEdge]:
    env = new_env(4)
    source = numbers(env)
    mapped = source.map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    return graph, stream_edge(graph, source, mapped)


def _union() -> tuple[StreamGraph, StreamEdge]:
    env = new_env(4)
    first, second = numbers(env, name="a"), numbers(env, name="b")
    mapped = first.union(second).map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    return graph, stream_edge(graph, first, mapped)


def _chaining_disabled() -> tuple[StreamGraph, StreamEdge]:
    env = new_env(4).disable_operator_chaining()
    source = numbers(env)
    mapped = source.map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    return graph, stream_edge(graph, source, mapped)


def _missing_operator() -> tuple[StreamGraph, StreamEdge]:
    return hand_built(down_operator=None)


def _slot_sharing() -> tuple[StreamGraph, StreamEdge]:
    env = new_env(4)
    source = numbers(env)
    mapped = source.map(identity).slot_sharing_group("other")
    mapped.print()
    graph = env.get_stream_graph()
    return graph, stream_edge(graph, source, mapped)


def _start_new_chain() -> tuple[StreamGraph, StreamEdge]:
    env = new_env(4)
    source = numbers(env)
    mapped = source.map(identity).start_new_chain()
    mapped.print()
    graph = env.get_stream_graph()
    return graph, stream_edge(graph, source, mapped)


def _rebalance() -> tuple[StreamGraph, StreamEdge]:
    env = new_env(4)
    source = numbers(env)
    mapped = source.rebalance().map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    return graph, stream_edge(graph, source, mapped)


def _blocking() -> tuple[StreamGraph, StreamEdge]:
    return hand_built(exchange=ExchangeMode.BATCH)


def _different_parallelism() -> tuple[StreamGraph, StreamEdge]:
    # The API turns a forward edge between different parallelisms into rebalance (NOT_FORWARD comes first),
    # so only a hand-built graph shows this rule alone.
    return hand_built(up_parallelism=2, down_parallelism=3)


SCENARIOS: dict[ChainVerdict, Scenario] = {
    ChainVerdict.CHAINABLE: _chainable,
    ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS: _union,
    ChainVerdict.CHAINING_DISABLED: _chaining_disabled,
    ChainVerdict.MISSING_OPERATOR: _missing_operator,
    ChainVerdict.DIFFERENT_SLOT_SHARING_GROUPS: _slot_sharing,
    ChainVerdict.CHAINING_STRATEGY: _start_new_chain,
    ChainVerdict.NOT_FORWARD: _rebalance,
    ChainVerdict.BLOCKING_EXCHANGE: _blocking,
    ChainVerdict.DIFFERENT_PARALLELISM: _different_parallelism,
}


@pytest.mark.parametrize("verdict", list(ChainVerdict), ids=lambda v: v.name)
def test_each_verdict_names_the_one_broken_rule(verdict: ChainVerdict) -> None:
    graph, edge = SCENARIOS[verdict]()
    assert chain_verdict(edge, graph) is verdict
    assert is_chainable(edge, graph) is (verdict is ChainVerdict.CHAINABLE)
    broken = {v for rule, v in RULES if not rule(edge, graph)}
    assert broken == (set() if verdict is ChainVerdict.CHAINABLE else {verdict})


def test_every_verdict_but_chainable_has_exactly_one_rule() -> None:
    assert [v for _, v in RULES] == [v for v in ChainVerdict if v is not ChainVerdict.CHAINABLE]


# -- rule 1: several inputs ---------------------------------------------------------------------------------------


def test_union_edges_do_not_chain_and_become_forward_job_edges() -> None:
    env = new_env(4)
    first, second = numbers(env, name="a"), numbers(env, name="b")
    mapped = first.union(second).map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    for source in (first, second):
        assert chain_verdict(stream_edge(graph, source, mapped), graph) is ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS
    job_graph = env.get_job_graph()
    assert [v.operator_names for v in job_graph.vertices] == [
        ["Source: a"],
        ["Source: b"],
        ["Map", "Print to Std. Out"],
    ]
    for source in (first, second):
        edge = job_edge(job_graph, source, mapped)
        assert edge.chain_break is ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS
        assert edge.ship_strategy == "FORWARD"


def test_connect_inputs_do_not_chain() -> None:
    class CoIdentity:
        def map1(self, value):
            return value

        def map2(self, value):
            return value

    env = new_env(2)
    first, second = numbers(env, name="a"), numbers(env, name="b")
    co_mapped = first.connect(second).map(CoIdentity())
    after = co_mapped.map(identity)
    after.print()
    graph = env.get_stream_graph()
    edges = [stream_edge(graph, first, co_mapped), stream_edge(graph, second, co_mapped)]
    assert [e.type_number for e in edges] == [1, 2]
    assert [chain_verdict(e, graph) for e in edges] == [ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS] * 2
    # The two-input operator still heads a chain of its own one-input successors.
    assert chain_verdict(stream_edge(graph, co_mapped, after), graph) is ChainVerdict.CHAINABLE


def test_union_of_a_single_stream_still_chains() -> None:
    env = new_env(2)
    source = numbers(env)
    mapped = source.union().map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    assert chain_verdict(stream_edge(graph, source, mapped), graph) is ChainVerdict.CHAINABLE


def test_several_inputs_is_reported_before_disabled_chaining() -> None:
    env = new_env(2).disable_operator_chaining()
    first, second = numbers(env, name="a"), numbers(env, name="b")
    mapped = first.union(second).map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    assert chain_verdict(stream_edge(graph, first, mapped), graph) is ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS


# -- rule 2: chaining disabled ------------------------------------------------------------------------------------


def test_disabled_chaining_breaks_every_edge() -> None:
    env = new_env(4).disable_operator_chaining()
    source = numbers(env)
    mapped = source.map(identity)
    filtered = mapped.filter(keep)
    filtered.print()
    graph = env.get_stream_graph()
    assert graph.chaining_enabled is False
    assert {chain_verdict(e, graph) for e in graph.edges} == {ChainVerdict.CHAINING_DISABLED}
    assert [v.operator_names for v in env.get_job_graph().vertices] == [
        ["Source: numbers"],
        ["Map"],
        ["Filter"],
        ["Print to Std. Out"],
    ]


# -- rule 3: slot sharing groups ----------------------------------------------------------------------------------


def test_different_slot_sharing_group_breaks_only_the_edge_into_the_group() -> None:
    env = new_env(4)
    source = numbers(env)
    mapped = source.map(identity).slot_sharing_group("other")
    filtered = mapped.filter(keep)  # inherits "other"
    filtered.print()
    graph = env.get_stream_graph()
    assert chain_verdict(stream_edge(graph, source, mapped), graph) is ChainVerdict.DIFFERENT_SLOT_SHARING_GROUPS
    assert chain_verdict(stream_edge(graph, mapped, filtered), graph) is ChainVerdict.CHAINABLE
    job_graph = env.get_job_graph()
    assert job_edge(job_graph, source, mapped).chain_break is ChainVerdict.DIFFERENT_SLOT_SHARING_GROUPS


# -- rule 4: chaining strategies ----------------------------------------------------------------------------------


def test_start_new_chain_breaks_the_edge_into_it_but_not_out_of_it() -> None:
    env = new_env(4)
    source = numbers(env)
    mapped = source.map(identity).start_new_chain()
    filtered = mapped.filter(keep)
    filtered.print()
    graph = env.get_stream_graph()
    assert graph.node(mapped.get_transformation_id()).chaining_strategy is ChainingStrategy.HEAD
    assert chain_verdict(stream_edge(graph, source, mapped), graph) is ChainVerdict.CHAINING_STRATEGY
    assert chain_verdict(stream_edge(graph, mapped, filtered), graph) is ChainVerdict.CHAINABLE
    assert [v.operator_names for v in env.get_job_graph().vertices] == [
        ["Source: numbers"],
        ["Map", "Filter", "Print to Std. Out"],
    ]


def test_disable_chaining_breaks_both_sides_of_the_operator() -> None:
    env = new_env(4)
    source = numbers(env)
    mapped = source.map(identity).disable_chaining()
    filtered = mapped.filter(keep)
    filtered.print()
    graph = env.get_stream_graph()
    assert graph.node(mapped.get_transformation_id()).chaining_strategy is ChainingStrategy.NEVER
    assert chain_verdict(stream_edge(graph, source, mapped), graph) is ChainVerdict.CHAINING_STRATEGY
    assert chain_verdict(stream_edge(graph, mapped, filtered), graph) is ChainVerdict.CHAINING_STRATEGY


def test_disable_chaining_on_a_source_breaks_its_output() -> None:
    env = new_env(4)
    source = numbers(env).disable_chaining()
    mapped = source.map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    assert chain_verdict(stream_edge(graph, source, mapped), graph) is ChainVerdict.CHAINING_STRATEGY


def test_disable_chaining_on_a_sink_breaks_its_input() -> None:
    env = new_env(4)
    mapped = numbers(env).map(identity)
    sink = mapped.print().disable_chaining()
    graph = env.get_stream_graph()
    assert chain_verdict(stream_edge(graph, mapped, sink), graph) is ChainVerdict.CHAINING_STRATEGY


@pytest.mark.parametrize(
    ("up", "down", "up_is_source", "allowed"),
    [
        (ChainingStrategy.ALWAYS, ChainingStrategy.ALWAYS, False, True),
        (ChainingStrategy.HEAD, ChainingStrategy.ALWAYS, False, True),
        (ChainingStrategy.ALWAYS, ChainingStrategy.HEAD, False, False),
        (ChainingStrategy.NEVER, ChainingStrategy.ALWAYS, False, False),
        (ChainingStrategy.ALWAYS, ChainingStrategy.NEVER, False, False),
        (ChainingStrategy.NEVER, ChainingStrategy.ALWAYS, True, False),
        (ChainingStrategy.HEAD, ChainingStrategy.HEAD_WITH_SOURCES, True, True),
        (ChainingStrategy.ALWAYS, ChainingStrategy.HEAD_WITH_SOURCES, False, False),
        (ChainingStrategy.HEAD_WITH_SOURCES, ChainingStrategy.ALWAYS, True, True),
        (ChainingStrategy.HEAD_WITH_SOURCES, ChainingStrategy.ALWAYS, False, False),
    ],
)
def test_strategies_allow_table(up, down, up_is_source, allowed) -> None:
    graph, edge = hand_built(up_strategy=up, down_strategy=down, up_is_source=up_is_source)
    assert chaining.strategies_allow(edge, graph) is allowed
    expected = ChainVerdict.CHAINABLE if allowed else ChainVerdict.CHAINING_STRATEGY
    assert chain_verdict(edge, graph) is expected


# -- rule 5: partitioner and exchange -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("partition", "kind"),
    [
        (lambda s: s.rebalance(), PartitionerKind.REBALANCE),
        (lambda s: s.shuffle(), PartitionerKind.SHUFFLE),
        (lambda s: s.key_by(identity), PartitionerKind.HASH),
        (lambda s: s.rescale(), PartitionerKind.RESCALE),
        (lambda s: s.broadcast(), PartitionerKind.BROADCAST),
        (lambda s: s.global_(), PartitionerKind.GLOBAL),
        (lambda s: s.partition_custom(lambda key, n: 0, identity), PartitionerKind.CUSTOM),
    ],
    ids=["rebalance", "shuffle", "key_by", "rescale", "broadcast", "global", "custom"],
)
def test_a_non_forward_partitioner_breaks_the_chain(partition, kind) -> None:
    env = new_env(4)
    source = numbers(env)
    mapped = partition(source).map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    edge = stream_edge(graph, source, mapped)
    assert edge.partitioner.kind is kind
    assert chain_verdict(edge, graph) is ChainVerdict.NOT_FORWARD


def test_explicit_forward_between_equal_parallelisms_chains() -> None:
    env = new_env(3)
    source = numbers(env)
    mapped = source.forward().map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    assert chain_verdict(stream_edge(graph, source, mapped), graph) is ChainVerdict.CHAINABLE


def test_blocking_exchange_is_its_own_rule() -> None:
    graph, edge = hand_built(exchange=ExchangeMode.BATCH)
    assert chaining.pipelined_exchange(edge, graph) is False
    for mode in (ExchangeMode.UNDEFINED, ExchangeMode.PIPELINED):
        graph, edge = hand_built(exchange=mode)
        assert chaining.pipelined_exchange(edge, graph) is True


# -- rule 6: parallelism ------------------------------------------------------------------------------------------


def test_different_parallelism_through_the_api_is_a_rebalance() -> None:
    env = new_env(4)
    source = numbers(env, 2)
    mapped = source.forward().map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    edge = stream_edge(graph, source, mapped)
    assert edge.partitioner.kind is PartitionerKind.REBALANCE
    assert chain_verdict(edge, graph) is ChainVerdict.NOT_FORWARD
    assert chaining.same_parallelism(edge, graph) is False


def test_different_parallelism_on_a_forward_edge() -> None:
    graph, edge = hand_built(up_parallelism=4, down_parallelism=2)
    assert chaining.same_parallelism(edge, graph) is False
    assert chain_verdict(edge, graph) is ChainVerdict.DIFFERENT_PARALLELISM
    graph.node(2).parallelism = 4
    assert chain_verdict(edge, graph) is ChainVerdict.CHAINABLE


# -- the predicates, called directly ------------------------------------------------------------------------------


BREAKERS = {
    chaining.downstream_has_one_input: {"extra_input": True},
    chaining.chaining_enabled: {"chaining_enabled": False},
    chaining.both_have_operators: {"up_operator": None},
    chaining.same_slot_sharing_group: {"down_group": "other"},
    chaining.strategies_allow: {"down_strategy": ChainingStrategy.HEAD},
    chaining.forward_partitioner: {"kind": PartitionerKind.SHUFFLE},
    chaining.pipelined_exchange: {"exchange": ExchangeMode.BATCH},
    chaining.same_parallelism: {"down_parallelism": 3},
}


def test_every_rule_has_a_breaker() -> None:
    assert set(BREAKERS) == {rule for rule, _ in RULES}


@pytest.mark.parametrize("rule", list(BREAKERS), ids=lambda r: r.__name__)
def test_each_predicate_alone(rule) -> None:
    graph, edge = hand_built()
    assert all(r(edge, graph) for r, _ in RULES)
    graph, edge = hand_built(**BREAKERS[rule])
    assert [r for r, _ in RULES if not r(edge, graph)] == [rule]
    assert chain_verdict(edge, graph) is dict(RULES)[rule]


def test_predicates_on_api_edges() -> None:
    env = new_env(4)
    source = numbers(env)
    mapped = source.map(identity)
    keyed = mapped.key_by(identity).reduce(lambda a, b: a + b)
    wide = keyed.map(identity).set_parallelism(2).slot_sharing_group("wide")
    wide.print()
    graph = env.get_stream_graph()
    chained = stream_edge(graph, source, mapped)
    hashed = stream_edge(graph, mapped, keyed)
    regrouped = stream_edge(graph, keyed, wide)
    assert chaining.forward_partitioner(chained, graph) and not chaining.forward_partitioner(hashed, graph)
    assert chaining.same_parallelism(hashed, graph) and not chaining.same_parallelism(regrouped, graph)
    assert chaining.same_slot_sharing_group(hashed, graph)
    assert not chaining.same_slot_sharing_group(regrouped, graph)
    assert all(chaining.downstream_has_one_input(e, graph) for e in (chained, hashed, regrouped))
    assert chain_verdict(regrouped, graph) is ChainVerdict.DIFFERENT_SLOT_SHARING_GROUPS


def test_self_union_edges_both_count_as_inputs() -> None:
    env = new_env(2)
    source = numbers(env)
    mapped = source.union(source).map(identity)
    mapped.print()
    graph = env.get_stream_graph()
    edges = stream_edges(graph, source, mapped)
    assert len(edges) == 2
    assert [chain_verdict(e, graph) for e in edges] == [ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS] * 2
    assert len({e.edge_id for e in edges}) == 2
    assert len(vertex_of(env.get_job_graph(), mapped).inputs) == 2


# -- an oracle written from DESIGN 2.1, against the rule chain ----------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    up_p=st.integers(1, 3),
    down_p=st.integers(1, 3),
    up_group=st.sampled_from(["default", "g"]),
    down_group=st.sampled_from(["default", "g"]),
    up_strategy=st.sampled_from(list(ChainingStrategy)),
    down_strategy=st.sampled_from(list(ChainingStrategy)),
    up_is_source=st.booleans(),
    kind=st.sampled_from(list(PartitionerKind)),
    exchange=st.sampled_from(list(ExchangeMode)),
    enabled=st.booleans(),
    extra_input=st.booleans(),
)
def test_chainable_iff_every_design_condition_holds(
    up_p,
    down_p,
    up_group,
    down_group,
    up_strategy,
    down_strategy,
    up_is_source,
    kind,
    exchange,
    enabled,
    extra_input,
) -> None:
    graph, edge = hand_built(
        up_parallelism=up_p,
        down_parallelism=down_p,
        up_group=up_group,
        down_group=down_group,
        up_strategy=up_strategy,
        down_strategy=down_strategy,
        up_is_source=up_is_source,
        kind=kind,
        exchange=exchange,
        chaining_enabled=enabled,
        extra_input=extra_input,
    )
    never = ChainingStrategy.NEVER in (up_strategy, down_strategy)
    down_ok = down_strategy is ChainingStrategy.ALWAYS or (
        down_strategy is ChainingStrategy.HEAD_WITH_SOURCES and up_is_source
    )
    up_ok = up_is_source or up_strategy in (ChainingStrategy.ALWAYS, ChainingStrategy.HEAD)
    expected = (
        not extra_input
        and enabled
        and up_group == down_group
        and not never
        and down_ok
        and up_ok
        and kind is PartitionerKind.FORWARD
        and exchange is not ExchangeMode.BATCH
        and up_p == down_p
    )
    verdict = chain_verdict(edge, graph)
    assert (verdict is ChainVerdict.CHAINABLE) is expected
    if not expected:
        first_broken = next(v for rule, v in RULES if not rule(edge, graph))
        assert verdict is first_broken
