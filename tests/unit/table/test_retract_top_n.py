"""Top-N over an updating input (RetractableTopNFunction): ranks shift as counts change, ties keep arrival
order, a retracted top row lets the next one in, and the partition's rows survive a snapshot on both backends."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.table.runtime.functions import RowKeySelector
from fluvial.table.runtime.rank import RetractableTopNFunction
from fluvial.testing.harness import OperatorHarness

NAMES = ["cat", "item", "cnt"]
INS, UB, UA, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE


def row(kind: RowKind, *values) -> Row:
    return _create_row(NAMES, list(values), kind)


def harness(limit: int = 2, rank_output: bool = True, backend=None, ttl: int = 0) -> OperatorHarness:
    names = NAMES + ["rn"] if rank_output else NAMES
    top_n = RetractableTopNFunction(names, [(2, True)], limit, rank_output, ttl)  # ORDER BY cnt DESC
    return OperatorHarness.of(lambda s: s.key_by(RowKeySelector((0,))).process(top_n), state_backend=backend)


def changes(values: list) -> list[tuple]:
    return [(v.get_row_kind().short_string(), *v) for v in values]


def update(h: OperatorHarness, item: str, old: int, new: int, cat: str = "a") -> None:
    h.process_element(row(UB, cat, item, old))
    h.process_element(row(UA, cat, item, new))


def test_ranks_shift_when_a_count_overtakes_and_ties_keep_arrival_order():
    h = harness().open()
    h.process_element(row(INS, "a", "x", 1))
    h.process_element(row(INS, "a", "y", 1))  # ties x: ranked after it
    h.process_element(row(INS, "a", "z", 1))  # third: outside the top 2
    assert changes(h.take_values()) == [("+I", "a", "x", 1, 1), ("+I", "a", "y", 1, 2)]
    update(h, "z", 1, 2)  # z overtakes both
    assert changes(h.take_values()) == [
        ("-U", "a", "x", 1, 1),
        ("+U", "a", "z", 2, 1),
        ("-U", "a", "y", 1, 2),
        ("+U", "a", "x", 1, 2),
    ]
    update(h, "x", 1, 3)  # x leaves rank 2 (y, the next of the 1s, fills it) and comes back at rank 1
    assert changes(h.take_values()) == [
        ("-U", "a", "x", 1, 2),
        ("+U", "a", "y", 1, 2),
        ("-U", "a", "z", 2, 1),
        ("+U", "a", "x", 3, 1),
        ("-U", "a", "y", 1, 2),
        ("+U", "a", "z", 2, 2),
    ]


def test_a_deleted_top_row_brings_in_the_next_and_partitions_are_separate():
    h = harness().open()
    for item, cnt in (("x", 5), ("y", 4), ("z", 3)):
        h.process_element(row(INS, "a", item, cnt))
    h.process_element(row(INS, "b", "q", 1))
    h.take_values()
    h.process_element(row(D, "a", "x", 5))
    assert changes(h.take_values()) == [
        ("-U", "a", "x", 5, 1),
        ("+U", "a", "y", 4, 1),
        ("-U", "a", "y", 4, 2),
        ("+U", "a", "z", 3, 2),
    ]
    h.process_element(row(D, "a", "z", 3))
    h.process_element(row(D, "a", "y", 4))
    assert changes(h.take_values()) == [("-D", "a", "z", 3, 2), ("-D", "a", "y", 4, 1)]
    with pytest.raises(ValueError, match="never received"):  # an inconsistent input, no TTL to excuse it
        h.process_element(row(D, "a", "w", 9))


def test_without_the_rank_only_rows_entering_or_leaving_the_top_n_are_emitted():
    h = harness(rank_output=False).open()
    for item, cnt in (("x", 5), ("y", 4), ("z", 3)):
        h.process_element(row(INS, "a", item, cnt))
    assert changes(h.take_values()) == [("+I", "a", "x", 5), ("+I", "a", "y", 4)]
    update(h, "x", 5, 6)  # stays in the top 2: out and back in, y untouched
    assert changes(h.take_values()) == [
        ("-D", "a", "x", 5),
        ("+I", "a", "z", 3),
        ("+I", "a", "x", 6),
        ("-D", "a", "z", 3),
    ]
    update(h, "z", 3, 7)
    assert changes(h.take_values()) == [("+I", "a", "z", 7), ("-D", "a", "y", 4)]
    h.process_element(row(INS, "a", "y", 4))  # a duplicate of a row outside the top 2: nothing
    h.process_element(row(D, "a", "y", 4))
    assert changes(h.take_values()) == []


def test_the_partition_expires_with_the_state_ttl_and_a_retraction_of_an_expired_row_is_skipped():
    h = harness(ttl=1_000).open()
    now = [10_000]
    h.operator.keyed_backend.ttl_clock = lambda: now[0]
    h.process_element(row(INS, "a", "x", 5))
    now[0] += 2_000  # past table.exec.state.ttl without a write: the partition's rows are gone
    h.process_element(row(INS, "a", "y", 1))
    h.process_element(row(D, "a", "x", 5))
    assert changes(h.take_values()) == [("+I", "a", "x", 5, 1), ("+I", "a", "y", 1, 1)]
    now[0] += 600
    h.process_element(row(INS, "a", "w", 0))  # rewrites the sort keys, not y's rows
    now[0] += 600  # y's rows expired, the sort keys not: y's sort key is dropped when met
    h.process_element(row(INS, "a", "v", 3))
    h.process_element(row(UB, "a", "y", 1))
    # w moves up to rank 1 in the operator's view (rank 1 expired with y), v takes it: stale state, as in Flink
    assert changes(h.take_values()) == [
        ("+I", "a", "w", 0, 2),
        ("-U", "a", "w", 0, 1),
        ("+U", "a", "v", 3, 1),
        ("+I", "a", "w", 0, 2),
    ]


@pytest.mark.timeout(30)
def test_every_row_of_the_partition_survives_a_snapshot_and_restore(backend):
    h = harness(backend=backend).open()
    for item, cnt in (("x", 5), ("y", 4), ("z", 3)):
        h.process_element(row(INS, "a", item, cnt))
    h.take_values()
    snapshot = h.snapshot(checkpoint_id=1)
    h.close()
    restored = harness(backend=backend).open(restore=[snapshot])
    restored.process_element(row(D, "a", "y", 4))  # z, kept though outside the top 2, takes rank 2
    assert changes(restored.take_values()) == [("-U", "a", "y", 4, 2), ("+U", "a", "z", 3, 2)]
    restored.close()


@pytest.mark.parametrize("rank_output", [True, False])
def test_the_emitted_changelog_always_applies_to_the_top_n_of_the_held_rows(rank_output):
    """Against an oracle: random adds and retractions (ties, duplicates), after each the changelog so far, applied
    as a table, equals the top 3 of the held rows sorted stably (ties in arrival order)."""
    h = harness(limit=3, rank_output=rank_output).open()
    rng = random.Random(7)
    held: list[tuple] = []
    table: Counter = Counter()
    for _ in range(300):
        if held and rng.random() < 0.45:
            values = rng.choice(held)
            held.remove(values)
            h.process_element(row(rng.choice((UB, D)), *values))
        else:
            values = ("a", rng.choice("uvwxyz"), rng.randrange(5))
            held.append(values)
            h.process_element(row(rng.choice((INS, UA)), *values))
        for kind, *out in changes(h.take_values()):
            table[tuple(out)] += 1 if kind in ("+I", "+U") else -1
        ranked = sorted(held, key=lambda v: -v[2])[:3]
        expected = [(*v, rank + 1) for rank, v in enumerate(ranked)] if rank_output else ranked
        assert min(table.values(), default=0) >= 0 and +table == Counter(expected)
