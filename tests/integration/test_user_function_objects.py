"""The user's function objects in a running job: which object runs, and on which attribute layout.

A job in thread mode runs the user's own object as its first subtask, so the user reads back what it kept. A job
that may need copies (checkpoints, restarts, parallel subtasks) pickles the object for its templates, which puts
it on CPython's slow attribute layout; that subtask then runs a stand-in that shares the object's values and
writes back to it at the end. Every copy, in any mode, is born on the fast layout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fluvial.common import Duration, Types, WatermarkStrategy
from fluvial.common.instance_layout import attributes_inline
from fluvial.common.watermark_strategy import TimestampAssigner
from fluvial.datastream import KeyedProcessFunction, MapFunction, ProcessWindowFunction
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.window import TumblingEventTimeWindows
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


class Subtasks(ProcessWindowFunction):
    """Emits, for each window, the subtask that opened this object and the object's identity."""

    def open(self, runtime_context: object) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()

    def process(self, key: int, context: object, elements: object) -> object:
        yield self.subtask, id(self)


class _Timestamps(TimestampAssigner):
    def extract_timestamp(self, value: tuple, record_timestamp: int) -> int:
        return value[1]


@pytest.mark.parametrize("mode", [ExecutionMode.THREADS, ExecutionMode.PROCESSES])
def test_each_window_subtask_opens_its_own_process_window_function(mode):
    """Two subtasks sharing one ProcessWindowFunction would each overwrite what the other kept in open()."""
    env = environment(mode)
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_Timestamps())
    windows = (
        env.from_collection([(key, 1_000 * key) for key in range(40)])
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda event: event[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(100)))
        .process(Subtasks())
    )
    opened_by = {}
    for subtask, identity in windows.execute_and_collect():
        opened_by.setdefault(identity, set()).add(subtask)
    assert sorted(map(sorted, opened_by.values())) == [[0], [1]]


class TypedTally(KeyedProcessFunction):
    """A typed process function (wrapped for its output type) that counts by rebinding an attribute."""

    def __init__(self) -> None:
        self.count = 0
        self.inline_while_running: bool | None = None

    def process_element(self, value: int, ctx: object) -> object:
        if self.count == 0:
            self.inline_while_running = attributes_inline(self)
        self.count += 1
        yield value


@cpython_311_layout
def test_a_typed_process_function_runs_on_the_fast_layout_and_reads_back():
    env = environment(ExecutionMode.THREADS)
    env.set_parallelism(1)
    env.enable_checkpointing(50)  # the job may restart: it takes templates
    tally = TypedTally()
    env.from_source(NumberSequenceSource(1, N), source_name="numbers").key_by(lambda v: v % 7).process(
        tally, output_type=Types.LONG()
    ).print()
    env.execute("typed tally")
    assert tally.count == N and tally.inline_while_running is True
