"""BoundedOverAggFunction on the operator harness: ROWS and RANGE frames, ties, late rows, state that shrinks
as rows leave the frame, and a snapshot and restore in the middle of a frame."""

from __future__ import annotations

import datetime as dt

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.table.planner.rex import AggCall
from fluvial.table.runtime.functions import RowKeySelector
from fluvial.table.runtime.over import BoundedOverAggFunction
from fluvial.table.types import DataTypes
from fluvial.testing.harness import OperatorHarness

pytestmark = pytest.mark.timeout(30)

BASE = dt.datetime(1970, 1, 1)  # so a row's time in milliseconds is its epoch milliseconds
NAMES = ["k", "v", "ts", "total", "cnt", "low"]
CALLS = (
    AggCall("SUM", (1,), DataTypes.INT(), "total"),
    AggCall("COUNT", (), DataTypes.BIGINT(False), "cnt"),
    AggCall("MIN", (1,), DataTypes.INT(), "low"),
)


def row(k: str, v: int, millis: int) -> Row:
    return _create_row(["k", "v", "ts"], [k, v, BASE + dt.timedelta(milliseconds=millis)], RowKind.INSERT)


def harness(rows_frame: bool, preceding: int) -> OperatorHarness:
    function = BoundedOverAggFunction(NAMES, 2, rows_frame, preceding, CALLS)
    return OperatorHarness.of(lambda s: s.key_by(RowKeySelector((0,))).process(function))


def results(h: OperatorHarness) -> list[tuple]:
    return [(r[0], r[1], r[3], r[4], r[5]) for r in h.take_values()]


def test_rows_frame_keeps_the_row_and_n_before_it_in_time_order():
    h = harness(True, 1).open()
    for k, v, t in [("a", 5, 3000), ("a", 1, 1000), ("a", 3, 2000), ("b", 7, 1500)]:
        h.process_element(row(k, v, t))
    assert h.take_values() == []  # nothing before the watermark passes the rows
    h.process_watermark(5000)
    assert results(h) == [("a", 1, 1, 1, 1), ("b", 7, 7, 1, 7), ("a", 3, 4, 2, 1), ("a", 5, 8, 2, 3)]


def test_rows_frame_over_ties_counts_rows_in_arrival_order():
    h = harness(True, 1).open()
    for v in (1, 2, 4):
        h.process_element(row("a", v, 1000))
    h.process_watermark(1000)
    assert results(h) == [("a", 1, 1, 1, 1), ("a", 2, 3, 2, 1), ("a", 4, 6, 2, 2)]


def test_range_frame_shares_aggregates_within_a_timestamp_and_retracts_old_rows():
    h = harness(False, 2000).open()
    for v, t in [(1, 1000), (2, 2000), (4, 2000), (8, 4500)]:
        h.process_element(row("a", v, t))
    h.process_watermark(6000)
    assert results(h) == [("a", 1, 1, 1, 1), ("a", 2, 7, 3, 1), ("a", 4, 7, 3, 1), ("a", 8, 8, 1, 8)]
    assert h.keyed_state_entries().get("over-rows", 0) == 1  # only 4500's rows can still be in a frame


def test_range_frame_state_is_cleared_after_one_and_a_half_frames_without_rows():
    h = harness(False, 2000).open()
    h.process_element(row("a", 1, 1000))
    h.process_watermark(3999)  # the cleanup timer is at 1000 + 3000 + 1
    assert h.keyed_state_entries().get("over-rows", 0) == 1
    h.process_watermark(4001)
    assert h.keyed_state_entries().get("over-rows", 0) == 0
    assert h.keyed_state_entries().get("over-acc", 0) == 0
    h.process_element(row("a", 5, 2000))  # the key starts over: not late any more, a fresh sum
    h.process_watermark(5000)
    assert results(h) == [("a", 1, 1, 1, 1), ("a", 5, 5, 1, 5)]


def test_a_row_not_after_the_last_emitted_time_of_its_key_is_late_and_dropped():
    h = harness(True, 2).open()
    h.process_element(row("a", 1, 2000))
    h.process_watermark(2500)
    h.process_element(row("a", 100, 2000))  # late: its key emitted 2000 already
    h.process_element(row("a", 2, 2200))  # behind the watermark but after the key's last time: kept
    h.process_element(row("b", 3, 1000))  # another key has no rows yet: kept
    h.process_watermark(3000)
    assert results(h) == [("a", 1, 1, 1, 1), ("b", 3, 3, 1, 3), ("a", 2, 3, 2, 1)]


def test_rows_frame_state_survives_a_snapshot_and_restore():
    h = harness(True, 1).open()
    h.process_element(row("a", 1, 1000))
    h.process_element(row("a", 2, 2000))
    h.process_watermark(1500)
    snapshot = h.snapshot(checkpoint_id=1)
    assert results(h) == [("a", 1, 1, 1, 1)]
    h.close()
    restored = harness(True, 1).open(restore=[snapshot])
    restored.process_element(row("a", 4, 3000))
    restored.process_watermark(5000)
    assert results(restored) == [("a", 2, 3, 2, 1), ("a", 4, 6, 2, 2)]
