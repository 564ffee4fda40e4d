"""DESIGN 4's measurement: J2 with its two tasks (source, keyed reduce) run cooperatively on one TaskManager
thread, versus the same tasks on two TaskManagers, one thread each (a handoff between threads per buffer)."""

from __future__ import annotations

from bench.harness import best_of
from bench.spine import J2_RECORDS, CountingSink, add_counts, to_pair, word_key, zipf_words
from fluvial.common import Configuration
from fluvial.datastream import StreamExecutionEnvironment


def run_j2(pairs: list, task_managers: int) -> None:
    config = Configuration().set_integer("local.number-taskmanager", task_managers)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    sink = CountingSink()
    reduced = env.from_collection(pairs).key_by(word_key).reduce(add_counts)
    if task_managers > 1:
        reduced.slot_sharing_group("reduce")  # its own slot, which lands on the second TaskManager
    reduced.add_sink(sink)
    env.execute("J2 threading")
    assert sink.count == len(pairs)


def main() -> bool:
    pairs = [to_pair(word) for word in zipf_words(J2_RECORDS)]
    one = best_of("one thread", J2_RECORDS, lambda: run_j2(pairs, 1))
    two = best_of("two threads", J2_RECORDS, lambda: run_j2(pairs, 2))
    print("Threading model: J2's source and keyed reduce")
    print(f"  cooperative, one thread   {one.rate:>12,.0f} records/s")
    print(f"  a thread per task         {two.rate:>12,.0f} records/s  ({two.rate / one.rate:.2f}x)")
    return True
