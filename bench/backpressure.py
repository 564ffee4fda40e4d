"""Checkpoints under back pressure, and what the task-thread change costs (issue 19).

    python -m bench.backpressure [--baseline DIR] [--checkpoints N]

1. Checkpoint duration under back pressure: a paced map (500 records/s, a 2 ms call per record) behind a
   source that could go far faster, in thread mode, checkpointing every second — aligned, aligned with buffer
   debloating (target 1 s) and unaligned. Printed: each mode's checkpoint durations (end to end), their median
   and the records/s the paced map sustained meanwhile beside the plain-Python loop doing the same calls.
2. J1–J3 (bench.spine's J1 and J2, bench.event_time's J3, parallelism 1) with this tree and with `--baseline`
   (a source tree of fluvial without the change, e.g. `git archive main | tar -x -C DIR`), each in fresh
   interpreters, interleaved, best of `--repeat`: the ratio shows what the input slicing, the barrier listener
   and the executor's blocking check cost CPU-bound chains.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PACE_S = 0.002
HERE = Path(__file__).resolve().parent.parent

JOBS = {
    "J1": ("from bench.spine import run_j1_fluvial as run, J1_RECORDS as records", "run()"),
    "J2": (
        "from bench.spine import run_j2_fluvial, zipf_words, to_pair, J2_RECORDS as records\n"
        "pairs = [to_pair(w) for w in zipf_words(records)]\nrun = lambda: run_j2_fluvial(pairs)",
        "run()",
    ),
    "J3": ("from bench.event_time import run_fluvial as run, EVENTS as records", "run()"),
}


def paced_job(mode: str, checkpoints: int) -> tuple[list[int], float]:
    """Durations (ms) of the first `checkpoints` completed checkpoints, and the paced map's records/s."""
    from fluvial.common import Configuration, Types
    from fluvial.common.watermark_strategy import WatermarkStrategy
    from fluvial.datastream import MapFunction, StreamExecutionEnvironment
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource
    from fluvial.datastream.functions import SinkFunction

    counted = [0]

    class Paced(MapFunction):
        def map(self, value):
            time.sleep(PACE_S)
            return value

    class Count(SinkFunction):
        def invoke_batch(self, values, context):
            counted[0] += len(values)

    configuration = Configuration().set_string("local.taskmanager.mode", "thread")
    if mode == "unaligned":
        configuration.set_string("execution.checkpointing.unaligned.enabled", "true")
    elif mode == "aligned + debloating":
        configuration.set_string("taskmanager.network.memory.buffer-debloat.enabled", "true")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(1000)
    (
        env.from_source(NumberSequenceSource(0, 10**10), WatermarkStrategy.no_watermarks(), "numbers")
        .rebalance()
        .map(Paced(), output_type=Types.LONG())
        .add_sink(Count())
    )
    client = env.execute_async(f"paced, {mode}")
    started = time.monotonic()
    try:
        while True:
            history = client.get_job_details().result().checkpoints.history
            done = [entry["end_to_end_duration"] for entry in history if entry["status"] == "COMPLETED"]
            if len(done) >= checkpoints or time.monotonic() - started > 40 * checkpoints:
                return done[:checkpoints], counted[0] / (time.monotonic() - started)
            time.sleep(0.2)
    finally:
        client.cancel().result()


def paced_loop(seconds: float = 2.0) -> float:
    """The plain-Python loop: the same 2 ms call per record."""
    count, started = 0, time.monotonic()
    while time.monotonic() - started < seconds:
        time.sleep(PACE_S)
        count += 1
    return count / (time.monotonic() - started)


def checkpoint_durations(checkpoints: int) -> None:
    loop = paced_loop()
    print(
        f"Checkpoints under back pressure: a paced map ({PACE_S * 1000:.0f} ms per record) behind a fast source, "
        "thread mode, a checkpoint every second"
    )
    print(f"  plain-Python loop of the same calls: {loop:,.0f} records/s")
    for mode in ("aligned", "aligned + debloating", "unaligned"):
        durations, rate = paced_job(mode, checkpoints)
        median = statistics.median(durations) if durations else float("nan")
        print(
            f"  {mode:<21} checkpoints {', '.join(f'{d / 1000:.1f}' for d in durations)} s; median "
            f"{median / 1000:.2f} s; paced map {rate:,.0f} records/s ({rate / loop:.2f}x the loop)"
        )


def fresh_run(tree: Path, job: str) -> float:
    setup, call = JOBS[job]
    code = (
        f"import sys, time\nsys.path.insert(0, {str(tree)!r})\n{setup}\nrun()\n"
        f"start = time.perf_counter()\n{call}\nprint(records / (time.perf_counter() - start))"
    )
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=environment, cwd=tree
    )
    return float(done.stdout.strip().splitlines()[-1])


def j_jobs(baseline: Path | None, repeat: int) -> None:
    trees = [("this tree", HERE)] + ([("baseline", baseline)] if baseline is not None else [])
    print(
        f"J1-J3 at parallelism 1, best of {repeat} fresh runs each, interleaved"
        + ("" if baseline else " (no --baseline given: this tree only)")
    )
    for job in JOBS:
        best = {name: 0.0 for name, _ in trees}
        for _ in range(repeat):
            for name, tree in trees:
                best[name] = max(best[name], fresh_run(tree, job))
        line = "  ".join(f"{name} {rate:>12,.0f} records/s" for name, rate in best.items())
        if baseline is not None:
            line += f"  ratio {best['this tree'] / best['baseline']:.3f}"
        print(f"  {job}: {line}")


def main(argv: list[str] | None = None) -> bool:
    parser = argparse.ArgumentParser(prog="python -m bench.backpressure")
    parser.add_argument("--baseline", type=Path, help="a fluvial source tree without the change, for J1-J3")
    parser.add_argument("--checkpoints", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-checkpoints", action="store_true")
    args = parser.parse_args(argv)
    print(f"load average: {' '.join(f'{value:.1f}' for value in os.getloadavg())} ({os.cpu_count()} cores)")
    if not args.skip_checkpoints:
        checkpoint_durations(args.checkpoints)
    j_jobs(args.baseline, args.repeat)
    return True


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
