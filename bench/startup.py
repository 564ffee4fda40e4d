"""Empty-job latency: one record through J1's pipeline, in a fresh interpreter, imports included."""

from __future__ import annotations

import time

from bench.harness import run_fresh_interpreter

JOB = """
from fluvial.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([1]).map(lambda x: x * 3).filter(lambda x: x % 2 == 0).map(lambda x: x + 1).print()
env.execute("empty")
"""


def wall_time(code: str) -> float:
    start = time.perf_counter()
    run_fresh_interpreter(code)
    return time.perf_counter() - start


def main() -> bool:
    wall_time(JOB)  # the first start writes the bytecode cache, as a user's first run does
    bare = min(wall_time("pass") for _ in range(5))
    job = min(wall_time(JOB) for _ in range(5))
    print("Empty job: one record through J1's pipeline, fresh interpreter")
    print(
        f"  python -c pass {bare:.3f} s; fluvial job {job:.3f} s (target < 0.15 s: {'meets' if job < 0.15 else 'MISSES'})"
    )
    return job < 0.15
