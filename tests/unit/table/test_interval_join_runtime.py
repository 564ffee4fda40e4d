"""The interval join operator on the harness: its sorted index of times against a brute-force oracle on both
state backends and across a restore, and its state cleared by event-time and processing-time timers (the
planning of processing-time interval joins is in test_time_joins.py)."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from fluvial.common.row import RowKind, _create_row
from fluvial.table.runtime.functions import RowKeySelector
from fluvial.table.runtime.interval_join import IntervalJoinFunction
from fluvial.testing import OperatorHarness

pytestmark = pytest.mark.timeout(60)

EPOCH = dt.datetime(2024, 1, 1)
BASE = int(EPOCH.replace(tzinfo=dt.UTC).timestamp() * 1000)  # the rows' times are milliseconds after EPOCH
NAMES = ["k", "id", "ts", "k0", "id0", "ts0"]


def _row(k: int, i: int, millis: int) -> object:
    return _create_row(["k", "id", "ts"], [k, i, EPOCH + dt.timedelta(milliseconds=millis)], RowKind.INSERT)


def _harness(join_type: str, bounds: tuple[int, int], backend=None, proctime: bool = False) -> OperatorHarness:
    function = IntervalJoinFunction(NAMES, (3, 3), (2, 2), bounds, join_type, None, proctime)
    return OperatorHarness.of_two_inputs(
        lambda a, b: a.connect(b).key_by(RowKeySelector([0]), RowKeySelector([0])).process(function),
        state_backend=backend,
    )


def _ids(rows) -> list[tuple]:
    return sorted((r[1], r[4]) for r in rows)


def test_the_sorted_index_joins_as_a_linear_scan_would_across_a_restore(backend) -> None:
    rng = random.Random(7)
    lower, upper = -300, 200
    lefts = [(rng.randrange(3), i, rng.randrange(0, 5000)) for i in range(120)]
    rights = [(rng.randrange(3), 1000 + i, rng.randrange(0, 5000)) for i in range(120)]
    expected = sorted(
        (li, ri) for lk, li, lt in lefts for rk, ri, rt in rights if lk == rk and lower <= lt - rt <= upper
    )
    expected += [(li, None) for lk, li, lt in lefts if not any(li == e[0] for e in expected)]
    out: list = []
    h = _harness("LEFT", (lower, upper), backend).open()
    for n, (left, right) in enumerate(zip(lefts, rights)):
        h.process_element1(_row(*left))
        h.process_element2(_row(*right))
        if n == 60:  # the index is rebuilt from the restored MapState
            snapshot = h.snapshot()
            out += h.take_values()
            h.close()
            h = _harness("LEFT", (lower, upper), backend).open([snapshot])
    h.process_watermark(BASE + 10_000, input=1).process_watermark(BASE + 10_000, input=2)
    out += h.take_values()
    assert _ids(out) == sorted(expected, key=lambda e: (e[0], -1 if e[1] is None else e[1]))
    assert h.keyed_state_entries() == {} and h.timer_count() == 0
    h.close()


def test_event_time_expiry_removes_a_prefix_and_late_rows_do_not_match(backend) -> None:
    h = _harness("INNER", (0, 1000), backend).open()  # left - right in [0, 1s]
    h.process_element2(_row(1, 10, 1000)).process_element2(_row(1, 11, 3000))
    h.process_watermark(BASE + 2000, input=1).process_watermark(
        BASE + 2000, input=2
    )  # the right row at 1s expires (1s + 1s)
    h.process_element1(_row(1, 1, 1500))  # late for the right row at 1s: it is gone
    h.process_element1(_row(1, 2, 3500))
    assert _ids(h.take_values()) == [(2, 11)]
    h.close()


def test_processing_time_rows_take_their_arrival_and_timers_clear_them() -> None:
    h = _harness("LEFT", (-1000, 0), proctime=True).open()  # l.p BETWEEN r.p - 1s AND r.p
    h.set_processing_time(1000)
    h.process_element1(_row(1, 1, 0))  # the row's ts column is ignored: its time is its arrival (1000)
    h.process_element1(_row(2, 2, 0))
    h.set_processing_time(1500)
    h.process_element2(_row(1, 10, 0))  # 1000 - 1500 in [-1s, 0]: joins
    assert _ids(h.take_values()) == [(1, 10)]
    h.set_processing_time(2001)  # the left rows expire (1000 + 1s) and the unmatched one is padded
    assert _ids(h.take_values()) == [(2, None)]
    h.set_processing_time(2600)
    h.process_element2(_row(1, 11, 0))  # the left row at 1000 is gone
    assert h.take_values() == []
    h.set_processing_time(10_000)
    assert h.keyed_state_entries() == {} and h.timer_count() == 0
    h.close()
