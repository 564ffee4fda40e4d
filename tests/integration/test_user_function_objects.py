"""The user's function objects in a running job: which object runs, and on which attribute layout.

A job in thread mode runs the user's own object as its first subtask, so the user reads back what it kept. A job
that may need copies (checkpoints, restarts, parallel subtasks) pickles the object for its templates, which puts
it on CPython's slow attribute layout; that subtask then runs a stand-in that shares the object's values and
writes back to it at the end. Every copy, in any mode, is born on the fast layout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fluvial.common.instance_layout import attributes_inline
from fluvial.datastream import MapFunction
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import ExecutionMode, environment
from tests.unit.common.test_wire import cpython_311_layout

pytestmark = pytest.mark.timeout(60)

N = 2_000


class Tally(MapFunction):
    """Counts by rebinding an attribute, appends to a list the user holds, and notes the layout it ran on."""

    def __init__(self, seen: list[int], directory: str) -> None:
        self.seen = seen
        self.directory = directory
        self.count = 0
        self.inline_while_running: bool | None = None

    def open(self, runtime_context: object) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()

    def map(self, value: int) -> int:
        if self.count == 0:
            self.inline_while_running = attributes_inline(self)
        self.count += 1
        self.seen.append(value)
        return value

    def close(self) -> None:
        Path(self.directory, str(self.subtask)).write_text(f"{self.count} {self.inline_while_running}")


def run(mode: ExecutionMode, parallelism: int, checkpoints: bool, tally: Tally) -> dict[int, tuple[int, str]]:
    env = environment(mode)
    env.set_parallelism(parallelism)
    if checkpoints:
        env.enable_checkpointing(50)
    env.from_source(NumberSequenceSource(1, N), source_name="numbers").map(tally).print()
    env.execute("tally")
    reports = {}
    for name in os.listdir(tally.directory):
        count, inline = Path(tally.directory, name).read_text().split()
        reports[int(name)] = (int(count), inline)
    return reports


@pytest.mark.parametrize("checkpoints", [False, True], ids=["no copies", "templates taken"])
def test_thread_mode_reads_back_what_the_users_own_object_counted_and_collected(tmp_path, checkpoints):
    seen: list[int] = []
    tally = Tally(seen, str(tmp_path))
    reports = run(ExecutionMode.THREADS, 1, checkpoints, tally)
    assert reports == {0: (N, str(tally.inline_while_running))}
    assert tally.count == N  # rebound by a stand-in when templates were taken: written back at the end
    assert sorted(seen) == list(range(1, N + 1))  # appended in place to the user's own list


@cpython_311_layout
@pytest.mark.parametrize(
    ("mode", "parallelism", "checkpoints"),
    [
        (ExecutionMode.THREADS, 1, False),
        (ExecutionMode.THREADS, 1, True),
        (ExecutionMode.THREADS, 2, False),
        (ExecutionMode.PROCESSES, 2, True),
    ],
)
def test_every_subtask_runs_its_function_on_the_fast_attribute_layout(tmp_path, mode, parallelism, checkpoints):
    reports = run(mode, parallelism, checkpoints, Tally([], str(tmp_path)))
    assert sum(count for count, _ in reports.values()) == N
    assert {inline for _, inline in reports.values()} == {"True"}, reports
