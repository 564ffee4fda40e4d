"""Stateless chains (map / filter / flat_map) run as real jobs, in both execution modes, and compared with plain
Python; collecting results, stopping early and cancelling by closing the iterator."""

from __future__ import annotations

import pytest

from fluvial.common.errors import JobCancelledException
from fluvial.datastream import FilterFunction, FlatMapFunction, MapFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import ExecutionMode, environment, wait_until


def _env(mode: ExecutionMode, parallelism: int) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


def _expected(numbers):
    out = []
    for x in numbers:
        y = x * 3 + 1
        if y % 2 == 0:
            out.extend([y, -y])
    return out


class Triple(MapFunction):
    def map(self, value):
        return value * 3 + 1


class Even(FilterFunction):
    def filter(self, value):
        return value % 2 == 0


class PlusMinus(FlatMapFunction):
    def flat_map(self, value):
        yield value
        yield -value


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_lambda_chain_over_number_sequence(parallelism, mode):
    env = _env(mode, parallelism)
    ds = (
        env.from_source(NumberSequenceSource(1, 5000))
        .map(lambda x: x * 3 + 1)
        .filter(lambda x: x % 2 == 0)
        .flat_map(lambda x: [x, -x])
    )
    result = ds.execute_and_collect(limit=100_000)
    assert sorted(result) == sorted(_expected(range(1, 5001)))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_function_objects_chain_over_collection(parallelism, mode):
    env = _env(mode, parallelism)
    data = list(range(-50, 300))
    ds = env.from_collection(data).map(Triple()).filter(Even()).flat_map(PlusMinus())
    with ds.execute_and_collect() as results:
        collected = list(results)
    assert sorted(collected) == sorted(_expected(data))


@pytest.mark.timeout(60)
def test_parallelism_one_chain_keeps_source_order(mode):
    env = _env(mode, 1)
    ds = env.from_source(NumberSequenceSource(0, 2999)).map(lambda x: x + 1).filter(lambda x: x % 7 != 0)
    assert list(ds.execute_and_collect()) == [x + 1 for x in range(3000) if (x + 1) % 7 != 0]


@pytest.mark.timeout(60)
def test_collection_of_strings_flat_map_words(mode):
    env = _env(mode, 2)
    lines = ["to be or not to be", "that is the question", ""]
    words = env.from_collection(lines).flat_map(lambda line: line.split()).map(str.upper)
    assert sorted(words.execute_and_collect(limit=1000)) == sorted(w.upper() for line in lines for w in line.split())


@pytest.mark.timeout(60)
def test_parallel_source_splits_cover_range_exactly_once(mode):
    env = _env(mode, 2)
    ds = env.from_source(NumberSequenceSource(10, 10_009))
    values = list(ds.execute_and_collect())
    assert len(values) == 10_000
    assert sorted(values) == list(range(10, 10_010))


@pytest.mark.timeout(60)
def test_execute_and_collect_limit_stops_early_on_long_job(mode):
    env = _env(mode, 1)
    ds = env.from_source(NumberSequenceSource(1, 50_000_000)).map(lambda x: x)
    assert ds.execute_and_collect(limit=5) == [1, 2, 3, 4, 5]


@pytest.mark.timeout(60)
def test_closing_collect_iterator_early_cancels_the_job(mode):
    env = _env(mode, 1)
    ds = env.from_source(NumberSequenceSource(1, 50_000_000))
    with ds.execute_and_collect() as results:
        first = [next(results) for _ in range(3)]
        # the sink sends on until its window is full (a TaskManager process's credits, or this buffer's room):
        # it must still stop, and its task be cancelled, once nobody reads
        wait_until(lambda: results._buffer._items.qsize() >= 8, what="the collect sink to fill its window")
    assert first == [1, 2, 3]
    # a closed iterator yields nothing more, and the endless job ends cancelled
    assert list(results) == []
    outcome = results._client.get_job_execution_result()
    with pytest.raises(JobCancelledException):
        outcome.result(timeout=30)


@pytest.mark.timeout(60)
def test_empty_result_after_filter_finishes(mode):
    env = _env(mode, 2)
    ds = env.from_source(NumberSequenceSource(1, 1000)).filter(lambda x: x < 0)
    assert list(ds.execute_and_collect()) == []
