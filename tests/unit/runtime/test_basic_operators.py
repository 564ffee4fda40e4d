"""The operator contract (`runtime/operators/base.py`) and the basic operators (`runtime/operators/basic.py`), each
driven through fluvial.testing's OperatorHarness: map, filter, flat_map, the keyed running reduce, timestamps and
watermarks; the lifecycle order; snapshot and restore through the real checkpoint path (also at another
parallelism); a CheckpointedFunction's operator state; two-input operators' clocks and idleness."""

from __future__ import annotations

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.common.key_groups import assign_to_key_group
from fluvial.common.time import Duration
from fluvial.common.watermark_strategy import TimestampAssigner, Watermark, WatermarkGenerator, WatermarkStrategy
from fluvial.datastream import CoMapFunction, MapFunction
from fluvial.datastream.state import ListStateDescriptor, ValueStateDescriptor
from fluvial.testing import OperatorHarness

EVENTS: list[str] = []


@pytest.fixture(autouse=True)
def _clear_events():
    EVENTS.clear()
    yield


class Lifecycle(MapFunction):
    """A CheckpointedFunction that records every call the operator makes on it."""

    def initialize_state(self, context) -> None:
        EVENTS.append(f"initialize_state restored={context.is_restored()}")

    def snapshot_state(self, context) -> None:
        EVENTS.append(f"snapshot_state {context.get_checkpoint_id()}")

    def open(self, runtime_context) -> None:
        EVENTS.append("open")

    def map(self, value):
        EVENTS.append(f"map {value}")
        return value

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        EVENTS.append(f"complete {checkpoint_id}")

    def close(self) -> None:
        EVENTS.append("close")


class Counting(MapFunction):
    """Counts what it maps in operator list state; leaves a marker in union list state."""

    def initialize_state(self, context) -> None:
        store = context.get_operator_state_store()
        self.counts = store.get_list_state(ListStateDescriptor("counts"))
        self.markers = store.get_union_list_state(ListStateDescriptor("markers"))

    def open(self, runtime_context) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.seen = 0

    def snapshot_state(self, context) -> None:
        self.counts.add(self.seen)
        self.seen = 0
        self.markers.update([f"subtask-{self.subtask}"])

    def map(self, value):
        self.seen += 1
        return sorted(self.counts.get()), sorted(self.markers.get())


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp: int) -> int:
        return value[1]


def key_of(value):
    return value[0]


def add_counts(a, b):
    return a[0], a[1] + b[1]


# -- the stateless operators ----------------------------------------------------------------------------------------


def test_map_keeps_timestamps_and_order() -> None:
    harness = OperatorHarness.of(lambda s: s.map(lambda v: v * 2)).open()
    harness.process_elements([1, 2, 3], timestamps=[10, 20, 30])
    harness.process_element(4)
    assert [(r.value, r.timestamp) for r in harness.output()] == [(2, 10), (4, 20), (6, 30), (8, None)]


def test_filter_keeps_the_timestamps_of_what_it_keeps() -> None:
    harness = OperatorHarness.of(lambda s: s.filter(lambda v: v % 2 == 1)).open()
    harness.process_elements([1, 2, 3, 4], timestamps=[10, 20, 30, 40])
    harness.process_elements([6, 8])
    assert [(r.value, r.timestamp) for r in harness.output()] == [(1, 10), (3, 30)]


def test_flat_map_gives_each_result_the_timestamp_of_its_input() -> None:
    harness = OperatorHarness.of(lambda s: s.flat_map(lambda v: [v] * v)).open()
    harness.process_elements([1, 0, 2], timestamps=[5, 6, 7])
    assert [(r.value, r.timestamp) for r in harness.output()] == [(1, 5), (2, 7), (2, 7)]


def test_flat_map_returning_none_is_a_clear_error() -> None:
    harness = OperatorHarness.of(lambda s: s.flat_map(lambda v: None).name("Explode")).open()
    with pytest.raises(InvalidJobError, match="flat_map function of 'Explode' returned None for 1"):
        harness.process_element(1)


def test_operators_on_a_keyed_stream_see_the_state_of_each_records_key() -> None:
    class Running(MapFunction):
        def open(self, runtime_context) -> None:
            self.total = runtime_context.get_state(ValueStateDescriptor("total"))

        def map(self, value):
            self.total.update((self.total.value() or 0) + value[1])
            return value[0], self.total.value()

    harness = OperatorHarness.of(lambda s: s.key_by(key_of).map(Running())).open()
    harness.process_elements([("a", 1), ("b", 10), ("a", 2), ("b", 20)])
    assert harness.values() == [("a", 1), ("b", 10), ("a", 3), ("b", 30)]


def test_a_one_input_operator_has_only_input_zero() -> None:
    harness = OperatorHarness.of(lambda s: s.map(lambda v: v).name("Single"))
    with pytest.raises(InvalidJobError, match="'Single' has one input"):
        harness.operator.input(1)


