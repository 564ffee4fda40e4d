"""Writes the test's Nexmark events (`setup.OPTIONS`, one generator: parallelism 1) as JSON lines in the
format of Flink's `json` format, for PyFlink to read:

    .venv/bin/python -m tests.integration.table.nexmark.dump_events /tmp/nexmark-events.jsonl
"""

from __future__ import annotations

import datetime as _dt
import json
import sys

from fluvial.datastream.connectors.nexmark.generator import GeneratorSplit, NexmarkGenerator
from fluvial.table.connectors.nexmark import nexmark_config

from .setup import OPTIONS


def _plain(value: object) -> object:
    if isinstance(value, _dt.datetime):
        return value.isoformat(sep=" ", timespec="milliseconds")
    if hasattr(value, "as_dict"):
        return {k: _plain(v) for k, v in value.as_dict().items()}
    return value


def main() -> None:
    config = nexmark_config({k: v for k, v in OPTIONS.items() if k != "connector"})
    generator = NexmarkGenerator(GeneratorSplit.split(config, 1)[0])
    with open(sys.argv[1], "w") as out:
        while generator.has_next():
            for row in generator.next_rows(1000):
                out.write(json.dumps(_plain(row)) + "\n")


if __name__ == "__main__":
    main()
