"""The running keyed reduce on both state backends: on the heap it folds record by record; on RocksDB it groups
each buffer by key and touches each key's state once per buffer. Either way it emits one aggregate per record,
in record order, and its state snapshots and restores the same."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend
from fluvial.testing import OperatorHarness


def add(a, b):
    return (a[0], a[1] + b[1])


def expected_running(records):
    totals: dict = {}
    out = []
    for key, value in records:
        totals[key] = totals.get(key, 0) + value
        out.append((key, totals[key]))
    return out


def reduce_harness(backend, **options) -> OperatorHarness:
    return OperatorHarness.of(lambda s: s.key_by(lambda r: r[0]).reduce(add), state_backend=backend, **options)


@pytest.fixture(scope="module")
def rocksdb(tmp_path_factory):
    backend = EmbeddedRocksDBStateBackend()
    backend.set_db_storage_paths(str(tmp_path_factory.mktemp("rocksdb")))
    return backend


BUFFERS = st.lists(st.lists(st.tuples(st.sampled_from("abcde"), st.integers(-5, 5)), max_size=25), max_size=4)


@settings(max_examples=40, deadline=None)
@given(buffers=BUFFERS)
def test_both_backends_emit_the_running_aggregate_of_every_record_in_order(rocksdb, buffers):
    for backend in (None, rocksdb):
        with reduce_harness(backend).open() as harness:
            for buffer in buffers:
                harness.process_elements(buffer)
            assert harness.values() == expected_running([r for buffer in buffers for r in buffer])


def test_grouped_folding_restores_and_goes_on(rocksdb):
    with reduce_harness(rocksdb).open() as harness:
        harness.process_elements([("a", 1), ("b", 2), ("a", 3)], [10, 20, 30])
        assert [(r.value, r.timestamp) for r in harness.output()] == [(("a", 1), 10), (("b", 2), 20), (("a", 4), 30)]
        snapshot = harness.snapshot()
    for backend in (None, rocksdb):
        with reduce_harness(backend).open(restore=[snapshot]) as restored:
            restored.process_elements([("b", 1), ("a", 1)])
            assert restored.values() == [("b", 3), ("a", 5)]


def test_an_unhashable_key_is_explained_on_both_backends(rocksdb):
    for backend in (None, rocksdb):
        with OperatorHarness.of(lambda s: s.key_by(lambda r: r[0]).reduce(add), state_backend=backend).open() as h:
            with pytest.raises(InvalidJobError, match="unhashable key of type list"):
                h.process_elements([(["unhashable"], 1)])
