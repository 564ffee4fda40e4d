"""The changelog state backend against the plain heap backend (FLIP-158's claim): a job whose keyed state is large
(200K keys of ~100 bytes) while only a few hundred keys change — often, to short values — between two
checkpoints. Checkpoints every second
to files; with the changelog its segments are files too and it materializes every 5 s. Reported per backend:
records/s (and the ratio to a plain-Python loop doing the same dict updates), and over the checkpoints taken once
every key is in state the median of what each stored anew (Flink's checkpointed size), of the full state it
refers to, and of its end-to-end duration.

    python -m bench.changelog
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from typing import Any

from bench.harness import best_of
from fluvial.common import Configuration, Types
from fluvial.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ValueStateDescriptor

KEYS = 200_000
HOT = 500
RECORDS = 3_000_000
PAYLOAD = 100


def record(i: int) -> tuple[int, str]:
    """The first KEYS records fill the state with values of PAYLOAD bytes, each its own string (one shared object
    would be pickled once per chunk and make the state look small); the rest set HOT keys to short values over
    and over (a status, a counter)."""
    if i < KEYS:
        return i, str(i).rjust(PAYLOAD, "x")
    return i % HOT, str(i)


class Keep(KeyedProcessFunction):
    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("payload", Types.STRING()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.state.update(value[1])
        return ()


def run(changelog: bool, directory: str) -> tuple[float, list[dict]]:
    """(seconds, the completed checkpoints' history entries) of one run."""
    configuration = Configuration()
    if changelog:
        configuration.set_string("state.changelog.enabled", "true")
        configuration.set_string("state.changelog.storage", "filesystem")
        configuration.set_string("state.changelog.dstl.dfs.base-path", f"{directory}/dstl")
        configuration.set_string("state.changelog.periodic-materialize.interval", "5 s")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(1000)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{directory}/chk")
    (
        env.from_source(NumberSequenceSource(0, RECORDS - 1), source_name="updates")
        .map(record, output_type=Types.TUPLE([Types.INT(), Types.STRING()]))
        .key_by(lambda pair: pair[0], key_type=Types.INT())
        .process(Keep(), output_type=Types.INT())
        .print()  # Keep emits nothing
    )
    start = time.perf_counter()
    client = env.execute_async("changelog bench" if changelog else "heap bench")
    client.get_job_execution_result().result(timeout=600)
    seconds = time.perf_counter() - start
    history = [entry for entry in client._job_master.checkpointing.stats.history if entry["status"] == "COMPLETED"]
    return seconds, history


def plain_python() -> None:
    state: dict[int, str] = {}
    for i in range(RECORDS):
        key, value = record(i)
        state[key] = value


def main() -> bool:
    baseline = best_of("plain Python", RECORDS, plain_python, repeat=3)
    print(
        f"{KEYS:,} keys of ~{PAYLOAD} bytes, then updates of {HOT} hot keys; {RECORDS:,} records, a checkpoint "
        f"every second (plain Python loop: {baseline.rate:,.0f} records/s)"
    )
    figures = {}
    for changelog in (False, True):
        with tempfile.TemporaryDirectory() as directory:
            seconds, history = run(changelog, directory)
        full = [entry for entry in history if entry["state_size"] >= KEYS * PAYLOAD * 0.9]
        label = "changelog (heap inside)" if changelog else "heap"
        rate = RECORDS / seconds
        if not full:
            print(f"  {label:<24} {rate:>10,.0f} records/s  no checkpoint completed with the whole state")
            continue
        stored = statistics.median(entry["checkpointed_size"] for entry in full)
        size = statistics.median(entry["state_size"] for entry in full)
        duration = statistics.median(entry["end_to_end_duration"] for entry in full)
        figures[changelog] = stored
        print(
            f"  {label:<24} {rate:>10,.0f} records/s (ratio {rate / baseline.rate:.3f}x)  {len(full)} checkpoints: "
            f"stored {stored / 1e6:8.3f} MB each of {size / 1e6:6.1f} MB state, {duration:5.0f} ms (medians)"
        )
    if len(figures) == 2 and figures[True]:
        print(f"  a changelog checkpoint stores {figures[False] / figures[True]:,.0f}x less than a heap checkpoint")
    return len(figures) == 2 and figures[True] < figures[False]


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
