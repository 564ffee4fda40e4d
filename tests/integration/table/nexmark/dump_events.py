"""Writes the test's Nexmark events (`setup.OPTIONS`) as JSON lines in the format of Flink's `json` format,
for PyFlink to read: one generator (parallelism 1) into a file, or two (parallelism 2) into a directory:

    .venv/bin/python -m tests.integration.table.nexmark.dump_events /tmp/nexmark-events.jsonl
    .venv/bin/python -m tests.integration.table.nexmark.dump_events /tmp/nexmark-events-p2 2
"""

from __future__ import annotations

import sys

from bench.nexmark import write_events

from .setup import OPTIONS

if __name__ == "__main__":
    write_events(OPTIONS, sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
