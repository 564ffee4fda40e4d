"""Flink SQL on fluvial: a GROUP BY that emits Flink's changelog, against a plain-Python loop doing the same.

The query `SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k` over 200,000 rows (1,000 keys) from a typed
DataStream, at parallelism 1, into a blackhole table. It emits a changelog as Flink's GroupAggregate does:
+I for a key's first row, then -U/+U for every later one (~400,000 change rows). The baseline loop keeps the
same per-key (count, sum) in a dict and builds the same change rows as tuples. Nexmark's queries are not here
yet (no Nexmark generator); this measures the planner's Calc + keyed GroupAggregate path.

    python -m bench.sql_group_by
"""

from __future__ import annotations

from bench.harness import compare, report

ROWS = 200_000
KEYS = 1_000


def fluvial_job() -> None:
    from fluvial.common import Types
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource
    from fluvial.table import StreamTableEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)
    events = env.from_source(NumberSequenceSource(1, ROWS), source_name="numbers").map(
        lambda n: (n % KEYS, n), output_type=Types.ROW_NAMED(["k", "v"], [Types.LONG(), Types.LONG()])
    )
    t_env.create_temporary_view("events", t_env.from_data_stream(events))
    t_env.execute_sql("CREATE TABLE sink (k BIGINT, c BIGINT, s BIGINT) WITH ('connector' = 'blackhole')")
    t_env.execute_sql("INSERT INTO sink SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k").wait()


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
    fluvial, plain = compare(ROWS, fluvial_job, baseline, repeat=3)
    return report(
        f"SQL GROUP BY with retractions, {ROWS:,} rows, {KEYS:,} keys, parallelism 1", fluvial, plain, target=0.0
    )


if __name__ == "__main__":
    import sys

    sys.exit(0 if main() else 1)
