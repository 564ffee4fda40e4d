"""The event-time temporal join operator on the harness, on both state backends: a left row waits for the
watermark and joins the version valid at its time, deletions and update-befores of the versioned side, late left
rows against the versions cleanup kept, LEFT padding, the left row's kind, and a restore in the middle (the
planning and the results against PyFlink's are in the differential suite)."""

from __future__ import annotations

import datetime as dt

import pytest

from fluvial.common.row import RowKind, _create_row
from fluvial.table.planner.rex import Call, InputRef, Literal
from fluvial.table.runtime.functions import RowKeySelector
from fluvial.table.runtime.temporal_join import TemporalJoinFunction
from fluvial.table.types import DataTypes
from fluvial.testing import OperatorHarness

pytestmark = pytest.mark.timeout(60)

EPOCH = dt.datetime(2024, 1, 1)
BASE = int(EPOCH.replace(tzinfo=dt.UTC).timestamp() * 1000)  # the rows' times are milliseconds after EPOCH
NAMES = ["k", "id", "ts", "k0", "rate", "ts0"]


def _at(millis: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=millis)


def _order(k: str, i: int, millis: int, kind: RowKind = RowKind.INSERT) -> object:
    return _create_row(["k", "id", "ts"], [k, i, _at(millis)], kind)


def _rate(k: str, rate: int, millis: int, kind: RowKind = RowKind.INSERT) -> object:
    return _create_row(["k", "rate", "ts"], [k, rate, _at(millis)], kind)


def _harness(join_type: str = "INNER", backend=None, condition=None) -> OperatorHarness:
    function = TemporalJoinFunction(NAMES, (3, 3), (2, 2), (0,), join_type, condition)
    return OperatorHarness.of_two_inputs(
        lambda a, b: a.connect(b).key_by(RowKeySelector([0]), RowKeySelector([0])).process(function),
        state_backend=backend,
    )


def _watermark(h: OperatorHarness, millis: int) -> OperatorHarness:
    return h.process_watermark(BASE + millis, input=1).process_watermark(BASE + millis, input=2)


def _joined(rows) -> list[tuple]:
    return [(r.get_row_kind().short_string(), r[1], r[4]) for r in rows]


def test_a_left_row_waits_for_the_watermark_and_joins_the_version_valid_at_its_time(backend) -> None:
    h = _harness(backend=backend).open()
    for rate, millis in ((10, 0), (20, 3000), (30, 10_000)):
        h.process_element2(_rate("eur", rate, millis))
    for i, millis in ((1, 1000), (2, 3500), (3, 9999), (4, 12_000), (5, 3000)):
        h.process_element1(_order("eur", i, millis))
    h.process_element1(_order("usd", 6, 500))  # no version for this key
    _watermark(h, 3400)
    assert _joined(h.take_values()) == [("+I", 1, 10), ("+I", 5, 20)]  # 5 arrived last, its time is 3000
    _watermark(h, 20_000)
    assert _joined(h.take_values()) == [("+I", 2, 20), ("+I", 3, 20), ("+I", 4, 30)]  # in arrival order
    entries = h.keyed_state_entries()
    assert "temporal-join-left" not in entries and "temporal-join-next" not in entries
    assert entries.get("temporal-join-right") == 1  # the version valid at the watermark is all that is kept
    h.close()


def test_deletions_and_update_befores_of_the_versioned_side(backend) -> None:
    h = _harness("LEFT", backend=backend).open()
    h.process_element2(_rate("eur", 10, 0))
    h.process_element2(_rate("eur", 10, 0, RowKind.UPDATE_BEFORE))  # not a version: 10 still holds at 0
    h.process_element2(_rate("eur", 11, 2000, RowKind.UPDATE_AFTER))
    h.process_element2(_rate("eur", 11, 4000, RowKind.DELETE))  # no row from 4 s
    h.process_element2(_rate("eur", 12, 6000))
    for i, millis in ((1, 1000), (2, 3000), (3, 5000), (4, 7000)):
        h.process_element1(_order("eur", i, millis))
    _watermark(h, 10_000)
    assert _joined(h.take_values()) == [("+I", 1, 10), ("+I", 2, 11), ("+I", 3, None), ("+I", 4, 12)]
    h.close()


def test_late_left_rows_join_the_versions_cleanup_kept_and_inner_drops_what_has_none(backend) -> None:
    for join_type, padded in (("INNER", []), ("LEFT", [("+I", 1, None)])):
        h = _harness(join_type, backend=backend).open()
        for rate, millis in ((10, 0), (20, 3000), (30, 8000)):
            h.process_element2(_rate("eur", rate, millis))
        h.process_element1(_order("eur", 9, 5000))
        _watermark(h, 5000)  # 9 joins 20; the version at 0 is no longer needed and goes
        assert _joined(h.take_values()) == [("+I", 9, 20)]
        h.process_element1(_order("eur", 1, 1000)).process_element1(_order("eur", 2, 4000))  # both late
        assert h.take_values() == []
        _watermark(h, 6000)
        assert _joined(h.take_values()) == [*padded, ("+I", 2, 20)]
        h.close()


def test_left_padding_when_the_rest_of_the_condition_fails_and_the_left_kind_is_kept() -> None:
    rate_above_15 = Call(
        "greater_than", (InputRef(4, DataTypes.INT(), "rate"), Literal(15, DataTypes.INT())), DataTypes.BOOLEAN()
    )
    h = _harness("LEFT", condition=rate_above_15).open()
    h.process_element2(_rate("eur", 10, 0)).process_element2(_rate("eur", 20, 2000))
    h.process_element1(_order("eur", 1, 1000)).process_element1(_order("eur", 2, 2500))
    h.process_element1(_order("eur", 2, 2500, RowKind.DELETE))
    h.process_element1(_create_row(["k", "id", "ts"], [None, 3, _at(100)], RowKind.INSERT))  # a NULL key
    _watermark(h, 3000)
    assert sorted(_joined(h.take_values())) == [("+I", 1, None), ("+I", 2, 20), ("+I", 3, None), ("-D", 2, 20)]
    h.close()


def test_a_restore_in_the_middle_gives_what_an_uninterrupted_run_gives(backend) -> None:
    def run(restore_at: int | None) -> list[tuple]:
        h = _harness("LEFT", backend=backend).open()
        out: list = []
        for n in range(40):
            key = ("eur", "usd", "gbp")[n % 3]
            if n % 4 == 0:
                h.process_element2(_rate(key, n, n * 250))
            h.process_element1(_order(key, n, n * 250 + 100))
            if n % 10 == 9:
                _watermark(h, n * 250)
            if n == restore_at:
                snapshot = h.snapshot()
                out += h.take_values()
                h.close()
                h = _harness("LEFT", backend=backend).open([snapshot])
        _watermark(h, 100_000)
        out += h.take_values()
        assert h.keyed_state_entries().get("temporal-join-left") is None and h.timer_count() == 0
        h.close()
        return sorted(_joined(out), key=lambda r: r[1])

    uninterrupted = run(None)
    assert len(uninterrupted) == 40 and uninterrupted[0] == ("+I", 0, 0)
    assert run(23) == uninterrupted
