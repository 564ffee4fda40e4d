"""A word count in BATCH and in STREAMING execution mode (issue 10: a batch word count must be faster).

The same job both ways: 100,000 lines of 8 Zipf-distributed words (10,000-word vocabulary) -> flat_map(split)
-> map((word, 1)) -> key_by -> reduce(sum) -> a SinkFunction keeping the latest count per word. In STREAMING
the reduce is rolling: it emits a running count for every one of the 800,000 words and the sink sees each. In
BATCH it folds each key and emits the 10,000 final counts once (Flink's batch semantics); both end with the
same counts. Parallelism 1, so the ratio is per-record cost, not parallelism.
"""

from __future__ import annotations

from bench.harness import compare, report
from bench.spine import zipf_words

LINES = 100_000
WORDS_PER_LINE = 8


def make_lines() -> list[str]:
    words = zipf_words(LINES * WORDS_PER_LINE, seed=7)
    return [" ".join(words[i : i + WORDS_PER_LINE]) for i in range(0, len(words), WORDS_PER_LINE)]


def _sink_class():
    from fluvial.datastream import SinkFunction

    class LatestCount(SinkFunction):
        def __init__(self) -> None:
            self.counts: dict = {}

        def invoke(self, value, context) -> None:
            self.counts[value[0]] = value[1]

    return LatestCount


def split(line: str) -> list[str]:
    return line.split()


def pair(word: str) -> tuple:
    return (word, 1)


def first(pair_: tuple) -> str:
    return pair_[0]


def add(a: tuple, b: tuple) -> tuple:
    return (a[0], a[1] + b[1])


def word_count(lines: list[str], batch: bool) -> dict:
    from fluvial.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH if batch else RuntimeExecutionMode.STREAMING)
    sink = _sink_class()()
    env.from_collection(lines).flat_map(split).map(pair).key_by(first).reduce(add).add_sink(sink)
    env.execute("word count")
    return sink.counts


def main() -> bool:
    lines = make_lines()
    same = word_count(lines, batch=True) == word_count(lines, batch=False)
    words = LINES * WORDS_PER_LINE
    batch, streaming = compare(words, lambda: word_count(lines, True), lambda: word_count(lines, False), repeat=5)
    ok = report(
        "Word count, 800k words: BATCH (one final count per word) vs STREAMING (a running count per word)",
        batch,
        streaming,
        target=1.0,
        labels=("BATCH", "STREAMING"),
    )
    print(f"  both modes end with the same counts: {same}")
    return ok and same


if __name__ == "__main__":
    import sys

    sys.exit(0 if main() else 1)
