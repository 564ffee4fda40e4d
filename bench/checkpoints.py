"""Checkpoint overhead: J2 (keyed running count over Zipf words) with a checkpoint every second versus without,
same run, in thread mode (parallelism 1) and in process mode (parallelism 2, two TaskManager processes). The
words come from a sequence source (whose checkpointed state is one position), so the checkpoint cost measured
is the keyed state's. Goal (issue 17): >= 0.9x in both modes."""

from __future__ import annotations

import tempfile

from bench.harness import compare
from bench.spine import CountingSink, add_counts, word_key, zipf_words
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource

RECORDS = 4_000_000


class WordAt:
    """i -> (word, 1): the Zipf sequence, generated on the fly from a fixed table."""

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def __call__(self, i: int) -> tuple:
        words = self.words
        return (words[i % len(words)], 1)


def run(words: list[str], checkpoint_dir: str | None, backend: object = None, processes: bool = False) -> int:
    if processes:
        return _run_in_processes(words, checkpoint_dir)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    if checkpoint_dir is not None:
        env.enable_checkpointing(1000)
        env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{checkpoint_dir}")
    if backend is not None:
        env.set_state_backend(backend)
    sink = CountingSink()
    env.from_source(NumberSequenceSource(0, RECORDS - 1), source_name="words").map(WordAt(words)).key_by(
        word_key
    ).reduce(add_counts).add_sink(sink)
    env.execute("J2 checkpointed" if checkpoint_dir else "J2")
    assert sink.count == RECORDS
    return sink.count


def _run_in_processes(words: list[str], checkpoint_dir: str | None) -> int:
    from bench.process_mode import CountToFile, _counted, _environment

    def job(directory: str) -> None:
        env = _environment(2)
        if checkpoint_dir is not None:
            env.enable_checkpointing(1000)
            env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{checkpoint_dir}")
        env.from_source(NumberSequenceSource(0, RECORDS - 1), source_name="words").map(WordAt(words)).key_by(
            word_key
        ).reduce(add_counts).add_sink(CountToFile(directory))
        env.execute("J2 checkpointed" if checkpoint_dir else "J2")

    count = _counted(job)
    assert count == RECORDS, count
    return count


def main() -> bool:
    words = zipf_words(1_000_000)
    ok = True
    for processes, label in ((False, "thread mode, parallelism 1"), (True, "process mode, parallelism 2")):
        with tempfile.TemporaryDirectory() as directory:
            checkpointed, plain = compare(
                RECORDS,
                lambda processes=processes: run(words, directory, processes=processes),
                lambda processes=processes: run(words, None, processes=processes),
                repeat=3,
            )
        ratio = checkpointed.rate / plain.rate
        print(f"J2 with checkpoints every 1 s (heap backend, file system storage) vs without, 4M records, {label}")
        print(f"  without      {plain.rate:>12,.0f} records/s")
        print(
            f"  checkpointed {checkpointed.rate:>12,.0f} records/s  ratio {ratio:.2f}x (target >= 0.9x: "
            f"{'meets' if ratio >= 0.9 else 'MISSES'})"
        )
        ok &= ratio >= 0.9
    heap_state_figures()
    return ok


def heap_state_figures(keys: int = 1_000_000) -> None:
    """A checkpoint of 1M keys on the heap backend, outside a job: synchronous copy, asynchronous write (the
    handle a checkpoint stores), restore time. `bench.heap_checkpoint` measures 2M keys inside a running job."""
    import pickle
    import time

    from fluvial.checkpoint.storage import read_state_handle
    from fluvial.state.heap import HeapKeyedStateBackend
    from fluvial.state.snapshot import SnapshotType

    backend = HeapKeyedStateBackend(128, range(128))
    table = backend.value_table("counts")
    for key in range(keys):
        table[key] = key
    start = time.perf_counter()
    frozen = backend.snapshot(1, SnapshotType.CHECKPOINT)
    sync = time.perf_counter() - start
    start = time.perf_counter()
    blob = pickle.dumps(frozen.write(None), protocol=5)
    write = time.perf_counter() - start
    start = time.perf_counter()
    fresh = HeapKeyedStateBackend(128, range(128))
    fresh.restore([pickle.loads(blob)], read_state_handle, 1)
    restore = time.perf_counter() - start
    assert len(fresh.value_table("counts")) == keys
    print(
        f"Heap backend, {keys:,} keys: synchronous part {sync:.2f} s, asynchronous part (serialize) {write:.2f} s, "
        f"{len(blob) / 1e6:.1f} MB, restore {restore:.2f} s (target < 5 s)"
    )


if __name__ == "__main__":
    import sys

    sys.exit(0 if main() else 1)
