"""Fused runs of map / filter / flat_map, possibly headed by a running keyed reduce (one generated loop per chain
run), behave exactly like the operators one after another: same values, same order, the same timestamps per
value, the reduce's state snapshotted and restored as its own, and failures that name the member whose function
failed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend
from fluvial.runtime.fused_loop import Step, fused_loop
from fluvial.runtime.operators.base import failing_operator
from fluvial.runtime.operators.fused import FusedOperator
from fluvial.runtime.records import RecordBatch
from fluvial.testing import OperatorHarness

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just(Step.MAP), st.integers(-3, 3)),
        st.tuples(st.just(Step.FILTER), st.integers(2, 4)),
        st.tuples(st.just(Step.FLAT_MAP), st.integers(0, 2)),
    ),
    min_size=1,
    max_size=6,
)


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
    names = [f"op{i}" for i in range(len(steps))]
    run = fused_loop([s for s, _ in steps], [function_of(s, p) for s, p in steps], names)
    assert run(values) == one_after_another(steps, values)
    assert run(range(len(values))) == one_after_another(steps, list(range(len(values))))


def fused(*describe, restore=None, state_backend=None) -> tuple[FusedOperator, OperatorHarness]:
    """The members as harnessed operators, fused as a chain fuses them; output captured by the first member's
    harness."""
    harnesses = [
        OperatorHarness.of(lambda s, d=d, i=i: d(s).name(f"op{i}"), state_backend=state_backend)
        for i, d in enumerate(describe)
    ]
    operator = FusedOperator([h.operator for h in harnesses])
    operator.setup(harnesses[0].operator.output)
    state = harnesses[0]._restore_from(restore) if restore else None
    operator.initialize_state(state)
    operator.open()
    return operator, harnesses[0]


def test_timestamps_follow_their_values_through_flat_maps_and_filters():
    operator, harness = fused(
        lambda s: s.flat_map(lambda v: [v, v + 1]),
        lambda s: s.filter(lambda v: v % 3),
        lambda s: s.map(lambda v: v * 10),
    )
    operator.process_batch(RecordBatch([1, 5], [100, 500]))
    assert [(r.value, r.timestamp) for r in harness.output()] == [(10, 100), (20, 100), (50, 500)]


@pytest.mark.parametrize(
    "result, error, message",
    [
        (None, InvalidJobError, "the flat_map function of 'op1' returned None for 4"),
        (7, TypeError, "not iterable"),
    ],
)
def test_a_flat_map_result_that_cannot_be_iterated_names_its_operator(result, error, message):
    operator, _ = fused(
        lambda s: s.map(lambda v: v * 2), lambda s: s.flat_map(lambda v: result), lambda s: s.map(lambda v: v)
    )
    with pytest.raises(error, match=message) as failure:
        operator.process_batch(RecordBatch([2]))
    assert failing_operator(failure.value) == "op1"


def test_a_job_whose_flat_map_returns_none_fails_naming_it():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1, 2]).flat_map(lambda v: None if v == 2 else [v]).name("Split").print()
    with pytest.raises(Exception, match="'Split' returned None for 2"):
        env.execute()


def add(a, b):
    return (a[0], a[1] + b[1])


KEYED = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)]


@pytest.mark.parametrize("backend", [None, "rocksdb"])
def test_a_reduce_headed_run_emits_what_the_operators_would_and_restores_its_state(backend, tmp_path):
    if backend == "rocksdb":
        backend = EmbeddedRocksDBStateBackend()
        backend.set_db_storage_paths(str(tmp_path))
    members = (
        lambda s: s.key_by(lambda r: r[0]).reduce(add),
        lambda s: s.filter(lambda r: r[1] % 2),
        lambda s: s.flat_map(lambda r: [r, (r[0].upper(), r[1])]),
    )
    operator, harness = fused(*members, state_backend=backend)
    operator.process_batch(RecordBatch(KEYED[:4]))
    operator.process_batch(RecordBatch(KEYED[4:], [50, 60]))
    # running sums a1 b2 a4 c4 | b7 a10; the odd ones pass, each twice
    assert [(r.value, r.timestamp) for r in harness.output()] == [
        (("a", 1), None),
        (("A", 1), None),
        (("b", 7), 50),
        (("B", 7), 50),
    ]
    harness.operator = operator  # the harness snapshots the fused operator through the real checkpoint path
    snapshot = harness.snapshot()
    operator.close()
    restored, output = fused(*members, restore=[snapshot])
    restored.process_batch(RecordBatch([("a", 1), ("c", 1)]))
    assert output.values() == [("a", 11), ("A", 11), ("c", 5), ("C", 5)]


def test_an_unhashable_key_in_a_fused_reduce_is_the_key_by_error():
    operator, _ = fused(lambda s: s.key_by(lambda r: r[0]).reduce(add), lambda s: s.map(lambda r: r))
    with pytest.raises(InvalidJobError, match="unhashable key of type list") as failure:
        operator.process_batch(RecordBatch([(["x"], 1)]))
    assert failing_operator(failure.value).startswith("key_by("), "as where the key is computed to partition"


@pytest.mark.parametrize("timestamps", [None, [5]])
def test_a_failing_key_selector_in_a_fused_reduce_is_named_as_the_key_by(timestamps):
    def no_such_field(record):
        return record["missing"]

    operator, _ = fused(lambda s: s.key_by(no_such_field).reduce(add), lambda s: s.map(lambda r: r))
    with pytest.raises(TypeError) as failure:  # the generated loop, or the reduce's own (timestamped records)
        operator.process_batch(RecordBatch([("a", 1)], timestamps))
    assert failing_operator(failure.value).startswith("key_by(") and "no_such_field" in failing_operator(failure.value)
