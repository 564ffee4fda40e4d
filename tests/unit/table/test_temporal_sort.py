"""TemporalSortFunction on the operator harness: rows in time order once the watermark passes them, ties by
the secondary columns with Flink's NULL order, late rows dropped, and the buffered rows through a snapshot."""

from __future__ import annotations

import datetime as dt

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.table.runtime.functions import RowKeySelector
from fluvial.table.runtime.sort import TemporalSortFunction
from fluvial.testing.harness import OperatorHarness

pytestmark = pytest.mark.timeout(30)

EPOCH = dt.datetime(1970, 1, 1)


def row(v: int | None, millis: int) -> Row:
    return _create_row(["v", "ts"], [v, EPOCH + dt.timedelta(milliseconds=millis)], RowKind.INSERT)


def harness(fields=()) -> OperatorHarness:
    return OperatorHarness.of(lambda s: s.key_by(RowKeySelector(())).process(TemporalSortFunction(1, fields)))


def values(h: OperatorHarness) -> list:
    return [r[0] for r in h.take_values()]


def test_rows_leave_in_time_order_when_the_watermark_passes_them():
    h = harness().open()
    for v, t in [(3, 3000), (1, 1000), (2, 2000)]:
        h.process_element(row(v, t))
    h.process_watermark(2000)
    assert values(h) == [1, 2]
    h.process_watermark(3000)
    assert values(h) == [3]


def test_ties_sort_by_the_secondary_columns_nulls_first_ascending_and_last_descending():
    h = harness(((0, False),)).open()
    for v in (2, None, 1):
        h.process_element(row(v, 1000))
    h.process_watermark(1000)
    assert values(h) == [None, 1, 2]
    d = harness(((0, True),)).open()
    for v in (2, None, 1):
        d.process_element(row(v, 1000))
    d.process_watermark(1000)
    assert values(d) == [2, 1, None]


def test_a_row_not_after_the_last_emitted_time_is_dropped():
    h = harness().open()
    h.process_element(row(1, 1000))
    h.process_watermark(1500)
    h.process_element(row(2, 1000))  # late
    h.process_element(row(3, 1200))  # behind the watermark, after the last emitted time: kept
    h.process_watermark(2000)
    assert values(h) == [1, 3]


def test_buffered_rows_survive_a_snapshot_and_restore():
    h = harness().open()
    h.process_element(row(1, 1000))
    snapshot = h.snapshot(checkpoint_id=1)
    h.close()
    restored = harness().open(restore=[snapshot])
    restored.process_watermark(1000)
    assert values(restored) == [1]
