"""KeyedStream reduce / sum / min / max / min_by / max_by as real jobs, with Flink's semantics:
sum/min/max replace only the aggregated field of the key's first record; min_by/max_by emit whole records."""

from __future__ import annotations

import pytest

from fluvial.common import Row
from fluvial.datastream import KeySelector, ReduceFunction, StreamExecutionEnvironment
from fluvial.testing import ExecutionMode, environment

DATA = [
    ("a", 3, "x1"),
    ("b", 5, "y1"),
    ("a", 1, "x2"),
    ("b", 9, "y2"),
    ("a", 7, "x3"),
    ("a", 1, "x4"),
    ("c", 4, "z1"),
    ("b", 2, "y3"),
]


def _env(mode: ExecutionMode, parallelism: int = 2) -> StreamExecutionEnvironment:
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


def _per_key(results, key=lambda r: r[0]):
    out: dict = {}
    for record in results:
        out.setdefault(key(record), []).append(record)
    return out


def _expected_running(records, step, key=lambda r: r[0]):
    """Pure Python: the running aggregate emitted for every record, grouped per key in arrival order."""
    acc: dict = {}
    out: dict = {}
    for record in records:
        k = key(record)
        acc[k] = record if k not in acc else step(acc[k], record)
        out.setdefault(k, []).append(acc[k])
    return out


def _run(stream):
    return list(stream.execute_and_collect())


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_reduce_with_function_object_and_lambda(parallelism, mode):
    class Add(ReduceFunction):
        def reduce(self, a, b):
            return (a[0], a[1] + b[1], b[2])

    env = _env(mode, parallelism)
    obj = _run(env.from_collection(DATA).key_by(lambda r: r[0]).reduce(Add()))
    env = _env(mode, parallelism)
    lam = _run(env.from_collection(DATA).key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1], b[2])))
    expected = _expected_running(DATA, lambda a, b: (a[0], a[1] + b[1], b[2]))
    assert _per_key(obj) == expected
    assert _per_key(lam) == expected


@pytest.mark.timeout(60)
def test_sum_replaces_only_the_summed_field_of_the_first_record(mode):
    env = _env(mode)
    results = _run(env.from_collection(DATA).key_by(lambda r: r[0]).sum(1))
    assert _per_key(results) == {
        "a": [("a", 3, "x1"), ("a", 4, "x1"), ("a", 11, "x1"), ("a", 12, "x1")],
        "b": [("b", 5, "y1"), ("b", 14, "y1"), ("b", 16, "y1")],
        "c": [("c", 4, "z1")],
    }


@pytest.mark.timeout(60)
def test_min_and_max_keep_other_fields_of_the_first_record(mode):
    env = _env(mode)
    mins = _run(env.from_collection(DATA).key_by(lambda r: r[0]).min(1))
    env = _env(mode)
    maxs = _run(env.from_collection(DATA).key_by(lambda r: r[0]).max(1))
    assert _per_key(mins) == {
        "a": [("a", 3, "x1"), ("a", 1, "x1"), ("a", 1, "x1"), ("a", 1, "x1")],
        "b": [("b", 5, "y1"), ("b", 5, "y1"), ("b", 2, "y1")],
        "c": [("c", 4, "z1")],
    }
    assert _per_key(maxs) == {
        "a": [("a", 3, "x1"), ("a", 3, "x1"), ("a", 7, "x1"), ("a", 7, "x1")],
        "b": [("b", 5, "y1"), ("b", 9, "y1"), ("b", 9, "y1")],
        "c": [("c", 4, "z1")],
    }


@pytest.mark.timeout(60)
def test_min_by_and_max_by_keep_whole_records_first_on_ties(mode):
    env = _env(mode)
    min_by = _run(env.from_collection(DATA).key_by(lambda r: r[0]).min_by(1))
    env = _env(mode)
    max_by = _run(env.from_collection(DATA).key_by(lambda r: r[0]).max_by(1))
    assert _per_key(min_by) == {
        # ("a", 1, "x4") ties with ("a", 1, "x2"): the earlier record stays
        "a": [("a", 3, "x1"), ("a", 1, "x2"), ("a", 1, "x2"), ("a", 1, "x2")],
        "b": [("b", 5, "y1"), ("b", 5, "y1"), ("b", 2, "y3")],
        "c": [("c", 4, "z1")],
    }
    assert _per_key(max_by) == {
        "a": [("a", 3, "x1"), ("a", 3, "x1"), ("a", 7, "x3"), ("a", 7, "x3")],
        "b": [("b", 5, "y1"), ("b", 9, "y2"), ("b", 9, "y2")],
        "c": [("c", 4, "z1")],
    }


