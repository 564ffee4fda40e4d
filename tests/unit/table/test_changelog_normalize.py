"""ChangelogNormalize: an upsert stream (upsert-kafka's) made a full changelog per primary key, with its state
through a real snapshot and restore."""

from __future__ import annotations

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.table.runtime.changelog_normalize import ChangelogNormalizeFunction
from fluvial.table.runtime.functions import RowKeySelector
from fluvial.testing.harness import OperatorHarness

NAMES = ["id", "name", "cnt"]


def row(kind: RowKind, *values) -> Row:
    return _create_row(NAMES, list(values), kind)


def harness() -> OperatorHarness:
    return OperatorHarness.of(lambda s: s.key_by(RowKeySelector((0,))).process(ChangelogNormalizeFunction(NAMES)))


def changes(values: list) -> list[tuple]:
    return [(v.get_row_kind().short_string(), *v) for v in values]


def test_upserts_become_inserts_and_update_pairs_and_duplicates_are_dropped():
    h = harness().open()
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_element(row(RowKind.UPDATE_AFTER, 1, "a", 2))
    h.process_element(row(RowKind.INSERT, 1, "a", 2))  # the same row again (a re-read message): nothing
    h.process_element(row(RowKind.INSERT, 2, "b", 7))
    assert changes(h.take_values()) == [
        ("+I", 1, "a", 1),
        ("-U", 1, "a", 1),
        ("+U", 1, "a", 2),
        ("+I", 2, "b", 7),
    ]


def test_a_tombstone_deletes_the_kept_row_of_a_known_key_only():
    h = harness().open()
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_element(row(RowKind.DELETE, 1, None, None))  # a tombstone carries only the key
    h.process_element(row(RowKind.DELETE, 1, None, None))
    h.process_element(row(RowKind.DELETE, 9, None, None))
    h.process_element(row(RowKind.INSERT, 1, "a", 5))
    assert changes(h.take_values()) == [("+I", 1, "a", 1), ("-D", 1, "a", 1), ("+I", 1, "a", 5)]


@pytest.mark.timeout(30)
def test_the_kept_rows_survive_a_snapshot_and_restore():
    h = harness().open()
    h.process_element(row(RowKind.INSERT, 1, "a", 1))
    h.process_element(row(RowKind.INSERT, 2, "b", 2))
    snapshot = h.snapshot(checkpoint_id=1)
    h.close()
    restored = harness().open(restore=[snapshot])
    restored.process_element(row(RowKind.INSERT, 1, "a", 1))
    restored.process_element(row(RowKind.INSERT, 2, "b", 3))
    restored.process_element(row(RowKind.DELETE, 1, None, None))
    assert changes(restored.take_values()) == [("-U", 2, "b", 2), ("+U", 2, "b", 3), ("-D", 1, "a", 1)]
