"""Records PyFlink's results of the Nexmark queries over the test's events into `expected.json`:

    .venv/bin/python -m tests.integration.table.nexmark.dump_events /tmp/nexmark-events.jsonl
    .pyflink-venv/bin/python tests/integration/table/nexmark/record_pyflink.py /tmp/nexmark-events.jsonl
    .venv/bin/python -m tests.integration.table.nexmark.dump_events /tmp/nexmark-events-p2 2
    .pyflink-venv/bin/python tests/integration/table/nexmark/record_pyflink.py /tmp/nexmark-events-p2 2

At parallelism 2 (the events of two generators, one file each) the queries of `PARALLEL` run at parallelism
2 and go to `expected_p2.json`.

Each query's changelog is applied (the table it leaves) and kept as `results.FinalTable` summarises it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "integration" / "table" / "differential"))

sys.path.insert(0, str(HERE))

from nexmark_queries import QUERIES, VIEWS, nexmark_ddl  # noqa: E402
from normalize import normalize_row  # noqa: E402
from results import FinalTable  # noqa: E402
from setup import PARALLEL  # noqa: E402

_KINDS = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}


def main() -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    events = sys.argv[1]
    parallelism = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    names = PARALLEL if parallelism > 1 else list(QUERIES)
    results = {}
    for name in names:
        query = QUERIES[name]
        t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        t_env.get_config().set("parallelism.default", str(parallelism))
        t_env.execute_sql(nexmark_ddl({"connector": "filesystem", "path": events, "format": "json"}))
        for view in VIEWS:
            t_env.execute_sql(view)
        table = t_env.sql_query(query)
        final = FinalTable()
        with table.execute().collect() as rows:
            for r in rows:
                final.add(_KINDS[r.get_row_kind().name], normalize_row(list(r)))
        results[name] = {"schema": str(table._j_table.getResolvedSchema().toString()), **final.summary()}
        print(name, results[name]["count"], flush=True)
    (HERE / ("expected.json" if parallelism == 1 else "expected_p2.json")).write_text(
        json.dumps(results, indent=1, sort_keys=True) + "\n"
    )
    os._exit(0)  # the gateway JVM's threads would keep the interpreter waiting


if __name__ == "__main__":
    main()
