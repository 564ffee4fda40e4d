"""Fused runs of map / filter / flat_map (one generated loop per chain run) behave exactly like the operators
one after another: same values, same order, the same timestamps per value, and failures that name the member
whose function failed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.runtime.basic_operators import FusedStatelessOperator, Step, _fused_loop
from fluvial.runtime.operators import failing_operator
from fluvial.runtime.records import RecordBatch
from fluvial.testing import OperatorHarness

STEPS = st.lists(st.one_of(
    st.tuples(st.just(Step.MAP), st.integers(-3, 3)),
    st.tuples(st.just(Step.FILTER), st.integers(2, 4)),
    st.tuples(st.just(Step.FLAT_MAP), st.integers(0, 2)),
), min_size=1, max_size=6)


def function_of(step: Step, parameter: int):
    if step is Step.MAP:
        return lambda v: v * 2 + parameter
    if step is Step.FILTER:
        return lambda v: v % parameter != 0
    return lambda v: [v + i for i in range(parameter)]


def one_after_another(steps, values):
    for step, parameter in steps:
        fn = function_of(step, parameter)
        if step is Step.MAP:
            values = [fn(v) for v in values]
        elif step is Step.FILTER:
            values = [v for v in values if fn(v)]
        else:
            values = [item for v in values for item in fn(v)]
    return values


@settings(max_examples=150, deadline=None)
@given(STEPS, st.lists(st.integers(-50, 50), max_size=30))
def test_a_fused_loop_equals_the_operators_one_after_another(steps, values):
    run = _fused_loop([s for s, _ in steps], [function_of(s, p) for s, p in steps], [f"op{i}" for i in range(len(steps))])
    assert run(values) == one_after_another(steps, values)
    assert run(range(len(values))) == one_after_another(steps, list(range(len(values))))


def fused(*describe) -> FusedStatelessOperator:
    """The members as harnessed operators, fused; output captured by the first member's harness."""
    harnesses = [OperatorHarness.of(lambda s, d=d, i=i: d(s).name(f"op{i}")) for i, d in enumerate(describe)]
    operator = FusedStatelessOperator([h.operator for h in harnesses])
    operator.setup(harnesses[0].operator.output)
    operator.open()
    return operator, harnesses[0]


def test_timestamps_follow_their_values_through_flat_maps_and_filters():
    operator, harness = fused(lambda s: s.flat_map(lambda v: [v, v + 1]), lambda s: s.filter(lambda v: v % 3),
                              lambda s: s.map(lambda v: v * 10))
    operator.process_batch(RecordBatch([1, 5], [100, 500]))
    assert [(r.value, r.timestamp) for r in harness.output()] == [(10, 100), (20, 100), (50, 500)]


@pytest.mark.parametrize("result, error, message", [
    (None, InvalidJobError, "the flat_map function of 'op1' returned None for 4"),
    (7, TypeError, "not iterable"),
])
def test_a_flat_map_result_that_cannot_be_iterated_names_its_operator(result, error, message):
    operator, _ = fused(lambda s: s.map(lambda v: v * 2), lambda s: s.flat_map(lambda v: result),
                        lambda s: s.map(lambda v: v))
    with pytest.raises(error, match=message) as failure:
        operator.process_batch(RecordBatch([2]))
    assert failing_operator(failure.value) == "op1"


def test_a_job_whose_flat_map_returns_none_fails_naming_it():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1, 2]).flat_map(lambda v: None if v == 2 else [v]).name("Split").print()
    with pytest.raises(Exception, match="'Split' returned None for 2"):
        env.execute()
