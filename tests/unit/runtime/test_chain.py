"""OperatorChain built from a real JobVertex: operators in depth-first order, stateless runs fused before anything
is wired, failures labelled with the operator that raised, open tail first, finish head to tail, and close that
closes everything and hands back every error."""

from __future__ import annotations

import pytest

from fluvial.datastream import MapFunction, ProcessFunction
from fluvial.datastream.functions import FilterFunction
from fluvial.datastream.output_tag import OutputTag
from fluvial.runtime.chain import SourceOperator
from fluvial.runtime.operators.base import failing_operator
from fluvial.runtime.operators.basic import FilterOperator, MapOperator
from fluvial.runtime.operators.fused import FusedOperator
from fluvial.runtime.operators.process import ProcessOperator
from fluvial.runtime.operators.sink import SinkFunctionOperator
from fluvial.runtime.records import RecordBatch, Watermark, WatermarkStatus
from tests.unit.runtime.chains import Collect, build_chain, job_graph, open_chain

EVENTS: list[str] = []


@pytest.fixture(autouse=True)
def _clear_events():
    EVENTS.clear()
    yield


class Tracked(MapFunction):
    """A map that records its lifecycle; `fail_on` raises in map, `fail_close` in close."""

    def __init__(self, name: str, step=lambda v: v, fail_on=None, fail_close: bool = False) -> None:
        self.name, self.step, self.fail_on, self.fail_close = name, step, fail_on, fail_close

    def open(self, runtime_context) -> None:
        EVENTS.append(f"open {self.name}")

    def map(self, value):
        if value == self.fail_on:
            raise ValueError(f"{self.name} cannot take {value!r}")
        return self.step(value)

    def close(self) -> None:
        EVENTS.append(f"close {self.name}")
        if self.fail_close:
            raise RuntimeError(f"{self.name} failed to close")


class Even(FilterFunction):
    def filter(self, value) -> bool:
        return value % 2 == 0


class PassOn(ProcessFunction):
    def __init__(self, fail_on=None) -> None:
        self.fail_on = fail_on

    def process_element(self, value, ctx):
        if value == self.fail_on:
            raise KeyError(value)
        yield value


class Remembers(MapFunction):
    """A CheckpointedFunction: it keeps operator state of its own, so it is never fused."""

    def initialize_state(self, context) -> None:
        pass

    def snapshot_state(self, context) -> None:
        pass

    def map(self, value):
        return value


def single_vertex(describe):
    (vertex,) = job_graph(describe).vertices
    return vertex


def kinds(chain) -> list[type]:
    return [type(operator) for operator in chain.order]


# -- building and fusion ------------------------------------------------------------------------------------------


def test_a_stateless_run_becomes_one_fused_operator_between_source_and_sink() -> None:
    out: list = []
    vertex = single_vertex(
        lambda env: (
            env.from_collection([0])
            .map(Tracked("inc", lambda v: v + 1))
            .name("A")
            .filter(Even())
            .name("B")
            .map(Tracked("double", lambda v: v * 2))
            .name("C")
            .add_sink(Collect(out))
        )
    )
    chain, _ = build_chain(vertex)
    assert kinds(chain) == [SourceOperator, FusedOperator, SinkFunctionOperator]
    assert chain.head is chain.order[0]
    fused = chain.order[1]
    assert fused.name == "A -> B -> C" and [type(m) for m in fused.members] == [
        MapOperator,
        FilterOperator,
        MapOperator,
    ]
    open_chain(chain)
    chain.head.process_batch(RecordBatch([1, 2, 3, 4]))
    assert out == [4, 8]


def test_fusion_is_decided_before_wiring_so_members_get_no_output_of_their_own() -> None:
    vertex = single_vertex(
        lambda env: env.from_collection([0]).map(Tracked("a")).map(Tracked("b")).add_sink(Collect([]))
    )
    chain, _ = build_chain(vertex)
    fused = chain.order[1]
    assert all(operator.output is not None for operator in chain.order)
    assert [member.output for member in fused.members] == [None, None], "members were wired individually"
    open_chain(chain)
    assert all(member.output is fused.output for member in fused.members)


