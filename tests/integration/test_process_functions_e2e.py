"""KeyedProcessFunction with Value/List/Map state, get_current_key, and ProcessFunction side outputs, run as
real jobs and checked against plain Python."""

from __future__ import annotations

from collections import Counter

import pytest

from fluvial.common import Types
from fluvial.datastream import KeyedProcessFunction, OutputTag, ProcessFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from fluvial.testing import ExecutionMode, environment

WORDS = [f"k{(i * 31) % 23}" for i in range(3000)]


def _env(mode: ExecutionMode, parallelism: int = 2) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


class CountWithValueState(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        current = (self.count.value() or 0) + 1
        self.count.update(current)
        yield ctx.get_current_key(), current


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_value_state_counts_per_key_match_python(parallelism, mode):
    env = _env(mode, parallelism)
    results = list(env.from_collection(WORDS).key_by(lambda w: w).process(CountWithValueState()).execute_and_collect())
    assert len(results) == len(WORDS)
    final = {}
    for key, count in results:
        assert count == final.get(key, 0) + 1  # per key, counts arrive in order 1, 2, 3, ...
        final[key] = count
    assert final == dict(Counter(WORDS))


class HistoryWithListState(KeyedProcessFunction):
    def open(self, runtime_context):
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen", Types.INT()))

    def process_element(self, value, ctx):
        self.seen.add(value)
        history = list(self.seen.get())
        if len(history) == 4:
            self.seen.clear()
            yield ctx.get_current_key(), history


@pytest.mark.timeout(60)
def test_list_state_collects_groups_of_four_per_key(mode):
    env = _env(mode)
    numbers = env.from_source(NumberSequenceSource(0, 1999)).set_parallelism(2)
    results = list(numbers.key_by(lambda x: x % 5).process(HistoryWithListState()).execute_and_collect())
    assert len(results) == 2000 // 4
    assert Counter(key for key, _ in results) == {k: 100 for k in range(5)}
    for key, group in results:
        assert len(group) == 4 and all(v % 5 == key for v in group)
    flat = sorted(v for _, group in results for v in group)
    assert flat == list(range(2000))


class DistinctWithMapState(KeyedProcessFunction):
    """Per user: emit an item the first time that user sees it, and the user's distinct count at the end."""

    def open(self, runtime_context):
        self.items = runtime_context.get_map_state(MapStateDescriptor("items", Types.STRING(), Types.INT()))

    def process_element(self, value, ctx):
        user, item = value
        if self.items.contains(item):
            self.items.put(item, self.items.get(item) + 1)
            return
        self.items.put(item, 1)
        yield user, item, len(list(self.items.keys()))


@pytest.mark.timeout(60)
def test_map_state_tracks_distinct_items_per_key(mode):
    events = [(f"u{i % 7}", f"item{(i * 13) % 11}") for i in range(700)]
    env = _env(mode)
    results = list(
        env.from_collection(events).key_by(lambda e: e[0]).process(DistinctWithMapState()).execute_and_collect()
    )
    expected_pairs = {(u, it) for u, it in events}
    assert {(u, it) for u, it, _ in results} == expected_pairs
    assert len(results) == len(expected_pairs)
    per_user_max = {}
    for user, _, distinct in results:
        per_user_max[user] = max(per_user_max.get(user, 0), distinct)
    assert per_user_max == {u: len({it for uu, it in events if uu == u}) for u in {u for u, _ in events}}


class KeyEcho(KeyedProcessFunction):
    def process_element(self, value, ctx):
        return [(ctx.get_current_key(), value)]


@pytest.mark.timeout(60)
def test_get_current_key_is_the_key_of_each_record(mode):
    env = _env(mode)
    results = list(
        env.from_collection(list(range(200))).key_by(lambda x: f"mod{x % 3}").process(KeyEcho()).execute_and_collect()
    )
    assert sorted(results, key=lambda p: p[1]) == [(f"mod{x % 3}", x) for x in range(200)]


EVENS = OutputTag("evens", Types.INT())
BIG = OutputTag("big", Types.INT())


class SplitNumbers(ProcessFunction):
    def process_element(self, value, ctx):
        if value % 2 == 0:
            yield EVENS, value
        if value > 90:
            yield BIG, value * 10
        yield str(value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_side_outputs_receive_tagged_values(parallelism, mode):
    env = _env(mode, parallelism)
    main = env.from_source(NumberSequenceSource(1, 100)).process(SplitNumbers(), Types.STRING())
    evens = main.get_side_output(EVENS).map(lambda x: ("even", x))
    big = main.get_side_output(BIG).map(lambda x: ("big", x))
    union = main.map(lambda s: ("main", s)).union(evens, big)
    results = list(union.execute_and_collect())
    by_tag: dict = {}
    for tag, value in results:
        by_tag.setdefault(tag, []).append(value)
    assert sorted(by_tag["main"]) == sorted(str(x) for x in range(1, 101))
    assert sorted(by_tag["even"]) == list(range(2, 101, 2))
    assert sorted(by_tag["big"]) == [x * 10 for x in range(91, 101)]


@pytest.mark.timeout(60)
def test_side_output_of_keyed_process_function(mode):
    late = OutputTag("odd-count")

    class Counting(KeyedProcessFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("c"))

        def process_element(self, value, ctx):
            n = (self.count.value() or 0) + 1
            self.count.update(n)
            if n % 2:
                yield late, (ctx.get_current_key(), n)
            else:
                yield ctx.get_current_key(), n

    env = _env(mode)
    main = env.from_collection(WORDS).key_by(lambda w: w).process(Counting())
    side_results = list(main.get_side_output(late).execute_and_collect())
    expected = Counter(WORDS)
    assert Counter(k for k, _ in side_results) == {k: (c + 1) // 2 for k, c in expected.items()}


@pytest.mark.timeout(60)
def test_process_function_returning_list_and_none(mode):
    class Sometimes(ProcessFunction):
        def process_element(self, value, ctx):
            if value % 3 == 0:
                return None
            return [value, value]

    env = _env(mode, 1)
    results = list(env.from_collection(list(range(30))).process(Sometimes()).execute_and_collect())
    assert results == [v for x in range(30) if x % 3 for v in (x, x)]


class SplitWithOwnTag(ProcessFunction):
    """Keeps its OutputTag as an attribute: each subtask's copy holds an equal tag, which must still route."""

    def __init__(self):
        self.tag = OutputTag("negatives", Types.INT())

    def process_element(self, value, ctx):
        if value < 0:
            yield self.tag, value
        else:
            yield value


@pytest.mark.timeout(60)
def test_side_output_tag_held_by_the_function_routes_in_every_subtask(mode):
    env = _env(mode, 2)
    function = SplitWithOwnTag()
    data = list(range(-300, 300))
    main = env.from_source(NumberSequenceSource(0, len(data) - 1)).map(lambda i: i - 300).process(function)
    side = main.get_side_output(OutputTag("negatives", Types.INT()))
    results = list(main.map(lambda v: ("main", v)).union(side.map(lambda v: ("side", v))).execute_and_collect())
    assert sorted(v for t, v in results if t == "side") == list(range(-300, 0))
    assert sorted(v for t, v in results if t == "main") == list(range(0, 300))