# -- the keyed running reduce --------------------------------------------------------------------------------------


def test_keyed_reduce_emits_the_running_aggregate_of_each_key() -> None:
    harness = OperatorHarness.of(lambda s: s.key_by(key_of).reduce(add_counts)).open()
    harness.process_elements([("a", 1), ("b", 5), ("a", 2), ("a", 3)], timestamps=[1, 2, 3, 4])
    assert [(r.value, r.timestamp) for r in harness.output()] == [
        (("a", 1), 1),
        (("b", 5), 2),
        (("a", 3), 3),
        (("a", 6), 4),
    ]
    assert harness.keyed_state_entries() == {"_keyed_reduce": 2}


def test_keyed_reduce_refuses_an_unhashable_key_naming_it() -> None:
    harness = OperatorHarness.of(lambda s: s.key_by(lambda v: [v]).reduce(lambda a, b: a)).open()
    with pytest.raises(InvalidJobError, match="unhashable key"):
        harness.process_element(1)


def test_keyed_reduce_goes_on_from_a_snapshot() -> None:
    harness = OperatorHarness.of(lambda s: s.key_by(key_of).reduce(add_counts)).open()
    harness.process_elements([("a", 1), ("b", 5)])
    snapshot = harness.snapshot(checkpoint_id=1)
    harness.process_element(("a", 100))  # after the snapshot: lost with the failure
    harness.close()
    restored = OperatorHarness.of(lambda s: s.key_by(key_of).reduce(add_counts)).open(restore=[snapshot])
    restored.process_elements([("a", 2), ("b", 1), ("c", 7)])
    assert restored.values() == [("a", 3), ("b", 6), ("c", 7)]


def test_keyed_state_is_split_by_key_group_when_restored_at_another_parallelism() -> None:
    keys = [f"k{i}" for i in range(40)]
    old = OperatorHarness.of(lambda s: s.key_by(key_of).reduce(add_counts)).open()
    old.process_elements([(key, 1) for key in keys])
    snapshot = old.snapshot(checkpoint_id=3)
    harnesses = [
        OperatorHarness.of(lambda s: s.key_by(key_of).reduce(add_counts), parallelism=2, subtask_index=index).open(
            restore=[snapshot]
        )
        for index in range(2)
    ]
    entries = [harness.keyed_state_entries().get("_keyed_reduce", 0) for harness in harnesses]
    assert sum(entries) == 40 and min(entries) > 0, "each key lives in exactly one new subtask"
    for harness in harnesses:  # a key restored in subtask i continues there
        owned = harness.operator.keyed_backend.key_group_range
        mine = [key for key in keys if assign_to_key_group(key, 128) in owned]
        harness.process_elements([(key, 1) for key in mine])
        assert harness.values() == [(key, 2) for key in mine]


# -- timestamps and watermarks --------------------------------------------------------------------------------------


def test_timestamps_are_assigned_and_watermarks_emitted_periodically_and_at_the_end() -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10)).with_timestamp_assigner(Stamp())
    harness = OperatorHarness.of(lambda s: s.assign_timestamps_and_watermarks(strategy)).open()
    harness.process_elements([("a", 100), ("b", 150), ("c", 120)])
    assert [(r.value[0], r.timestamp) for r in harness.output()] == [("a", 100), ("b", 150), ("c", 120)]
    assert harness.watermarks() == []
    harness.advance_processing_time(200)  # the auto-watermark interval
    assert harness.watermarks() == [139]  # max timestamp - bound - 1
    harness.advance_processing_time(200)
    assert harness.watermarks() == [139], "a watermark is emitted only when it advances"
    harness.process_final_watermark()
    assert harness.watermarks()[-1] == 2**63 - 1


def test_per_event_watermarks_from_a_generator() -> None:
    class Punctuated(WatermarkGenerator):
        def on_event(self, event, event_timestamp, output) -> None:
            if event[0] == "!":
                output.emit_watermark(Watermark(event_timestamp))

        def on_periodic_emit(self, output) -> None:
            pass

    strategy = WatermarkStrategy.for_generator(lambda context: Punctuated()).with_timestamp_assigner(Stamp())
    harness = OperatorHarness.of(lambda s: s.assign_timestamps_and_watermarks(strategy)).open()
    harness.process_elements([("a", 5), ("!", 7), ("b", 9), ("!", 12)])
    assert harness.watermarks() == [7, 12]


def test_a_one_input_operator_forwards_watermarks_and_idleness() -> None:
    harness = OperatorHarness.of(lambda s: s.map(lambda v: v)).open()
    harness.process_watermark(5).process_watermark_status(idle=True).process_watermark_status(idle=False)
    assert harness.watermarks() == [5] and harness.statuses() == [True, False]
    assert harness.operator.current_watermark == 5


# -- two inputs -----------------------------------------------------------------------------------------------------


