"""Operator chaining: when may a StreamEdge `up -> down` run inside one task? (DESIGN 2.1, seeds 000 and 002)

Each rule is a named predicate; `chain_verdict` applies them in order and answers with the first rule that
broke the chain, so a plan can say *why* two operators are in different tasks.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from fluvial.datastream.transformations import ChainingStrategy, ExchangeMode, PartitionerKind
from fluvial.graph.stream_graph import StreamEdge, StreamGraph


class ChainVerdict(enum.Enum):
    CHAINABLE = "chainable"
    DOWNSTREAM_HAS_SEVERAL_INPUTS = "the downstream operator has more than one input (union or two inputs)"
    CHAINING_DISABLED = "operator chaining is disabled for the job"
    MISSING_OPERATOR = "one side has no operator"
    DIFFERENT_SLOT_SHARING_GROUPS = "the operators are in different slot sharing groups"
    CHAINING_STRATEGY = "a chaining strategy forbids it (start_new_chain / disable_chaining)"
    NOT_FORWARD = "the partitioner is not forward"
    BLOCKING_EXCHANGE = "the exchange is blocking (batch), not pipelined"
    DIFFERENT_PARALLELISM = "the operators have different parallelism"


def downstream_has_one_input(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Rule 1: a union or a two-input operator starts a new chain."""
    return len(graph.node(edge.target_id).in_edges) == 1


def chaining_enabled(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Rule 2a: `env.disable_operator_chaining()` turns every chain off."""
    return graph.chaining_enabled


def both_have_operators(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Rule 2b: virtual nodes never chain (ours are resolved away, so this guards hand-built graphs)."""
    return graph.node(edge.source_id).operator is not None and graph.node(edge.target_id).operator is not None


def same_slot_sharing_group(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Rule 3: operators of different slot sharing groups never chain."""
    return graph.node(edge.source_id).slot_sharing_group == graph.node(edge.target_id).slot_sharing_group


def strategies_allow(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Rule 4: downstream ALWAYS (or HEAD_WITH_SOURCES behind a source); upstream ALWAYS or HEAD or a source."""
    up, down = graph.node(edge.source_id), graph.node(edge.target_id)
    if ChainingStrategy.NEVER in (up.chaining_strategy, down.chaining_strategy):
        return False
    down_ok = down.chaining_strategy is ChainingStrategy.ALWAYS or (
        down.chaining_strategy is ChainingStrategy.HEAD_WITH_SOURCES and up.is_source
    )
    up_ok = up.is_source or up.chaining_strategy in (ChainingStrategy.ALWAYS, ChainingStrategy.HEAD)
    return down_ok and up_ok


def forward_partitioner(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Rule 5a: only a forward edge keeps records in the producing subtask."""
    return edge.partitioner.kind is PartitionerKind.FORWARD


def pipelined_exchange(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Rule 5b: a blocking (batch) exchange materialises its data, so it cannot be a method call."""
    return edge.exchange_mode is not ExchangeMode.BATCH


def same_parallelism(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Rule 6: subtask i feeds subtask i only when both sides have as many subtasks."""
    return graph.node(edge.source_id).parallelism == graph.node(edge.target_id).parallelism


RULES: tuple[tuple[Callable[[StreamEdge, StreamGraph], bool], ChainVerdict], ...] = (
    (downstream_has_one_input, ChainVerdict.DOWNSTREAM_HAS_SEVERAL_INPUTS),
    (chaining_enabled, ChainVerdict.CHAINING_DISABLED),
    (both_have_operators, ChainVerdict.MISSING_OPERATOR),
    (same_slot_sharing_group, ChainVerdict.DIFFERENT_SLOT_SHARING_GROUPS),
    (strategies_allow, ChainVerdict.CHAINING_STRATEGY),
    (forward_partitioner, ChainVerdict.NOT_FORWARD),
    (pipelined_exchange, ChainVerdict.BLOCKING_EXCHANGE),
    (same_parallelism, ChainVerdict.DIFFERENT_PARALLELISM),
)


def chain_verdict(edge: StreamEdge, graph: StreamGraph) -> ChainVerdict:
    for rule, broken in RULES:
        if not rule(edge, graph):
            return broken
    return ChainVerdict.CHAINABLE


def is_chainable(edge: StreamEdge, graph: StreamGraph) -> bool:
    return chain_verdict(edge, graph) is ChainVerdict.CHAINABLE
