"""Timing helpers shared by the benchmarks: best-of-N wall time, and the report line."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Measurement:
    name: str
    records: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds


def best_of(name: str, records: int, run: Callable[[], object], repeat: int = 5) -> Measurement:
    """The fastest of `repeat` runs: noise only ever slows a run down."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return Measurement(name, records, best)


def compare(
    records: int, fluvial: Callable[[], object], baseline: Callable[[], object], repeat: int = 5
) -> tuple[Measurement, Measurement]:
    """Best of `repeat` runs of each, interleaved (fluvial, baseline, fluvial, ...): this machine's speed drifts
    over seconds, and interleaving exposes both sides to the same drift, so the ratio stays honest."""
    best = {"fluvial": float("inf"), "baseline": float("inf")}
    for _ in range(repeat):
        for name, run in (("fluvial", fluvial), ("baseline", baseline)):
            gc.collect()
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return Measurement("fluvial", records, best["fluvial"]), Measurement("plain Python", records, best["baseline"])


def compare_many(records: int, runs: dict[str, Callable[[], object]], repeat: int = 5) -> dict[str, Measurement]:
    """`compare` for any number of contenders, interleaved in the given order, best of `repeat` each."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, run in runs.items():
            gc.collect()
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: Measurement(name, records, seconds) for name, seconds in best.items()}


def report(
    title: str,
    fluvial: Measurement,
    baseline: Measurement,
    target: float,
    labels: tuple[str, str] = ("fluvial", "plain Python"),
) -> bool:
    ratio = fluvial.rate / baseline.rate
    verdict = "meets" if ratio >= target else "MISSES"
    print(f"{title}")
    print(f"  {labels[0]:<12} {fluvial.rate:>14,.0f} records/s  ({fluvial.seconds:.3f} s)")
    print(f"  {labels[1]:<12} {baseline.rate:>14,.0f} records/s  ({baseline.seconds:.3f} s)")
    print(f"  ratio        {ratio:>14.2f}x   (target >= {target}x: {verdict})")
    return ratio >= target


def run_fresh_interpreter(code: str) -> subprocess.CompletedProcess:
    """`python -c code` in a new interpreter as a user's would start: with its modules' bytecode cached. A
    PYTHONDONTWRITEBYTECODE in the benchmark's environment would make every start compile all of fluvial (about
    50 ms here), which no user's second run pays; the caller's first run writes the cache."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=environment)
