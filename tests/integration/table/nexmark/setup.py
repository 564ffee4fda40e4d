"""The bounded Nexmark input the test and the recorder share (plain data: the recorder runs in PyFlink's venv).

fluvial generates it with `'connector' = 'nexmark'` and these options; the recorder gives PyFlink the same
events as a JSON-lines file (`dump_events.py` writes it from fluvial's generator), read by the filesystem
connector into a table with the reference's columns.
"""

from __future__ import annotations

BASE_TIME = 1_704_067_200_000  # 2024-01-01 00:00:00 UTC
OPTIONS = {
    "connector": "nexmark",
    "first-event.rate": "200",
    "next-event.rate": "200",
    "events.num": "6000",
    "base-time": str(BASE_TIME),
}

# the queries also compared at parallelism 2 (two generators on parallel timelines, keyed state across two
# subtasks): the joins and the aggregations
PARALLEL = ["q3", "q4", "q5", "q7", "q8"]
