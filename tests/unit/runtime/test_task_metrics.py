"""The runtime's side of metrics: where a task's time goes, what a fused run's members are known to count, and
the metric group a function gets in any operator (an operator harness included)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fluvial.datastream import MapFunction
from fluvial.runtime.input_processor import StepResult
from fluvial.runtime.task_metrics import TaskTime, fused_member_counts
from fluvial.testing import OperatorHarness

MS = 1_000_000


def test_busy_back_pressured_and_idle_time_add_up_to_the_wall_time():
    time = TaskTime(0)
    time.after_step(StepResult.PROGRESS, 0, 30 * MS)  # 30 ms of work
    time.after_step(StepResult.IDLE, 40 * MS, 41 * MS)  # polled, nothing there: idle
    time.after_step(StepResult.BLOCKED, 50 * MS, 50 * MS)  # output full from 50 ms ...
    time.after_step(StepResult.BLOCKED, 60 * MS, 60 * MS)
    time.after_step(StepResult.PROGRESS, 80 * MS, 90 * MS)  # ... until 80 ms; then 10 ms of work
    time.add_busy(95 * MS, 100 * MS)  # a timer callback
    busy, backpressured, idle = time.totals_ms(100 * MS)
    assert (busy, backpressured, idle) == (45, 30, 25)


def test_a_task_still_blocked_counts_its_back_pressure_up_to_now():
    time = TaskTime(0)
    time.after_step(StepResult.BLOCKED, 10 * MS, 10 * MS)
    assert time.totals_ms(50 * MS) == (0, 40, 10)


def test_a_fused_run_reports_what_follows_from_its_entry_and_exit():
    # map -> filter -> map: the first map emits what it took, the last map took what it emitted
    assert fused_member_counts(100, 40, [True, False, True]) == [(100, 100), (100, 40), (40, 40)]
    # filter -> filter: what passed the first filter is unknown
    assert fused_member_counts(100, 40, [False, False]) == [(100, None), (None, 40)]
    # map -> filter -> filter -> map: the middle edge is unknown
    assert fused_member_counts(10, 3, [True, False, False, True]) == [(10, 10), (10, None), (None, 3), (3, 3)]


@given(st.lists(st.booleans(), min_size=2, max_size=8), st.integers(0, 10**6), st.integers(0, 10**6))
def test_fused_counts_never_contradict_the_run(is_map, records_in, records_out):
    if all(is_map):
        records_out = records_in  # maps only: the run emits what it takes
    counts = fused_member_counts(records_in, records_out, is_map)
    assert counts[0][0] == records_in and counts[-1][1] == records_out
    for (taken, emitted), mapping in zip(counts, is_map):
        if mapping and taken is not None and emitted is not None:
            assert taken == emitted, "a map emits what it takes"
    for (_, emitted), (taken, _) in zip(counts, counts[1:]):
        assert emitted is None or taken is None or emitted == taken, "each member takes what the one before emitted"
    if all(is_map):
        assert all(pair == (records_in, records_in) for pair in counts)


class Counted(MapFunction):
    def open(self, runtime_context):
        group = runtime_context.get_metrics_group().add_group("stage")
        self.records = group.counter("records")
        self.sizes = group.distribution("sizes")

    def map(self, value):
        self.records.inc()
        self.sizes.update(len(value))
        return value.upper()


def test_a_function_in_an_operator_harness_registers_and_updates_metrics():
    harness = OperatorHarness.of(lambda stream: stream.map(Counted())).open()
    harness.process_elements(["a", "bcd"])
    function = harness.operator.spec.function
    assert function.records.get_count() == 2 and function.sizes.get_max() == 3
    assert harness.operator.context.metrics.group.add_group("stage").counter("records") is function.records
