"""Nexmark on Flink SQL: q0-q8 (q6 is unsupported in Flink itself) over `'connector' = 'nexmark'`, records/s per
query at parallelism 1 (threads) and 2 (TaskManager processes), and the same queries on PyFlink in the same run.

Each query runs as the reference runs it: `INSERT INTO` a blackhole table, the `nexmark` table (bounded:
`events.num`) and its `person`/`auction`/`bid` views; records/s is generated events over the job's wall time
(submission to end, interpreter start excluded). The plain-Python baseline is the generator alone (the events
the source makes, nothing done with them): the ceiling any query here can reach.

PyFlink, given its venv's interpreter (`--pyflink PATH/bin/python`), runs the same SQL at parallelism 1 and 2
in one JVM session (the JVM's start excluded). It has no `nexmark` connector (that is a jar of nexmark-flink),
so it reads the same events from a JSON-lines file through its filesystem connector; the ratio column is
fluvial's records/s over PyFlink's. Without `--pyflink` that side is skipped with a line saying so.

    python -m bench.nexmark [--events 20000] [--queries q0,q1,...] [--pyflink .pyflink-venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.nexmark_queries import QUERIES, UNSUPPORTED, VIEWS, nexmark_ddl

BASE_TIME = 1_704_067_200_000
RATE = 10_000  # events per second of event time, as the reference's default TPS


def _options(events: int) -> dict[str, str]:
    return {
        "connector": "nexmark",
        "first-event.rate": str(RATE),
        "next-event.rate": str(RATE),
        "events.num": str(events),
        "base-time": str(BASE_TIME),
    }


def fluvial_seconds(query: str, events: int, parallelism: int) -> float:
    from fluvial.common.configuration import Configuration
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.table import StreamTableEnvironment

    mode = "process" if parallelism > 1 else "thread"
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", mode)
    )
    env.set_parallelism(parallelism)
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(nexmark_ddl(_options(events)))
    for view in VIEWS:
        t_env.execute_sql(view)
    sink = t_env.sql_query(query).get_resolved_schema()
    columns = ", ".join(f"`{name}` {data_type}" for name, data_type in zip(sink.get_column_names(), _types(sink)))
    t_env.execute_sql(f"CREATE TABLE sink ({columns}) WITH ('connector' = 'blackhole')")
    start = time.perf_counter()
    t_env.execute_sql(f"INSERT INTO sink {query}").wait()
    return time.perf_counter() - start


def _types(schema: object) -> list[str]:
    """The sink's column types: the query's, without time-attribute marks and NOT NULL constraints."""
    return [str(t).replace(" *ROWTIME*", "").replace(" NOT NULL", "") for t in schema.get_column_data_types()]


def generator_seconds(events: int) -> float:
    """The plain-Python baseline: the generator making the events, one split."""
    from fluvial.datastream.connectors.nexmark.generator import GeneratorSplit, NexmarkGenerator
    from fluvial.table.connectors.nexmark import nexmark_config

    config = nexmark_config({k: v for k, v in _options(events).items() if k != "connector"})
    start = time.perf_counter()
    generator = NexmarkGenerator(GeneratorSplit.split(config, 1)[0])
    while generator.has_next():
        generator.next_rows(1000)
    return time.perf_counter() - start


def write_events(options: dict[str, str], path: str, parallelism: int = 1) -> None:
    """The events of a `nexmark` table with these WITH options as JSON lines in Flink's `json` format, for
    PyFlink's filesystem connector: at parallelism 1 one file `path`, else a directory `path` with one file per
    generator (the source subtasks' parallel timelines)."""
    import datetime as _dt

    from fluvial.datastream.connectors.nexmark.generator import GeneratorSplit, NexmarkGenerator
    from fluvial.table.connectors.nexmark import nexmark_config

    def plain(value: object) -> object:
        if isinstance(value, _dt.datetime):
            return value.isoformat(sep=" ", timespec="milliseconds")
        if hasattr(value, "as_dict"):
            return {k: plain(v) for k, v in value.as_dict().items()}
        return value

    config = nexmark_config({k: v for k, v in options.items() if k != "connector"})
    if parallelism > 1:
        os.makedirs(path, exist_ok=True)
    for i, split in enumerate(GeneratorSplit.split(config, parallelism)):
        generator = NexmarkGenerator(split)
        with open(path if parallelism == 1 else os.path.join(path, f"part-{i}.jsonl"), "w") as out:
            while generator.has_next():
                out.writelines(json.dumps(plain(row)) + "\n" for row in generator.next_rows(1000))


def pyflink_seconds(python: str, events_file: str, names: list[str]) -> dict[str, dict[str, float]]:
    script = Path(__file__).with_name("nexmark_pyflink.py")
    result = subprocess.run(
        [python, str(script), events_file, ",".join(names)], capture_output=True, text=True, timeout=3600
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"PyFlink's run failed: {result.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--pyflink", help="a PyFlink venv's python (pip install apache-flink==2.3.0)")
    args = parser.parse_args()
    names = [n.strip() for n in args.queries.split(",") if n.strip()]
    for name in names:
        if name in UNSUPPORTED:
            sys.exit(f"{name}: {UNSUPPORTED[name]}")
        if name not in QUERIES:
            sys.exit(f"unknown query {name}; the queries are {', '.join(QUERIES)}")
    events = args.events
    print(f"Nexmark, {events:,} events (1:3:46 persons:auctions:bids), load: {os.getloadavg()[0]:.2f} (1 min)")
    baseline = events / generator_seconds(events)
    pyflink: dict[str, dict[str, float]] = {}
    if args.pyflink:
        with tempfile.TemporaryDirectory() as directory:
            events_file = os.path.join(directory, "events.jsonl")
            write_events(_options(events), events_file)
            pyflink = pyflink_seconds(args.pyflink, events_file, names)
    else:
        print("  PyFlink: skipped (no --pyflink PATH/bin/python given)")
    print(f"  {'query':<6} {'p1 rec/s':>12} {'p2 rec/s':>12} {'PyFlink p1':>12} {'PyFlink p2':>12} {'p1 ratio':>9}")
    rates = {}
    for name in names:
        p1 = events / fluvial_seconds(QUERIES[name], events, 1)
        rates[name] = p1
        p2 = events / fluvial_seconds(QUERIES[name], events, 2)
        line = f"  {name:<6} {p1:>12,.0f} {p2:>12,.0f}"
        if name in pyflink:
            f1, f2 = (events / pyflink[name][p] for p in ("1", "2"))
            line += f" {f1:>12,.0f} {f2:>12,.0f} {p1 / f1:>8.3f}x"
        print(line, flush=True)
    baseline = max(baseline, events / generator_seconds(events))  # best of a run before and one after
    print(f"  plain Python: the generator alone makes {baseline:,.0f} events/s (best of two runs)")
    if "q0" in rates:
        print(f"  q0 (pass-through) at p1 runs at {rates['q0'] / baseline:.3f}x the generator alone")
    print(f"  q6: {UNSUPPORTED['q6']}")
    print(f"  load after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