def _rows():
    return [Row(name=k, amount=v, tag=t) for k, v, t in DATA]


@pytest.mark.timeout(60)
def test_row_aggregations_by_field_name(mode):
    env = _env(mode)
    sums = _run(env.from_collection(_rows()).key_by(lambda r: r["name"]).sum("amount"))
    env = _env(mode)
    max_by = _run(env.from_collection(_rows()).key_by(lambda r: r.name).max_by("amount"))
    env = _env(mode)
    mins = _run(env.from_collection(_rows()).key_by(lambda r: r.name).min("amount"))
    final = {k: v[-1] for k, v in _per_key(sums, key=lambda r: r["name"]).items()}
    assert final == {
        "a": Row(name="a", amount=12, tag="x1"),
        "b": Row(name="b", amount=16, tag="y1"),
        "c": Row(name="c", amount=4, tag="z1"),
    }
    assert all(isinstance(r, Row) and r.as_dict().keys() == {"name", "amount", "tag"} for r in sums)
    assert {k: v[-1] for k, v in _per_key(max_by, key=lambda r: r.name).items()} == {
        "a": Row(name="a", amount=7, tag="x3"),
        "b": Row(name="b", amount=9, tag="y2"),
        "c": Row(name="c", amount=4, tag="z1"),
    }
    assert {k: v[-1] for k, v in _per_key(mins, key=lambda r: r.name).items()} == {
        "a": Row(name="a", amount=1, tag="x1"),
        "b": Row(name="b", amount=2, tag="y1"),
        "c": Row(name="c", amount=4, tag="z1"),
    }


@pytest.mark.timeout(60)
def test_row_sum_does_not_mutate_the_input_rows():
    """Thread mode: the collection's own Row objects flow through the job in this process (in process mode
    the job gets copies, so nothing of the test's could change)."""
    rows = _rows()
    env = _env(ExecutionMode.THREADS, 1)
    _run(env.from_collection(rows).key_by(lambda r: r.name).sum("amount"))
    assert [r.amount for r in rows] == [v for _, v, _ in DATA]


@pytest.mark.timeout(60)
def test_positional_row_sum_by_index(mode):
    env = _env(mode)
    rows = [Row(k, v) for k, v, _ in DATA]
    results = _run(env.from_collection(rows).key_by(lambda r: r[0]).sum(1))
    assert {k: v[-1] for k, v in _per_key(results).items()} == {"a": Row("a", 12), "b": Row("b", 16), "c": Row("c", 4)}


@pytest.mark.timeout(60)
def test_sum_of_plain_numbers_and_word_count_at_scale(mode):
    words = [f"w{(i * 7919) % 101}" for i in range(20_000)]
    env = _env(mode)
    counts = _run(env.from_collection(words).map(lambda w: (w, 1)).key_by(lambda p: p[0]).sum(1))
    final = {}
    for word, count in counts:
        final[word] = max(final.get(word, 0), count)
    expected = {}
    for w in words:
        expected[w] = expected.get(w, 0) + 1
    assert final == expected
    assert len(counts) == len(words)
    env = _env(mode)
    numbers = _run(env.from_collection(list(range(1, 101))).key_by(lambda x: x % 2).sum())
    # plain numbers: the running sum per key (odd: 1, 4, 9, ... 2500; even: 2, 6, 12, ... 2550)
    assert sorted(numbers) == sorted(
        [sum(range(1, k + 1, 2)) for k in range(1, 101, 2)] + [sum(range(2, k + 1, 2)) for k in range(2, 101, 2)]
    )


class ModThree(KeySelector):
    def get_key(self, value):
        return value % 3


@pytest.mark.timeout(60)
def test_key_selector_object_and_collecting_a_keyed_stream(mode):
    env = _env(mode)
    assert sorted(env.from_collection(list(range(10))).key_by(ModThree()).execute_and_collect()) == list(range(10))
    env = _env(mode)
    sums = list(env.from_collection(list(range(10))).key_by(ModThree()).sum().execute_and_collect())
    # running sums per key: 0,3,9,18 / 1,5,12 / 2,7,15
    assert sorted(sums) == [0, 1, 2, 3, 5, 7, 9, 12, 15, 18]
