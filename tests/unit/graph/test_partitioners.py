"""Pointwise wiring (DESIGN 2.1): which consumer subtasks a producer feeds over a POINTWISE edge, as hypothesis
properties."""

from __future__ import annotations

from collections import Counter
from itertools import chain

from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.graph.partitioners import pointwise_targets

FAST = settings(max_examples=150, deadline=None)
sizes = st.integers(1, 40)


@FAST
@given(producers=sizes, consumers=sizes)
def test_pointwise_covers_every_consumer(producers, consumers) -> None:
    targets = [pointwise_targets(i, producers, consumers) for i in range(producers)]
    assert all(targets_of_one for targets_of_one in targets)  # every producer feeds someone
    assert set(chain.from_iterable(targets)) == set(range(consumers))


@FAST
@given(n=sizes)
def test_pointwise_equal_sizes_is_one_to_one(n) -> None:
    assert [pointwise_targets(i, n, n) for i in range(n)] == [[i] for i in range(n)]


fewer_producers = st.lists(sizes, min_size=2, max_size=2, unique=True).map(sorted)  # [producers, consumers]
more_producers = fewer_producers.map(lambda pair: pair[::-1])


@FAST
@given(shape=fewer_producers)
def test_pointwise_fewer_producers_give_each_consumer_one_producer(shape) -> None:
    producers, consumers = shape
    targets = [pointwise_targets(i, producers, consumers) for i in range(producers)]
    counts = Counter(chain.from_iterable(targets))
    assert counts == Counter(range(consumers))  # every consumer exactly once
    for block in targets:
        assert block == list(range(block[0], block[-1] + 1))  # contiguous
    sizes_of_blocks = [len(block) for block in targets]
    assert max(sizes_of_blocks) - min(sizes_of_blocks) <= 1


@FAST
@given(shape=more_producers)
def test_pointwise_more_producers_share_consumers_evenly(shape) -> None:
    producers, consumers = shape
    targets = [pointwise_targets(i, producers, consumers) for i in range(producers)]
    assert all(len(block) == 1 for block in targets)
    load = Counter(block[0] for block in targets)
    assert set(load) == set(range(consumers))
    assert max(load.values()) - min(load.values()) <= 1
    assert [block[0] for block in targets] == sorted(block[0] for block in targets)  # contiguous producer runs
