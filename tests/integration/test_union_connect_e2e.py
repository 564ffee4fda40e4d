"""union of several streams; connect with CoMap / CoFlatMap / CoProcess; keyed connect sharing state."""

from __future__ import annotations

from collections import Counter

import pytest

from fluvial.datastream import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    StreamExecutionEnvironment,
)
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ListStateDescriptor, ValueStateDescriptor
from fluvial.testing import ExecutionMode, environment


def _env(mode: ExecutionMode, parallelism: int = 2) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_union_of_three_streams_has_every_record_once(parallelism, mode):
    env = _env(mode, parallelism)
    a = env.from_source(NumberSequenceSource(0, 999)).map(lambda x: ("a", x))
    b = env.from_collection([f"s{i}" for i in range(300)]).map(lambda s: ("b", s))
    c = env.from_source(NumberSequenceSource(5000, 5499)).filter(lambda x: x % 2 == 0).map(lambda x: ("c", x))
    results = list(a.union(b, c).map(lambda p: p).execute_and_collect())
    assert Counter(tag for tag, _ in results) == {"a": 1000, "b": 300, "c": 250}
    assert sorted(v for t, v in results if t == "a") == list(range(1000))
    assert sorted(v for t, v in results if t == "b") == sorted(f"s{i}" for i in range(300))
    assert sorted(v for t, v in results if t == "c") == list(range(5000, 5500, 2))


@pytest.mark.timeout(60)
def test_union_of_stream_with_itself_doubles_it(mode):
    env = _env(mode)
    s = env.from_collection([1, 2, 3])
    assert sorted(s.union(s).execute_and_collect(limit=100)) == [1, 1, 2, 2, 3, 3]


class Label(CoMapFunction):
    def map1(self, value):
        return f"int:{value}"

    def map2(self, value):
        return f"str:{value.upper()}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_connect_co_map(parallelism, mode):
    env = _env(mode, parallelism)
    ints = env.from_source(NumberSequenceSource(1, 200))
    strs = env.from_collection(["x", "y", "z"])
    results = list(ints.connect(strs).map(Label()).execute_and_collect())
    assert sorted(results) == sorted([f"int:{i}" for i in range(1, 201)] + ["str:X", "str:Y", "str:Z"])


class Explode(CoFlatMapFunction):
    def flat_map1(self, value):
        return [value] * (value % 3)

    def flat_map2(self, value):
        yield from value.split(",")


@pytest.mark.timeout(60)
def test_connect_co_flat_map(mode):
    env = _env(mode)
    results = list(
        env.from_collection(list(range(10)))
        .connect(env.from_collection(["a,b", "c"]))
        .flat_map(Explode())
        .execute_and_collect()
    )
    expected = [v for v in range(10) for _ in range(v % 3)] + ["a", "b", "c"]
    assert Counter(map(str, results)) == Counter(map(str, expected))


class Tagger(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield ("left", value)

    def process_element2(self, value, ctx):
        yield ("right", value)
        yield ("right", -value)


@pytest.mark.timeout(60)
def test_connect_co_process(mode):
    env = _env(mode)
    left = env.from_source(NumberSequenceSource(1, 50))
    right = env.from_source(NumberSequenceSource(100, 109))
    results = list(left.connect(right).process(Tagger()).execute_and_collect())
    assert sorted(v for t, v in results if t == "left") == list(range(1, 51))
    assert sorted(v for t, v in results if t == "right") == sorted(
        list(range(100, 110)) + [-v for v in range(100, 110)]
    )


class JoinOrdersWithPayments(KeyedCoProcessFunction):
    """Keyed state shared by both inputs: orders (input 1) and payments (input 2) of one order id meet in
    whichever order they arrive; each match is emitted once."""

    def open(self, runtime_context):
        self.order = runtime_context.get_state(ValueStateDescriptor("order"))
        self.payments = runtime_context.get_list_state(ListStateDescriptor("payments"))

    def process_element1(self, value, ctx):
        self.order.update(value)
        for payment in self.payments.get():
            yield ctx.get_current_key(), value[1], payment[1]
        self.payments.clear()

    def process_element2(self, value, ctx):
        order = self.order.value()
        if order is None:
            self.payments.add(value)
        else:
            yield ctx.get_current_key(), order[1], value[1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_keyed_connect_shares_state_between_inputs(parallelism, mode):
    orders = [(i, f"order{i}") for i in range(200)]
    payments = [(i % 200, f"pay{i}") for i in range(0, 600, 3)]
    env = _env(mode, parallelism)
    o = env.from_collection(orders)
    p = env.from_collection(payments)
    joined = o.connect(p).key_by(lambda x: x[0], lambda x: x[0]).process(JoinOrdersWithPayments())
    results = list(joined.execute_and_collect())
    expected = [(oid, f"order{oid}", pay) for oid, pay in payments]
    assert sorted(results) == sorted(expected)


class KeyedCoMapCounter(CoMapFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("n"))

    def _bump(self, value):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        return value[0], n

    def map1(self, value):
        return self._bump(value)

    def map2(self, value):
        return self._bump(value)


@pytest.mark.timeout(60)
def test_keyed_co_map_counts_both_inputs_per_key(mode):
    env = _env(mode)
    left = env.from_collection([(k, "l") for k in "aabbc"])
    right = env.from_collection([(k, "r") for k in "abccc"])
    results = list(
        left.connect(right).key_by(lambda x: x[0], lambda x: x[0]).map(KeyedCoMapCounter()).execute_and_collect()
    )
    final = {}
    for key, n in results:
        final[key] = max(final.get(key, 0), n)
    assert final == {"a": 3, "b": 3, "c": 4}
    assert sorted(n for k, n in results if k == "c") == [1, 2, 3, 4]
