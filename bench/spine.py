"""J1 (stateless chain) and J2 (keyed running count) of the spine issue, at parallelism 1.

J1: 2,000,000 integers → map(x*3) → filter(even) → map(x+1) → counting sink.
J2: 1,000,000 words (10,000-word Zipf vocabulary, fixed seed) → key_by → running reduce count per record.
The plain-Python loops call the same functions once per record.
"""

from __future__ import annotations

import random

from bench.harness import compare, report
from fluvial.common import Configuration
from fluvial.datastream import SinkFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource

J1_RECORDS = 2_000_000
J2_RECORDS = 1_000_000


def triple(x: int) -> int:
    return x * 3


def is_even(x: int) -> bool:
    return x % 2 == 0


def plus_one(x: int) -> int:
    return x + 1


def word_key(pair: tuple) -> str:
    return pair[0]


def add_counts(a: tuple, b: tuple) -> tuple:
    return (a[0], a[1] + b[1])


def to_pair(word: str) -> tuple:
    return (word, 1)


class CountingSink(SinkFunction):
    """Counts records; the batch entry point counts a whole buffer at once."""

    def __init__(self) -> None:
        self.count = 0

    def invoke(self, value: object, context: object) -> None:
        self.count += 1

    def invoke_batch(self, values: list, context: object) -> None:
        self.count += len(values)


def _env() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    return env


def run_j1_fluvial() -> int:
    env = _env()
    sink = CountingSink()
    env.from_source(NumberSequenceSource(1, J1_RECORDS), source_name="numbers").map(triple).filter(is_even).map(
        plus_one
    ).add_sink(sink)
    env.execute("J1")
    assert sink.count == J1_RECORDS // 2, sink.count
    return sink.count


def run_j1_loop() -> int:
    count = 0
    for x in range(1, J1_RECORDS + 1):
        y = triple(x)
        if is_even(y):
            plus_one(y)
            count += 1
    return count


def zipf_words(n: int, vocabulary: int = 10_000, seed: int = 42) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocabulary)]
    weights = [1.0 / (rank + 1) for rank in range(vocabulary)]
    return rng.choices(words, weights=weights, k=n)


def run_j2_fluvial(words: list[tuple]) -> int:
    env = _env()
    sink = CountingSink()
    env.from_collection(words).key_by(word_key).reduce(add_counts).add_sink(sink)
    env.execute("J2")
    assert sink.count == len(words)
    return sink.count


def run_j2_loop(words: list[tuple]) -> int:
    counts: dict = {}
    emitted = 0
    for pair in words:
        key = word_key(pair)
        previous = counts.get(key)
        counts[key] = pair if previous is None else add_counts(previous, pair)
        emitted += 1
    return emitted


def main() -> bool:
    ok = report(
        "J1: 2M ints -> map -> filter -> map -> count (parallelism 1)",
        *compare(J1_RECORDS, run_j1_fluvial, run_j1_loop, repeat=7),
        target=1.0,
    )
    pairs = [to_pair(w) for w in zipf_words(J2_RECORDS)]
    ok &= report(
        "J2: 1M Zipf words -> key_by -> running count (parallelism 1)",
        *compare(J2_RECORDS, lambda: run_j2_fluvial(pairs), lambda: run_j2_loop(pairs)),
        target=0.5,
    )
    return ok
