"""GroupAggFunction: Flink's changelog rules, and its state through a real snapshot and restore."""

from __future__ import annotations

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.table.planner.rex import AggCall
from fluvial.table.runtime.functions import GroupAggFunction, RowKeySelector
from fluvial.table.types import DataTypes
from fluvial.testing.harness import OperatorHarness

NAMES = ["word", "cnt", "total"]
CALLS = (AggCall("COUNT", (), DataTypes.BIGINT(False), "cnt"), AggCall("SUM", (1,), DataTypes.INT(), "total"))


def row(kind: RowKind, *values) -> Row:
    return _create_row(["word", "n"], list(values), kind)


def harness() -> OperatorHarness:
    return OperatorHarness.of(lambda s: s.key_by(RowKeySelector((0,))).process(GroupAggFunction(NAMES, 1, CALLS)))


def changes(values: list) -> list[tuple]:
    return [(v.get_row_kind().short_string(), *v) for v in values]


def test_insert_update_and_delete_follow_flinks_group_aggregate():
    h = harness().open()
    h.process_element(row(RowKind.INSERT, "a", 1))
    h.process_element(row(RowKind.INSERT, "a", 2))
    h.process_element(row(RowKind.INSERT, "b", 5))
    h.process_element(row(RowKind.DELETE, "a", 1))
    h.process_element(row(RowKind.UPDATE_BEFORE, "b", 5))
    assert changes(h.take_values()) == [
        ("+I", "a", 1, 1),
        ("-U", "a", 1, 1),
        ("+U", "a", 2, 3),
        ("+I", "b", 1, 5),
        ("-U", "a", 2, 3),
        ("+U", "a", 1, 2),
        ("-D", "b", 1, 5),
    ]


def test_an_unchanged_result_emits_nothing():
    calls = (AggCall("MAX", (1,), DataTypes.INT(), "m"),)
    h = OperatorHarness.of(
        lambda s: s.key_by(RowKeySelector((0,))).process(GroupAggFunction(["word", "m"], 1, calls))
    ).open()
    h.process_element(row(RowKind.INSERT, "a", 5))
    h.process_element(row(RowKind.INSERT, "a", 3))
    assert changes(h.take_values()) == [("+I", "a", 5)]


def test_a_retraction_for_an_unknown_key_is_dropped():
    h = harness().open()
    h.process_element(row(RowKind.DELETE, "x", 1))
    assert h.take_values() == []


@pytest.mark.timeout(30)
def test_the_accumulators_survive_a_snapshot_and_restore():
    h = harness().open()
    h.process_element(row(RowKind.INSERT, "a", 1))
    snapshot = h.snapshot(checkpoint_id=1)
    h.close()
    restored = harness().open(restore=[snapshot])
    restored.process_element(row(RowKind.INSERT, "a", 10))
    assert changes(restored.take_values()) == [("-U", "a", 1, 1), ("+U", "a", 2, 11)]
