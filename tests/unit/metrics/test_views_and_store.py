"""Rates from cumulative values, and the JobMaster's store of the latest snapshot of each subtask."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fluvial.metrics.snapshot import TaskMetricsSnapshot
from fluvial.metrics.store import MetricStore
from fluvial.metrics.views import RateView

SECOND = 1_000_000_000


def test_a_rate_is_the_growth_per_second_over_the_samples_in_the_span():
    view = RateView(span_ms=60_000)
    assert view.update(0, 0) == 0.0, "one sample has no rate"
    assert view.update(1 * SECOND, 100) == 100.0
    assert view.update(2 * SECOND, 300) == 150.0


def test_samples_older_than_the_span_leave_the_window():
    view = RateView(span_ms=5_000)
    view.update(0, 0)
    view.update(1 * SECOND, 1000)  # a burst long ago
    for second in range(2, 12):
        rate = view.update(second * SECOND, 1000 + (second - 1) * 10)
    assert rate == 10.0, "only the last five seconds count"


@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=2, max_size=30))
def test_a_steady_count_gives_its_rate_whatever_the_span(steps):
    view = RateView(span_ms=3_000)
    total = 0
    rate = 0.0
    for second, _ in enumerate(steps):
        total += 7
        rate = view.update(second * SECOND, total)
    assert abs(rate - 7.0) < 1e-9


def _snapshot(attempt: int, final: bool = False, count: int = 0) -> TaskMetricsSnapshot:
    return TaskMetricsSnapshot(
        "job", "name", 1, "Map", 0, attempt, "tm", "host", 0, task={"numRecordsIn": count}, final=final
    )


def test_the_store_keeps_the_latest_of_the_newest_attempt():
    store = MetricStore()
    assert store.update(_snapshot(0, count=5))
    assert store.update(_snapshot(0, count=9))
    assert store.task(1, 0).task["numRecordsIn"] == 9
    assert store.update(_snapshot(1, count=1)), "a new attempt starts again from zero"
    assert not store.update(_snapshot(0, final=True, count=10)), "an older attempt's late report is dropped"
    assert store.task(1, 0).attempt == 1


def test_a_final_snapshot_is_not_replaced_by_an_overtaken_periodic_one():
    store = MetricStore()
    store.update(_snapshot(0, final=True, count=10))
    assert not store.update(_snapshot(0, count=8))
    assert store.tasks()[0].task["numRecordsIn"] == 10
