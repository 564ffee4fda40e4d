"""Writes the test's Nexmark events (`setup.OPTIONS`, one generator: parallelism 1) as JSON lines in the
format of Flink's `json` format, for PyFlink to read:

    .venv/bin/python -m tests.integration.table.nexmark.dump_events /tmp/nexmark-events.jsonl
"""

from __future__ import annotations

import sys

from bench.nexmark import write_events

from .setup import OPTIONS

if __name__ == "__main__":
    write_events(OPTIONS, sys.argv[1])