@pytest.mark.parametrize(
    "describe, expected",
    [
        # an operator that is not a plain map/filter ends the run; runs of one are left as they are
        (
            lambda s: s.map(Tracked("a")).map(Tracked("b")).process(PassOn()).map(Tracked("c")).filter(Even()),
            [SourceOperator, FusedOperator, ProcessOperator, FusedOperator],
        ),
        (
            lambda s: s.map(Tracked("a")).process(PassOn()).map(Tracked("b")),
            [SourceOperator, MapOperator, ProcessOperator, MapOperator],
        ),
        # a CheckpointedFunction keeps state under its own operator id
        (
            lambda s: s.map(Tracked("a")).map(Remembers()).map(Tracked("b")),
            [SourceOperator, MapOperator, MapOperator, MapOperator],
        ),
    ],
    ids=["process-splits-runs", "runs-of-one", "checkpointed-function"],
)
def test_what_ends_a_fused_run(describe, expected) -> None:
    vertex = single_vertex(lambda env: describe(env.from_collection([0])).add_sink(Collect([])))
    chain, _ = build_chain(vertex)
    assert kinds(chain)[:-1] == expected


def test_an_operator_feeding_two_successors_is_not_fused_and_feeds_both() -> None:
    left, right = [], []

    def describe(env):
        mapped = env.from_collection([0]).map(Tracked("m", lambda v: v + 1))
        mapped.map(Tracked("l")).add_sink(Collect(left))
        mapped.filter(Even()).add_sink(Collect(right))

    chain, _ = build_chain(single_vertex(describe))
    assert FusedOperator not in kinds(chain)
    open_chain(chain)
    chain.head.process_batch(RecordBatch([1, 2, 3]))
    assert left == [2, 3, 4] and right == [2, 4]


def test_an_operator_with_an_outgoing_job_edge_is_not_fused_and_writes_to_its_writer() -> None:
    chained: list = []

    def describe(env):
        mapped = env.from_collection([0]).map(Tracked("m", lambda v: v * 10))
        mapped.map(Tracked("n")).add_sink(Collect(chained))
        mapped.rebalance().map(Tracked("elsewhere")).add_sink(Collect([]))

    graph = job_graph(describe)
    head_vertex = graph.vertices[0]
    chain, writers = build_chain(head_vertex)
    assert FusedOperator not in kinds(chain)
    open_chain(chain)
    chain.head.process_batch(RecordBatch([1, 2]))
    (writer,) = writers.values()
    assert chained == [10, 20] and writer.records() == [10, 20]


def test_side_outputs_go_to_the_consumers_of_their_tag() -> None:
    tag = OutputTag("odd")
    main, side = [], []

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            yield value if value % 2 == 0 else (tag, value)

    def describe(env):
        split = env.from_collection([0]).process(Split())
        split.add_sink(Collect(main))
        split.get_side_output(tag).map(Tracked("side", lambda v: -v)).add_sink(Collect(side))

    chain, _ = build_chain(single_vertex(describe))
    open_chain(chain)
    chain.head.process_batch(RecordBatch([1, 2, 3, 4]))
    assert main == [2, 4] and side == [-1, -3]


def test_watermarks_reach_every_chained_operator_and_writer_and_idleness_only_writers() -> None:
    def describe(env):
        env.from_collection([0]).map(Tracked("a")).rebalance().map(Tracked("b")).add_sink(Collect([]))

    chain, writers = build_chain(job_graph(describe).vertices[0])
    open_chain(chain)
    chain.head.process_watermark(Watermark(42))
    chain.head.process_status(WatermarkStatus(idle=True))
    (writer,) = writers.values()
    assert writer.watermarks() == [42] and writer.statuses() == [True]
    assert all(operator.current_watermark == 42 for operator in chain.order)


# -- failures are labelled with the operator that raised ----------------------------------------------------------


def test_a_failure_names_the_chained_operator_that_raised() -> None:
    vertex = single_vertex(
        lambda env: (
            env.from_collection([0])
            .map(Tracked("parse"))
            .name("Parse")
            .process(PassOn(fail_on=3))
            .name("Enrich")
            .add_sink(Collect([]))
        )
    )
    chain, _ = build_chain(vertex)
    open_chain(chain)
    with pytest.raises(KeyError) as info:
        chain.head.process_batch(RecordBatch([1, 2, 3]))
    assert failing_operator(info.value) == "Enrich"


@pytest.mark.parametrize("timestamps", [None, [10, 20]], ids=["plain", "timestamped"])
def test_a_failure_inside_a_fused_run_names_the_member_that_raised(timestamps) -> None:
    """The members run the same function class, so only the step that raised can tell them apart."""
    vertex = single_vertex(
        lambda env: (
            env.from_collection([0])
            .map(Tracked("a"))
            .name("First")
            .filter(lambda v: True)
            .name("Keep")
            .map(Tracked("b", fail_on=2))
            .name("Second")
            .map(Tracked("c"))
            .name("Third")
            .add_sink(Collect([]))
        )
    )
    chain, _ = build_chain(vertex)
    open_chain(chain)
    with pytest.raises(ValueError, match="b cannot take 2") as info:
        chain.head.process_batch(RecordBatch([1, 2], timestamps))
    assert failing_operator(info.value) == "Second"


