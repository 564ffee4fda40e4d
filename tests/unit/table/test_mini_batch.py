"""Mini-batch GROUP BY (one phase, and local-global): the bundle is finished on size, on the latency timer,
before a watermark and a checkpoint barrier, and at end of input; every mode ends in the same final table."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.datastream.transformations import MapBundleSpec
from fluvial.table.planner.rex import AggCall
from fluvial.table.runtime.functions import GroupAggFunction, RowKeySelector
from fluvial.table.runtime.mini_batch import GlobalGroupAggFunction, LocalGroupAggFunction, MiniBatchGroupAggFunction
from fluvial.table.types import DataTypes
from fluvial.testing.harness import OperatorHarness

pytestmark = pytest.mark.timeout(60)

NAMES = ["word", "cnt", "total"]
CALLS = (AggCall("COUNT", (), DataTypes.BIGINT(False), "cnt"), AggCall("SUM", (1,), DataTypes.INT(), "total"))
KEY = RowKeySelector((0,))


def row(kind: RowKind, *values) -> Row:
    return _create_row(["word", "n"], list(values), kind)


def changes(values: list) -> list[tuple]:
    return [(v.get_row_kind().short_string(), *v) for v in values]


def one_phase(size: int = 1000, latency: int = 100, calls=CALLS, names=NAMES) -> OperatorHarness:
    function = MiniBatchGroupAggFunction(names, 1, calls)
    return OperatorHarness(MapBundleSpec(function, KEY, bundle_key=KEY, max_size=size, latency_millis=latency))


def local(size: int = 1000, calls=CALLS) -> OperatorHarness:
    names = ["word", *(f"acc{i}" for i in range(len(calls))), "count1"]
    return OperatorHarness(MapBundleSpec(LocalGroupAggFunction(names, 1, calls), bundle_key=KEY, max_size=size))


def global_(size: int = 1000, calls=CALLS, names=NAMES) -> OperatorHarness:
    function = GlobalGroupAggFunction(names, 1, calls)
    return OperatorHarness(MapBundleSpec(function, KEY, bundle_key=KEY, max_size=size, latency_millis=100))


def test_a_full_bundle_is_folded_with_one_change_per_key():
    h = one_phase(size=3).open()
    h.process_element(row(RowKind.INSERT, "a", 1))
    h.process_element(row(RowKind.INSERT, "a", 2))
    assert h.take_values() == []
    h.process_element(row(RowKind.INSERT, "b", 5))
    assert changes(h.take_values()) == [("+I", "a", 2, 3), ("+I", "b", 1, 5)]
    h.process_elements([row(RowKind.INSERT, "a", 4), row(RowKind.DELETE, "b", 5), row(RowKind.INSERT, "a", 1)])
    assert changes(h.take_values()) == [("-U", "a", 2, 3), ("+U", "a", 4, 8), ("-D", "b", 1, 5)]


def test_a_buffer_larger_than_the_bundle_is_split_where_the_bundle_fills():
    h = one_phase(size=2).open()
    h.process_elements([row(RowKind.INSERT, "a", n) for n in range(5)])
    assert changes(h.take_values()) == [
        ("+I", "a", 2, 1),
        ("-U", "a", 2, 1),
        ("+U", "a", 4, 6),
    ]
    h.end_input()
    assert changes(h.take_values()) == [("-U", "a", 4, 6), ("+U", "a", 5, 10)]


def test_the_latency_timer_finishes_a_bundle_that_never_fills():
    h = one_phase(latency=100).open()
    h.set_processing_time(1_000)
    h.process_element(row(RowKind.INSERT, "a", 1))
    h.set_processing_time(1_050)
    h.process_element(row(RowKind.INSERT, "a", 2))
    h.set_processing_time(1_099)
    assert h.take_values() == []
    h.set_processing_time(1_100)
    assert changes(h.take_values()) == [("+I", "a", 2, 3)]
    h.set_processing_time(1_150)
    h.process_element(row(RowKind.INSERT, "a", 3))  # a new bundle: its own deadline, 1 250
    h.set_processing_time(1_249)
    assert h.take_values() == []
    h.set_processing_time(1_250)
    assert changes(h.take_values()) == [("-U", "a", 2, 3), ("+U", "a", 3, 6)]


def test_a_watermark_follows_the_bundle_it_finishes():
    h = one_phase().open()
    h.process_element(row(RowKind.INSERT, "a", 1))
    h.process_watermark(10)
    assert changes(h.take_values()) == [("+I", "a", 1, 1)]
    assert h.watermarks() == [10]


def test_the_bundle_goes_out_before_the_barrier_and_restored_state_goes_on():
    h = one_phase().open()
    h.process_elements([row(RowKind.INSERT, "a", 1), row(RowKind.INSERT, "a", 2)])
    snapshot = h.snapshot(checkpoint_id=1)
    assert changes(h.take_values()) == [("+I", "a", 2, 3)]  # emitted before the barrier: covered downstream
    h.close()
    restored = one_phase().open(restore=[snapshot])
    restored.process_element(row(RowKind.INSERT, "a", 10))
    restored.end_input()
    assert changes(restored.take_values()) == [("-U", "a", 2, 3), ("+U", "a", 3, 13)]


def test_local_partials_merge_into_the_global_aggregate():
    lo = local(size=4).open()
    lo.process_elements([row(RowKind.INSERT, "a", 1), row(RowKind.INSERT, "b", 2), row(RowKind.INSERT, "a", 3)])
    lo.process_element(row(RowKind.DELETE, "b", 2))
    partials = lo.take_values()
    assert [(p[0], p[-1]) for p in partials] == [("a", 2), ("b", 0)]  # key, row count of the batch
    assert lo.keyed_state_entries() == {}  # the local phase keeps no state
    gl = global_().open()
    gl.process_elements(partials)
    gl.end_input()
    assert changes(gl.take_values()) == [("+I", "a", 2, 4)]  # b's rows cancelled out in the batch


# -- every mode ends in the same final table ---------------------------------------------------------------------

ALL_CALLS = (
    AggCall("COUNT", (), DataTypes.BIGINT(False), "c"),
    AggCall("COUNT", (1,), DataTypes.BIGINT(False), "cv"),
    AggCall("SUM", (1,), DataTypes.INT(), "s"),
    AggCall("MIN", (1,), DataTypes.INT(), "lo"),
    AggCall("MAX", (1,), DataTypes.INT(), "hi"),
    AggCall("AVG", (1,), DataTypes.INT(), "a"),
    AggCall("VAR_POP", (1,), DataTypes.DOUBLE(), "var"),
)
ALL_NAMES = ["word", *(c.name for c in ALL_CALLS)]


def final_table(changelog: list[Row]) -> dict:
    table: dict = {}
    for change in changelog:
        key = change[0]
        if change.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            table[key] = tuple(change)
        else:
            assert table.pop(key) == tuple(change), "a retraction must take back what was emitted"
    return {k: tuple(round(v, 6) if isinstance(v, float) else v for v in r) for k, r in table.items()}


def run(h: OperatorHarness, buffers: list[list[Row]]) -> list[Row]:
    h.open()
    for buffer in buffers:
        h.process_elements(buffer)
    h.end_input()
    return h.take_values()


changelogs = st.lists(
    st.tuples(st.sampled_from("abc"), st.one_of(st.none(), st.integers(-5, 5)), st.booleans()), max_size=40
)


def as_changelog(steps: list[tuple]) -> list[Row]:
    """Inserts, and retractions of rows inserted before (a valid changelog), NULLs among the values."""
    live: list[tuple] = []
    out = []
    for word, n, retract in steps:
        if retract and live:
            old = live.pop(0 if n is None else abs(n) % len(live))
            out.append(row(RowKind.UPDATE_BEFORE if n else RowKind.DELETE, *old))
        else:
            live.append((word, n))
            out.append(row(RowKind.INSERT, word, n))
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changelogs, st.integers(1, 7))
def test_one_phase_mini_batch_and_two_phase_end_in_the_same_table(steps, size):
    rows = as_changelog(steps)
    buffers = [rows[i : i + 3] for i in range(0, len(rows), 3)]
    plain = OperatorHarness.of(lambda s: s.key_by(KEY).process(GroupAggFunction(ALL_NAMES, 1, ALL_CALLS)))
    expected = final_table(run(plain, buffers))
    assert final_table(run(one_phase(size, calls=ALL_CALLS, names=ALL_NAMES), buffers)) == expected
    partials = run(local(size, calls=ALL_CALLS), buffers)
    merged = run(
        global_(size, calls=ALL_CALLS, names=ALL_NAMES), [partials[i : i + 2] for i in range(0, len(partials), 2)]
    )
    assert final_table(merged) == expected
