"""Every partitioner end to end at parallelism 3: a map records which subtask saw which record."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from fluvial.datastream import MapFunction, Partitioner, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import ExecutionMode, environment

N = 3000


class TagSubtask(MapFunction):
    """Emits (subtask index seen in open, value): each subtask must get its own copy of the function."""

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.parallelism = runtime_context.get_number_of_parallel_subtasks()

    def map(self, value):
        return (self.index, value)


def _env(mode: ExecutionMode, parallelism: int = 3) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


def _run(stream, parallelism: int = 3) -> list[tuple[int, int]]:
    tagged = stream.map(TagSubtask()).set_parallelism(parallelism)
    return list(tagged.execute_and_collect())


def _by_subtask(pairs):
    seen = defaultdict(list)
    for index, value in pairs:
        seen[index].append(value)
    return seen


def _source(env, n: int = N, parallelism: int = 1):
    return env.from_source(NumberSequenceSource(0, n - 1)).set_parallelism(parallelism)


@pytest.mark.timeout(60)
def test_each_parallel_subtask_knows_its_own_index(mode):
    env = _env(mode)
    pairs = _run(_source(env, parallelism=3).forward())
    assert sorted(v for _, v in pairs) == list(range(N))
    assert set(_by_subtask(pairs)) == {0, 1, 2}


@pytest.mark.timeout(60)
def test_rebalance_spreads_evenly_over_all_subtasks(mode):
    env = _env(mode)
    pairs = _run(_source(env).rebalance())
    seen = _by_subtask(pairs)
    assert sorted(v for _, v in pairs) == list(range(N))
    assert sorted(seen) == [0, 1, 2]
    assert {len(values) for values in seen.values()} == {N // 3}
    # round robin: consecutive records go to consecutive subtasks
    owner = {v: i for i, v in pairs}
    assert all(owner[v] != owner[v + 1] for v in range(N - 1))


@pytest.mark.timeout(60)
def test_rescale_from_one_to_three_reaches_every_subtask_evenly(mode):
    env = _env(mode)
    pairs = _run(_source(env).rescale())
    seen = _by_subtask(pairs)
    assert sorted(v for _, v in pairs) == list(range(N))
    assert {len(values) for values in seen.values()} == {N // 3}
    assert sorted(seen) == [0, 1, 2]


@pytest.mark.timeout(60)
def test_rescale_pointwise_from_three_to_three_keeps_subtask(mode):
    env = _env(mode)
    source = _source(env, parallelism=3).map(TagSubtask()).set_parallelism(3)
    pairs = list(source.rescale().map(TagSubtask()).set_parallelism(3).execute_and_collect())
    # pairs: (consumer index, (producer index, value)); 3 -> 3 pointwise is one to one
    assert len(pairs) == N
    assert all(consumer == producer for consumer, (producer, _) in pairs)


@pytest.mark.timeout(60)
def test_shuffle_delivers_every_record_once_to_several_subtasks(mode):
    env = _env(mode)
    pairs = _run(_source(env).shuffle())
    seen = _by_subtask(pairs)
    assert sorted(v for _, v in pairs) == list(range(N))
    assert sorted(seen) == [0, 1, 2]
    assert all(len(values) > N // 10 for values in seen.values())


@pytest.mark.timeout(60)
def test_broadcast_every_subtask_sees_every_record(mode):
    env = _env(mode)
    pairs = _run(_source(env, n=500).broadcast())
    seen = _by_subtask(pairs)
    assert sorted(seen) == [0, 1, 2]
    for index in range(3):
        assert sorted(seen[index]) == list(range(500))
    assert len(pairs) == 1500


@pytest.mark.timeout(60)
def test_global_sends_everything_to_subtask_zero(mode):
    env = _env(mode)
    pairs = _run(_source(env, parallelism=3).global_())
    assert {index for index, _ in pairs} == {0}
    assert sorted(v for _, v in pairs) == list(range(N))


@pytest.mark.timeout(60)
def test_forward_keeps_records_on_their_subtask(mode):
    env = _env(mode)
    tagged = _source(env, parallelism=3).map(TagSubtask()).set_parallelism(3)
    pairs = list(tagged.forward().map(TagSubtask()).set_parallelism(3).execute_and_collect())
    assert len(pairs) == N
    assert all(consumer == producer for consumer, (producer, _) in pairs)
    assert {consumer for consumer, _ in pairs} == {0, 1, 2}


class ModuloPartitioner(Partitioner):
    def partition(self, key, num_partitions):
        return key % num_partitions


@pytest.mark.timeout(60)
def test_partition_custom_routes_by_the_users_rule(mode):
    env = _env(mode)
    pairs = _run(_source(env).partition_custom(ModuloPartitioner(), lambda v: v * 7))
    assert sorted(v for _, v in pairs) == list(range(N))
    assert all(index == (v * 7) % 3 for index, v in pairs)


@pytest.mark.timeout(60)
def test_partition_custom_with_plain_callables(mode):
    env = _env(mode)
    pairs = _run(_source(env, n=300).partition_custom(lambda key, n: 2 if key else 0, lambda v: v % 5 == 0))
    assert all(index == (2 if v % 5 == 0 else 0) for index, v in pairs)
    assert len(pairs) == 300


@pytest.mark.timeout(60)
def test_key_by_sends_equal_keys_to_one_subtask(mode):
    env = _env(mode)
    words = [f"w{i % 37}" for i in range(2000)]
    stream = env.from_collection(words).key_by(lambda w: w).map(TagSubtask()).set_parallelism(3)
    pairs = list(stream.execute_and_collect())
    assert Counter(w for _, w in pairs) == Counter(words)
    owners = defaultdict(set)
    for index, word in pairs:
        owners[word].add(index)
    assert all(len(indices) == 1 for indices in owners.values())
    assert len({next(iter(i)) for i in owners.values()}) > 1  # 37 keys do not all land on one subtask


@pytest.mark.timeout(60)
def test_key_by_from_parallel_producers_agrees_across_producers(mode):
    env = _env(mode)
    stream = _source(env, parallelism=3).key_by(lambda v: v % 10).map(TagSubtask()).set_parallelism(3)
    pairs = list(stream.execute_and_collect())
    owners = defaultdict(set)
    for index, value in pairs:
        owners[value % 10].add(index)
    assert len(pairs) == N
    assert all(len(indices) == 1 for indices in owners.values())


@pytest.mark.timeout(60)
def test_default_partitioner_between_different_parallelisms_is_rebalance(mode):
    env = _env(mode)
    pairs = _run(_source(env, n=900, parallelism=1), parallelism=3)
    seen = _by_subtask(pairs)
    assert {len(values) for values in seen.values()} == {300}


@pytest.mark.timeout(60)
def test_rescale_two_to_four_feeds_contiguous_blocks(mode):
    env = _env(mode)
    producers = _source(env, n=4000, parallelism=2).map(TagSubtask()).set_parallelism(2)
    pairs = list(producers.rescale().map(TagSubtask()).set_parallelism(4).execute_and_collect())
    assert len(pairs) == 4000
    routes = {(producer, consumer) for consumer, (producer, _) in pairs}
    assert routes == {(0, 0), (0, 1), (1, 2), (1, 3)}  # Flink's pointwise wiring


@pytest.mark.timeout(60)
def test_rescale_four_to_two_merges_neighbours(mode):
    env = _env(mode)
    producers = _source(env, n=4000, parallelism=4).map(TagSubtask()).set_parallelism(4)
    pairs = list(producers.rescale().map(TagSubtask()).set_parallelism(2).execute_and_collect())
    assert len(pairs) == 4000
    routes = {(producer, consumer) for consumer, (producer, _) in pairs}
    assert routes == {(0, 0), (1, 0), (2, 1), (3, 1)}


class KeyedCounter(MapFunction):
    """A map on a KeyedStream may use keyed state, as a Flink RichMapFunction after keyBy."""

    def open(self, runtime_context):
        from fluvial.datastream.state import ValueStateDescriptor

        self.count = runtime_context.get_state(ValueStateDescriptor("n"))
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        return self.index, value, n


@pytest.mark.timeout(60)
def test_keyed_map_state_lives_on_the_subtask_owning_the_key(mode):
    env = _env(mode)
    words = [f"w{(i * 7) % 13}" for i in range(1300)]
    results = list(env.from_collection(words).key_by(lambda w: w).map(KeyedCounter()).execute_and_collect())
    final: dict = {}
    owners = defaultdict(set)
    for index, word, n in results:
        final[word] = max(final.get(word, 0), n)
        owners[word].add(index)
    assert final == dict(Counter(words))
    assert all(len(o) == 1 for o in owners.values())