def test_a_failure_keeps_the_innermost_label_on_its_way_up() -> None:
    class Boom(Collect):
        def invoke(self, value, context):
            raise ZeroDivisionError("sink")

    vertex = single_vertex(
        lambda env: env.from_collection([0]).map(Tracked("a")).process(PassOn()).add_sink(Boom([])).name("Fragile Sink")
    )
    chain, _ = build_chain(vertex)
    open_chain(chain)
    with pytest.raises(ZeroDivisionError) as info:
        chain.head.process_batch(RecordBatch([1]))
    assert failing_operator(info.value) == "Fragile Sink"


# -- lifecycle ------------------------------------------------------------------------------------------------------


def test_open_runs_tail_first_so_a_head_emitting_while_opening_finds_the_rest_ready() -> None:
    vertex = single_vertex(
        lambda env: env.from_collection([0]).map(Tracked("a")).process(PassOn()).map(Tracked("b")).add_sink(Collect([]))
    )
    chain, _ = build_chain(vertex)
    open_chain(chain)
    assert EVENTS == ["open b", "open a"]


def test_finish_runs_head_to_tail() -> None:
    vertex = single_vertex(
        lambda env: env.from_collection([0]).map(Tracked("a")).process(PassOn()).add_sink(Collect([]))
    )
    chain, _ = build_chain(vertex)
    open_chain(chain)
    finished = []
    for operator in chain.order:
        operator.finish = lambda name=operator.name: finished.append(name)
    chain.finish()
    assert finished == [operator.name for operator in chain.order]


def test_close_closes_every_operator_and_returns_every_error() -> None:
    vertex = single_vertex(
        lambda env: (
            env.from_collection([0])
            .map(Tracked("a", fail_close=True))
            .process(PassOn())
            .map(Tracked("b"))
            .process(PassOn())
            .map(Tracked("c", fail_close=True))
            .add_sink(Collect([]))
        )
    )
    chain, _ = build_chain(vertex)
    open_chain(chain)
    EVENTS.clear()
    errors = chain.close()
    assert EVENTS == ["close a", "close b", "close c"]
    assert [str(error) for error in errors] == ["a failed to close", "c failed to close"]


def test_closing_a_fused_run_closes_every_member_even_if_one_fails() -> None:
    vertex = single_vertex(
        lambda env: (
            env.from_collection([0])
            .map(Tracked("a", fail_close=True))
            .map(Tracked("b"))
            .map(Tracked("c", fail_close=True))
            .add_sink(Collect([]))
        )
    )
    chain, _ = build_chain(vertex)
    assert kinds(chain)[1] is FusedOperator
    open_chain(chain)
    EVENTS.clear()
    errors = chain.close()
    assert EVENTS == ["close a", "close b", "close c"]
    assert [str(error) for error in errors] == ["a failed to close"]
    assert "c failed to close" in str(errors[0].__notes__)


def test_checkpoint_notifications_reach_every_operator_fused_or_not() -> None:
    heard = []

    class Listens(Tracked):
        def notify_checkpoint_complete(self, checkpoint_id):
            heard.append((self.name, "complete", checkpoint_id))

        def notify_checkpoint_aborted(self, checkpoint_id):
            heard.append((self.name, "aborted", checkpoint_id))

    vertex = single_vertex(
        lambda env: (
            env.from_collection([0])
            .map(Listens("a"))
            .map(Listens("b"))
            .process(PassOn())
            .map(Listens("c"))
            .add_sink(Collect([]))
        )
    )
    chain, _ = build_chain(vertex)
    open_chain(chain)
    chain.notify_checkpoint_complete(3)
    chain.notify_checkpoint_aborted(4)
    assert heard == [
        ("a", "complete", 3),
        ("b", "complete", 3),
        ("c", "complete", 3),
        ("a", "aborted", 4),
        ("b", "aborted", 4),
        ("c", "aborted", 4),
    ]


def test_initialize_state_asks_for_each_operators_restore_by_its_id() -> None:
    vertex = single_vertex(
        lambda env: env.from_collection([0]).map(Tracked("a")).process(PassOn()).add_sink(Collect([]))
    )
    chain, _ = build_chain(vertex)
    asked = []
    chain.initialize_state(lambda operator_id: asked.append(operator_id))
    assert asked == [operator.context.operator_id for operator in chain.order]
    assert asked == [node.operator_id for node in vertex.nodes]
