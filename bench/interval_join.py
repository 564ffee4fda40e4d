"""The SQL interval join with a large state: the sorted index of times against reading a key's whole time list.

`a JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '0.04' SECOND AND b.ts` is planned as fluvial's
IntervalJoinFunction; here it runs on the operator harness (the operator alone, as a task runs it, in buffers
of 500 rows): the right side first stores STATE rows under KEYS keys (no watermark passes, so all stay), then
PROBES left rows each find the right row (one, on average) within 40 ms after their time. Records/s count the probes.

- `indexed`: this operator, bisecting the key's sorted list of times: O(log n + matches) per row;
- `key scan`: the same operator made to read the key's whole time list for every row (what it did before the
  index: a scan of the MapState's keys). The scan here is a C-speed sort of an already sorted list, faster than
  the Python loop it replaces, so the speed-up printed is a lower bound;
- `plain Python`: a loop doing the same join with a dict of sorted lists and `bisect`, the ratio's baseline.

    python -m bench.interval_join
"""

from __future__ import annotations

import datetime as dt
import gc
import time
from bisect import bisect_left, bisect_right
from typing import Any

from bench.harness import Measurement, report

STATE = 40_000
PROBES = 4_000
KEYS = 4
BUFFER = 500
BOUND = 40  # ms: left - right in [-BOUND, 0]
EPOCH = dt.datetime(2024, 1, 1)


def _rows(count: int, first_id: int, step: int) -> list[Any]:
    from fluvial.common.row import RowKind, _create_row

    return [
        _create_row(
            ["k", "id", "ts"], [i % KEYS, first_id + i, EPOCH + dt.timedelta(milliseconds=i * step)], RowKind.INSERT
        )
        for i in range(count)
    ]


def _operator_run(scan: bool, backend: Any = None) -> float:
    """Seconds the probes take, the state loaded first (not timed)."""
    from fluvial.table.runtime.functions import RowKeySelector
    from fluvial.table.runtime.interval_join import IntervalJoinFunction
    from fluvial.testing import OperatorHarness

    class KeyScan(IntervalJoinFunction):
        def _times(self, side: int, key: Any) -> list[int]:
            return sorted(self._states[side].keys())  # the key's whole time list, read for every row

    kind = KeyScan if scan else IntervalJoinFunction
    function = kind(["k", "id", "ts", "k0", "id0", "ts0"], (3, 3), (2, 2), (-BOUND, 0), "INNER", None)
    harness = OperatorHarness.of_two_inputs(
        lambda a, b: a.connect(b).key_by(RowKeySelector([0]), RowKeySelector([0])).process(function),
        state_backend=backend,
    ).open()
    right = _rows(STATE, 1_000_000, 10)  # one row every 10 ms, KEYS keys in turn: one per key in BOUND ms
    for i in range(0, STATE, BUFFER):
        harness.process_elements(right[i : i + BUFFER], input=2)
    left = _rows(PROBES, 0, STATE * 10 // PROBES)
    gc.collect()
    start = time.perf_counter()
    for i in range(0, PROBES, BUFFER):
        harness.process_elements(left[i : i + BUFFER], input=1)
        harness.take()
    seconds = time.perf_counter() - start
    harness.close()
    return seconds


def _baseline_run() -> float:
    """The same join in plain Python: per key a dict time → rows and a sorted list of times, bisected."""
    rows: dict[int, dict[int, list[tuple]]] = {}
    times: dict[int, list[int]] = {}
    for i in range(STATE):
        key, millis = i % KEYS, i * 10
        rows.setdefault(key, {}).setdefault(millis, []).append((key, 1_000_000 + i, millis))
        times.setdefault(key, []).append(millis)
    step = STATE * 10 // PROBES
    gc.collect()
    start = time.perf_counter()
    out = []
    for i in range(PROBES):
        key, millis = i % KEYS, i * step
        mine = (key, i, millis)
        sorted_times = times[key]
        for j in range(bisect_left(sorted_times, millis), bisect_right(sorted_times, millis + BOUND)):
            for other in rows[key][sorted_times[j]]:
                out.append((*mine, *other))
    return time.perf_counter() - start


def main(repeat: int = 2) -> bool:
    import tempfile

    from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend

    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory:
        rocksdb = EmbeddedRocksDBStateBackend()
        rocksdb.set_db_storage_paths(directory)
        runs = {
            "indexed": lambda: _operator_run(False),
            "key scan": lambda: _operator_run(True),
            "indexed, RocksDB": lambda: _operator_run(False, rocksdb),
            "plain Python": _baseline_run,
        }
        for _ in range(repeat):
            for name, run in runs.items():
                best[name] = min(best.get(name, float("inf")), run())
    measured = {name: Measurement(name, PROBES, seconds) for name, seconds in best.items()}
    title = f"SQL interval join, {STATE:,} rows of state under {KEYS} keys, {PROBES:,} probing rows (~1 match each)"
    ok = report(title, measured["indexed"], measured["plain Python"], target=0.0, labels=("indexed", "plain Python"))
    for name in ("key scan", "indexed, RocksDB"):
        print(f"  {name:<17} {measured[name].rate:>9,.0f} records/s  ({measured[name].seconds:.3f} s)")
    print(f"  index speed-up over the key scan: {measured['indexed'].rate / measured['key scan'].rate:.1f}x")
    return ok


if __name__ == "__main__":
    import sys

    sys.exit(0 if main() else 1)
