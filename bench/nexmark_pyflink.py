"""The PyFlink side of `bench.nexmark` (run by a PyFlink venv's python; imports no fluvial): each query as
`INSERT INTO` a blackhole table over the events' JSON-lines file, at parallelism 1 and 2, in one JVM session;
prints one JSON line `{query: {"1": seconds, "2": seconds}}` (job submission to end).

    PATH/bin/python bench/nexmark_pyflink.py EVENTS.jsonl q0,q1,...
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nexmark_queries import QUERIES, VIEWS, nexmark_ddl  # noqa: E402


def seconds(events: str, query: str, parallelism: int) -> float:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    t_env.execute_sql(nexmark_ddl({"connector": "filesystem", "path": events, "format": "json"}))
    for view in VIEWS:
        t_env.execute_sql(view)
    schema = t_env.sql_query(query)._j_table.getResolvedSchema()
    columns = ", ".join(
        f"`{c.getName()}` {str(c.getDataType()).replace(' *ROWTIME*', '').replace(' NOT NULL', '')}"
        for c in schema.getColumns()
    )
    t_env.execute_sql(f"CREATE TABLE sink ({columns}) WITH ('connector' = 'blackhole')")
    start = time.perf_counter()
    t_env.execute_sql(f"INSERT INTO sink {query}").wait()
    return time.perf_counter() - start


def main() -> None:
    events, names = sys.argv[1], sys.argv[2].split(",")
    seconds(events, QUERIES["q0"], 1)  # warm the JVM (class loading, JIT) before measuring
    out = {name: {str(p): seconds(events, QUERIES[name], p) for p in (1, 2)} for name in names}
    print(json.dumps(out), flush=True)
    os._exit(0)  # the gateway JVM's threads would keep the interpreter waiting


if __name__ == "__main__":
    main()
