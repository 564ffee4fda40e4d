"""Flink SQL on fluvial: a GROUP BY that emits Flink's changelog — one phase, mini-batch, and two-phase
(local-global) — against a plain-Python loop doing the same, and DataStream's keyed reduce for reference.

The query `SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k` over 200,000 rows (1,000 keys) from a typed
DataStream, at parallelism 1, into a blackhole table:
- one phase (Flink's GroupAggregate): +I for a key's first row, then -U/+U for every later one (~400,000
  change rows);
- mini-batch (`table.exec.mini-batch.*`, 5,000 rows or 1 s): the same final table, one change per key and batch;
- two-phase (mini-batch with `table.optimizer.agg-phase-strategy` AUTO): a LocalGroupAggregate before the hash
  exchange sends one partial row per key and batch; the GlobalGroupAggregate merges them into keyed state.
The baseline loop keeps the same per-key (count, sum) in a dict and builds the one-phase change rows as tuples;
the keyed reduce is `key_by(k).reduce(sum)` on the same typed stream (one output per row, no retractions).

    python -m bench.sql_group_by
"""

from __future__ import annotations

import os

from bench.harness import compare_many

ROWS = 200_000
KEYS = 1_000
MINI_BATCH = {
    "table.exec.mini-batch.enabled": "true",
    "table.exec.mini-batch.allow-latency": "1 s",
    "table.exec.mini-batch.size": "5000",
}


def _events(env):
    from fluvial.common import Types
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource

    return env.from_source(NumberSequenceSource(1, ROWS), source_name="numbers").map(
        lambda n: (n % KEYS, n), output_type=Types.ROW_NAMED(["k", "v"], [Types.LONG(), Types.LONG()])
    )


def sql_job(options: dict[str, str]):
    def run() -> None:
        from fluvial.datastream import StreamExecutionEnvironment
        from fluvial.table import StreamTableEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        t_env = StreamTableEnvironment.create(env)
        for key, value in options.items():
            t_env.get_config().set(key, value)
        t_env.create_temporary_view("events", t_env.from_data_stream(_events(env)))
        t_env.execute_sql("CREATE TABLE sink (k BIGINT, c BIGINT, s BIGINT) WITH ('connector' = 'blackhole')")
        t_env.execute_sql("INSERT INTO sink SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k").wait()

    return run


def keyed_reduce() -> None:
    from fluvial.common import Types
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.functions import SinkFunction

    class Discard(SinkFunction):
        def invoke(self, value, context=None) -> None:
            pass

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    _events(env).key_by(lambda row: row[0], key_type=Types.LONG()).reduce(lambda a, b: (a[0], a[1] + b[1])).add_sink(
        Discard()
    )
    env.execute("keyed reduce")


def baseline() -> None:
    state: dict[int, tuple[int, int]] = {}
    changes = []
    for n in range(1, ROWS + 1):
        k = n % KEYS
        previous = state.get(k)
        count, total = previous or (0, 0)
        current = (count + 1, total + n)
        state[k] = current
        if previous is None:
            changes.append(("+I", k, *current))
        else:
            changes.append(("-U", k, *previous))
            changes.append(("+U", k, *current))


def main() -> bool:
    runs = {
        "one phase": sql_job({}),
        "mini-batch": sql_job({**MINI_BATCH, "table.optimizer.agg-phase-strategy": "ONE_PHASE"}),
        "two-phase": sql_job(MINI_BATCH),
        "keyed reduce": keyed_reduce,
        "loop": baseline,
    }
    best = compare_many(ROWS, runs, repeat=3)
    loop = best["loop"].rate
    print(
        f"SQL GROUP BY COUNT/SUM with retractions, {ROWS:,} rows, {KEYS:,} keys, parallelism 1 "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    for name, measurement in best.items():
        print(
            f"  {name:<13} {measurement.rate:>12,.0f} records/s  ({measurement.seconds:.3f} s)  "
            f"{measurement.rate / loop:5.2f}x the loop"
        )
    return True


if __name__ == "__main__":
    import sys

    sys.exit(0 if main() else 1)