class Tag(CoMapFunction):
    def map1(self, value):
        return "left", value

    def map2(self, value):
        return "right", value


def test_two_input_operator_clock_is_the_minimum_of_its_inputs() -> None:
    harness = OperatorHarness.of_two_inputs(lambda a, b: a.connect(b).map(Tag())).open()
    harness.process_element1(1).process_element2(2)
    assert harness.values() == [("left", 1), ("right", 2)]
    harness.process_watermark(10, input=1)
    assert harness.watermarks() == []
    harness.process_watermark(7, input=2)
    assert harness.watermarks() == [7]
    harness.process_watermark(20, input=2)
    assert harness.watermarks() == [7, 10]


def test_two_input_operator_is_idle_only_while_both_inputs_are() -> None:
    harness = OperatorHarness.of_two_inputs(lambda a, b: a.connect(b).map(Tag())).open()
    harness.process_watermark(5, input=1).process_watermark(3, input=2)
    harness.process_watermark_status(idle=True, input=2)  # input 2 leaves the minimum
    assert harness.watermarks() == [3, 5] and harness.statuses() == []
    harness.process_watermark_status(idle=True, input=1)
    assert harness.statuses() == [True]
    harness.process_watermark_status(idle=False, input=2)
    assert harness.statuses() == [True, False]


def test_a_two_input_operator_refuses_records_on_any_other_input() -> None:
    harness = OperatorHarness.of_two_inputs(lambda a, b: a.connect(b).map(Tag()).name("Joined")).open()
    for wrong in (0, 3):
        with pytest.raises(InvalidJobError, match="'Joined' has two inputs"):
            harness.operator.input(wrong)


# -- lifecycle and operator state -----------------------------------------------------------------------------------


def test_lifecycle_runs_in_the_contracts_order() -> None:
    harness = OperatorHarness.of(lambda s: s.map(Lifecycle())).open()
    harness.process_element(1)
    harness.snapshot(checkpoint_id=4)
    harness.notify_checkpoint_complete(4)
    harness.end_input()
    harness.close()
    harness.close()  # closing twice closes once
    assert EVENTS == ["initialize_state restored=False", "open", "map 1", "snapshot_state 4", "complete 4", "close"]


def test_a_restored_checkpointed_function_is_told_so() -> None:
    snapshot = OperatorHarness.of(lambda s: s.map(Lifecycle())).open().snapshot(checkpoint_id=1)
    EVENTS.clear()
    OperatorHarness.of(lambda s: s.map(Lifecycle())).open(restore=[snapshot])
    assert EVENTS[0] == "initialize_state restored=True"


def test_operator_state_comes_back_at_the_same_parallelism() -> None:
    harness = OperatorHarness.of(lambda s: s.map(Counting())).open()
    harness.process_elements([1, 2, 3])
    snapshot = harness.snapshot(checkpoint_id=1)
    restored = OperatorHarness.of(lambda s: s.map(Counting())).open(restore=[snapshot])
    restored.process_element(4)
    assert restored.values() == [([3], ["subtask-0"])]


def test_operator_lists_are_dealt_out_and_union_lists_given_whole_on_rescaling() -> None:
    snapshots = []
    for index, records in enumerate([[1, 2], [3, 4, 5], [6]]):
        old = OperatorHarness.of(lambda s: s.map(Counting()), parallelism=3, subtask_index=index).open()
        old.process_elements(records)
        snapshots.append(old.snapshot(checkpoint_id=2))
    shares = []
    for index in range(2):
        new = OperatorHarness.of(lambda s: s.map(Counting()), parallelism=2, subtask_index=index)
        new.open(restore=snapshots).process_element("x")
        ((counts, markers),) = new.values()
        shares.append(counts)
        assert markers == ["subtask-0", "subtask-1", "subtask-2"], "union state goes whole to every subtask"
    assert sorted(shares[0] + shares[1]) == [1, 2, 3] and all(shares), "list items are dealt round robin"


def test_an_operator_without_state_snapshots_nothing() -> None:
    harness = OperatorHarness.of(lambda s: s.map(lambda v: v)).open()
    assert harness.snapshot(checkpoint_id=1).state is None


def test_a_failover_at_the_same_parallelism_keeps_own_lists_and_gives_every_union_list_whole() -> None:
    snapshots = []
    for index, records in enumerate([[1, 2], [3]]):
        old = OperatorHarness.of(lambda s: s.map(Counting()), parallelism=2, subtask_index=index).open()
        old.process_elements(records)
        snapshots.append(old.snapshot(checkpoint_id=2))
    for index, own_count in enumerate([2, 1]):
        new = OperatorHarness.of(lambda s: s.map(Counting()), parallelism=2, subtask_index=index)
        new.open(restore=snapshots).process_element("x")
        assert new.values() == [([own_count], ["subtask-0", "subtask-1"])]
