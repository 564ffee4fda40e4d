"""Records of classes defined in the job's own script cross TaskManager processes: through the data plane, in
keyed state, and back to the client by execute_and_collect (the script runs as `__main__`, as a user runs it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(120)

SCRIPT = textwrap.dedent("""
    from dataclasses import dataclass
    from enum import Enum

    from fluvial.common import Configuration
    from fluvial.datastream import StreamExecutionEnvironment


    class Kind(Enum):
        SMALL = 1
        BIG = 2


    @dataclass
    class Event:
        key: str
        n: int
        kind: Kind


    def total(a: Event, b: Event) -> Event:
        return Event(a.key, a.n + b.n, Kind.BIG if a.n + b.n > 50 else Kind.SMALL)


    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", "process"))
    env.set_parallelism(2)
    events = [Event(key, i, Kind.SMALL) for i, key in enumerate("abcdefghij" * 3)]
    with env.from_collection(events).key_by(lambda e: e.key).reduce(total).execute_and_collect() as results:
        final = {}
        for event in results:
            assert type(event) is Event and type(event.kind) is Kind, type(event)
            final[event.key] = event
    print(sorted((e.key, e.n, e.kind.name) for e in final.values()))
""")


def test_classes_of_the_script_reach_every_task_manager_and_come_back(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=100, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    expected = sorted(
        (key, i + (i + 10) + (i + 20), "BIG" if i + (i + 10) + (i + 20) > 50 else "SMALL")
        for i, key in enumerate("abcdefghij")
    )
    assert run.stdout.strip().splitlines()[-1] == str(expected)
