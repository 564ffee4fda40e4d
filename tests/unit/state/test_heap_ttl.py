"""State TTL: the StateTtlConfig builder and Flink's TTL semantics on the heap backend, under a manual clock.

The rule under test everywhere: a value written (or, with OnReadAndWrite, read) at `t` has expired from
`t + ttl` on, inclusive.
"""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

from fluvial.common.errors import InvalidJobError, StateError
from fluvial.common.key_groups import assign_to_key_group
from fluvial.common.time import Duration, ManualClock, Time
from fluvial.datastream.functions import AggregateFunction
from fluvial.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateKind,
    StateTtlConfig,
    ValueStateDescriptor,
)
from fluvial.state.heap import HeapKeyedStateBackend, HeapValueState
from fluvial.state.heap_ttl import IncrementalCleanup
from fluvial.state.ttl import TtlValue, layout_for

TTL = 100
UpdateType = StateTtlConfig.UpdateType
StateVisibility = StateTtlConfig.StateVisibility


class AverageAggregate(AggregateFunction):
    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, accumulator: list[int]) -> list[int]:
        return [accumulator[0] + value, accumulator[1] + 1]

    def get_result(self, accumulator: list[int]) -> float:
        return accumulator[0] / accumulator[1]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def backend(clock: ManualClock) -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend(128, range(128), ttl_clock=clock)


def builder() -> StateTtlConfig.Builder:
    """TTL of 100 ms with no background cleanup, so only what a test configures removes anything."""
    return StateTtlConfig.new_builder(Duration.of_millis(TTL)).disable_cleanup_in_background()


def with_ttl(descriptor: StateDescriptor, ttl_builder: StateTtlConfig.Builder | None = None) -> StateDescriptor:
    descriptor.enable_time_to_live((ttl_builder or builder()).build())
    return descriptor


# -- the config and its builder ----------------------------------------------------------------------------------


def test_builder_defaults_are_flinks() -> None:
    config = StateTtlConfig.new_builder(Time.seconds(5)).build()
    assert config.get_ttl() == Duration.of_seconds(5)
    assert config.get_update_type() is UpdateType.OnCreateAndWrite
    assert config.get_state_visibility() is StateVisibility.NeverReturnExpired
    assert config.get_ttl_time_characteristic() is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
    assert config.is_enabled()
    strategies = config.get_cleanup_strategies()
    assert strategies.is_cleanup_in_background() and not strategies.in_full_snapshot()
    incremental = strategies.get_incremental_cleanup_strategy()
    assert (incremental.get_cleanup_size(), incremental.run_cleanup_for_every_record()) == (5, False)
    compact = strategies.get_rocksdb_compact_filter_cleanup_strategy()
    assert compact.get_query_time_after_num_entries() == 1000
    assert compact.get_periodic_compaction_time() == Duration.of_days(30)


def test_builder_setters_and_shortcuts() -> None:
    config = (
        StateTtlConfig.new_builder(Duration.of_minutes(1))
        .update_ttl_on_read_and_write()
        .return_expired_if_not_cleaned_up()
        .use_processing_time()
        .cleanup_full_snapshot()
        .cleanup_incrementally(10, True)
        .cleanup_in_rocksdb_compact_filter(50, Duration.of_hours(1))
        .disable_cleanup_in_background()
        .set_ttl(Duration.of_seconds(2))
        .build()
    )
    assert config.get_ttl().to_milliseconds() == 2000
    assert config.get_update_type() is UpdateType.OnReadAndWrite
    assert config.get_state_visibility() is StateVisibility.ReturnExpiredIfNotCleanedUp
    strategies = config.get_cleanup_strategies()
    assert strategies.in_full_snapshot() and not strategies.is_cleanup_in_background()
    # explicit strategies survive disable_cleanup_in_background (it only drops the defaults)
    assert strategies.get_incremental_cleanup_strategy() == StateTtlConfig.IncrementalCleanupStrategy(10, True)
    assert strategies.get_rocksdb_compact_filter_cleanup_strategy().get_query_time_after_num_entries() == 50
    again = (
        StateTtlConfig.new_builder(Duration.of_minutes(1))
        .set_update_type(UpdateType.OnCreateAndWrite)
        .set_state_visibility(StateVisibility.NeverReturnExpired)
        .update_ttl_on_create_and_write()
        .never_return_expired()
        .build()
    )
    assert again.get_update_type() is UpdateType.OnCreateAndWrite
    assert again.get_state_visibility() is StateVisibility.NeverReturnExpired


def test_disable_cleanup_in_background_drops_the_default_strategies() -> None:
    strategies = builder().build().get_cleanup_strategies()
    assert strategies.get_incremental_cleanup_strategy() is None
    assert strategies.get_rocksdb_compact_filter_cleanup_strategy() is None


@pytest.mark.parametrize("ttl", [Duration.of_millis(0), Duration.of_millis(-5), Time.seconds(0), 0, -1])
def test_non_positive_ttl_is_rejected(ttl) -> None:
    with pytest.raises(InvalidJobError, match="state TTL must be positive"):
        StateTtlConfig.new_builder(ttl)
    with pytest.raises(InvalidJobError, match="state TTL must be positive"):
        StateTtlConfig.new_builder(Duration.of_seconds(1)).set_ttl(ttl)


def test_builder_rejects_wrong_values() -> None:
    with pytest.raises(InvalidJobError, match="state TTL must be a Duration, got str"):
        StateTtlConfig.new_builder("10s")
    b = StateTtlConfig.new_builder(Duration.of_seconds(1))
    with pytest.raises(InvalidJobError, match="set_update_type needs a StateTtlConfig.UpdateType, got 'OnRead"):
        b.set_update_type("OnReadAndWrite")
    with pytest.raises(InvalidJobError, match="set_state_visibility needs a StateTtlConfig.StateVisibility"):
        b.set_state_visibility(UpdateType.OnReadAndWrite)
    with pytest.raises(InvalidJobError, match="set_ttl_time_characteristic needs"):
        b.set_ttl_time_characteristic("EventTime")
    for size in (0, -3, True, 2.5):
        with pytest.raises(InvalidJobError, match="cleanup_incrementally needs a positive number of entries"):
            b.cleanup_incrementally(size, False)
    with pytest.raises(InvalidJobError, match="cleanup_in_rocksdb_compact_filter needs a number of entries >= 0"):
        b.cleanup_in_rocksdb_compact_filter(-1)
    with pytest.raises(InvalidJobError, match="needs a Duration as periodic_compaction_time"):
        b.cleanup_in_rocksdb_compact_filter(10, "30d")


def test_config_is_plain_data() -> None:
    config = builder().update_ttl_on_read_and_write().cleanup_incrementally(3, True).build()
    assert pickle.loads(pickle.dumps(config)) == config
    assert config == builder().update_ttl_on_read_and_write().cleanup_incrementally(3, True).build()
    assert config != builder().build()
    assert hash(config) == hash(pickle.loads(pickle.dumps(config)))
    descriptor = with_ttl(ValueStateDescriptor("v"), builder().update_ttl_on_read_and_write())
    copy = cloudpickle.loads(cloudpickle.dumps(descriptor))
    assert copy == descriptor and copy.get_ttl_config().get_update_type() is UpdateType.OnReadAndWrite


def test_update_type_disabled_means_no_ttl(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    config = builder().set_update_type(UpdateType.Disabled).build()
    assert not config.is_enabled()
    descriptor = ValueStateDescriptor("v")
    descriptor.enable_time_to_live(config)
    state = backend.get_state(descriptor)
    assert type(state) is HeapValueState, "a disabled TTL keeps the plain handle"
    backend.current_key = "k"
    state.update(1)
    clock.set(10 * TTL)
    assert state.value() == 1


# -- value state and the update types ----------------------------------------------------------------------------


def test_value_expires_at_write_time_plus_ttl(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v")))
    backend.current_key = "k"
    state.update("x")
    clock.set(TTL - 1)
    assert state.value() == "x"
    clock.set(TTL)
    assert state.value() is None
    assert list(backend.keys("v")) == [], "NeverReturnExpired removes the expired value on access"


def test_on_create_and_write_does_not_renew_on_read(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v"), builder().update_ttl_on_create_and_write()))
    backend.current_key = "k"
    state.update("x")
    clock.set(60)
    assert state.value() == "x"
    clock.set(TTL)
    assert state.value() is None


def test_writes_renew_the_timestamp(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v")))
    backend.current_key = "k"
    state.update("x")
    clock.set(60)
    state.update("y")
    clock.set(60 + TTL - 1)
    assert state.value() == "y"
    clock.set(60 + TTL)
    assert state.value() is None


def test_on_read_and_write_renews_on_read(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v"), builder().update_ttl_on_read_and_write()))
    backend.current_key = "k"
    state.update("x")
    clock.set(60)
    assert state.value() == "x"  # renewed to 60
    clock.set(150)
    assert state.value() == "x"  # 60 + 100 > 150; renewed to 150
    clock.set(249)
    assert state.value() == "x"
    clock.set(249 + TTL)
    assert state.value() is None


def test_return_expired_if_not_cleaned_up_returns_it_once(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v"), builder().return_expired_if_not_cleaned_up()))
    backend.current_key = "k"
    state.update("old")
    clock.set(TTL + 50)
    assert state.value() == "old", "expired but still stored: handed out"
    assert state.value() is None, "that read cleaned it up"
    assert list(backend.keys("v")) == []


def test_default_background_cleanup_may_clean_before_a_read(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    """Flink runs the incremental cleanup (default 5 entries) before the access itself, so an expired value of
    the current key can be cleaned up before ReturnExpiredIfNotCleanedUp gets to return it."""
    config = StateTtlConfig.new_builder(Duration.of_millis(TTL)).return_expired_if_not_cleaned_up().build()
    descriptor = ValueStateDescriptor("v")
    descriptor.enable_time_to_live(config)
    state = backend.get_state(descriptor)
    backend.current_key = "k"
    state.update("old")
    clock.set(TTL)
    assert state.value() is None


def test_update_none_clears(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v")))
    backend.current_key = "k"
    state.update(1)
    state.update(None)
    assert state.value() is None and list(backend.keys("v")) == []


def test_ttl_state_outside_a_keyed_context_is_an_error(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v")))
    with pytest.raises(StateError, match="keyed state 'v' used outside a keyed context"):
        state.value()


# -- list, map, reducing, aggregating ----------------------------------------------------------------------------


def test_list_elements_expire_individually(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ListStateDescriptor("l")))
    backend.current_key = "k"
    state.add("a")
    clock.set(50)
    state.add_all(["b", "c"])
    clock.set(TTL)
    assert list(state.get()) == ["b", "c"]
    assert len(backend.value_table("l")["k"]) == 2, "a hidden expired element is freed by the read"
    assert list(state) == ["b", "c"]
    clock.set(50 + TTL)
    assert list(state.get()) == []
    assert list(backend.keys("l")) == [], "a list whose elements all expired is removed"


def test_list_update_restamps_every_element(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ListStateDescriptor("l")))
    backend.current_key = "k"
    state.add("a")
    clock.set(90)
    given = ["x", "y"]
    state.update(given)
    given.append("z")
    clock.set(189)
    assert list(state.get()) == ["x", "y"]
    state.update([])
    assert list(backend.keys("l")) == []


def test_list_on_read_and_write_renews_the_unexpired_elements(
    backend: HeapKeyedStateBackend, clock: ManualClock
) -> None:
    state = backend.get_state(with_ttl(ListStateDescriptor("l"), builder().update_ttl_on_read_and_write()))
    backend.current_key = "k"
    state.add("a")
    clock.set(50)
    state.add("b")
    clock.set(99)
    assert list(state.get()) == ["a", "b"]  # both renewed to 99
    clock.set(198)
    assert list(state.get()) == ["a", "b"]


def test_list_return_expired_keeps_returning_while_any_element_lives(
    backend: HeapKeyedStateBackend, clock: ManualClock
) -> None:
    """Flink's TtlListState: expired elements are returned (and kept) while some element is unexpired; once all
    have expired the list is returned one last time and cleared."""
    state = backend.get_state(with_ttl(ListStateDescriptor("l"), builder().return_expired_if_not_cleaned_up()))
    backend.current_key = "k"
    state.add("a")
    clock.set(50)
    state.add("b")
    clock.set(TTL)
    assert list(state.get()) == ["a", "b"]
    assert list(state.get()) == ["a", "b"]
    clock.set(50 + TTL)
    assert list(state.get()) == ["a", "b"]
    assert list(state.get()) == []


def test_map_entries_expire_individually(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(MapStateDescriptor("m")))
    backend.current_key = "k"
    state.put("x", 1)
    clock.set(50)
    state.put_all({"y": 2, "z": 3})
    clock.set(TTL)
    assert state.get("x") is None and not state.contains("x") and "x" not in state
    assert state.get("y") == 2 and state["z"] == 3
    assert dict(state.items()) == {"y": 2, "z": 3}
    assert sorted(state.keys()) == ["y", "z"] and sorted(state.values()) == [2, 3] and sorted(state) == ["y", "z"]
    assert not state.is_empty()
    clock.set(50 + TTL)
    assert state.is_empty()
    assert list(backend.keys("m")) == [], "a map whose entries all expired is removed"


def test_map_on_read_and_write_renews_only_the_entry_read(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(MapStateDescriptor("m"), builder().update_ttl_on_read_and_write()))
    backend.current_key = "k"
    state.put_all({"x": 1, "y": 2})
    clock.set(90)
    assert state.get("x") == 1
    clock.set(150)
    assert dict(state.items()) == {"x": 1}
    clock.set(240)
    assert not state.is_empty()  # is_empty reads no value, so it renews nothing: x stays stamped 150
    clock.set(250)
    assert state.is_empty()


def test_map_return_expired_returns_each_entry_once(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(MapStateDescriptor("m"), builder().return_expired_if_not_cleaned_up()))
    backend.current_key = "k"
    state.put_all({"x": 1, "y": 2})
    clock.set(50)
    state.put("z", 3)
    clock.set(TTL)
    assert state.get("x") == 1
    assert state.get("x") is None
    assert dict(state.items()) == {"y": 2, "z": 3}, "y is returned by this iteration and removed by it"
    assert dict(state.items()) == {"z": 3}


def test_reducing_state_starts_afresh_after_expiry(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ReducingStateDescriptor("r", lambda a, b: a + b)))
    backend.current_key = "k"
    state.add(3)
    clock.set(50)
    state.add(4)  # 7, stamped 50
    clock.set(149)
    assert state.get() == 7
    clock.set(150)
    state.add(1)
    assert state.get() == 1, "the expired 7 is not folded into the new value"


def test_reducing_state_folds_an_expired_value_when_expired_values_are_visible(
    backend: HeapKeyedStateBackend, clock: ManualClock
) -> None:
    state = backend.get_state(
        with_ttl(ReducingStateDescriptor("r", lambda a, b: a + b), builder().return_expired_if_not_cleaned_up())
    )
    backend.current_key = "k"
    state.add(7)
    clock.set(TTL)
    state.add(1)
    assert state.get() == 8


def test_aggregating_state_expires_as_one_value(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(AggregatingStateDescriptor("avg", AverageAggregate())))
    backend.current_key = "k"
    state.add(2)
    state.add(4)
    clock.set(TTL - 1)
    assert state.get() == 3.0
    clock.set(TTL)
    assert state.get() is None
    state.add(10)
    assert state.get() == 10.0


def test_reducing_and_aggregating_reads_follow_update_type_and_visibility(
    backend: HeapKeyedStateBackend, clock: ManualClock
) -> None:
    renewing = backend.get_state(
        with_ttl(AggregatingStateDescriptor("avg", AverageAggregate()), builder().update_ttl_on_read_and_write())
    )
    returning = backend.get_state(
        with_ttl(ReducingStateDescriptor("r", max), builder().return_expired_if_not_cleaned_up())
    )
    backend.current_key = "k"
    renewing.add(4)
    returning.add(4)
    clock.set(90)
    assert renewing.get() == 4.0  # renewed to 90
    clock.set(189)
    assert renewing.get() == 4.0
    assert returning.get() == 4, "expired, returned once"
    assert returning.get() is None


def test_keys_are_independent(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v")))
    backend.current_key = "old"
    state.update(1)
    clock.set(60)
    backend.current_key = "new"
    state.update(2)
    clock.set(TTL)
    assert state.value() == 2
    backend.current_key = "old"
    assert state.value() is None


# -- cleanup strategies -----------------------------------------------------------------------------------------


def _fill_values(backend: HeapKeyedStateBackend, descriptor: StateDescriptor, keys) -> None:
    state = backend.get_state(descriptor)
    for key in keys:
        backend.current_key = key
        state.update(f"value-{key}")


def test_incremental_cleanup_removes_untouched_expired_keys(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    descriptor = with_ttl(ValueStateDescriptor("v"), builder().cleanup_incrementally(3, False))
    _fill_values(backend, descriptor, range(10))
    state = backend.get_state(descriptor)
    clock.set(TTL)
    backend.current_key = "reader"
    state.value()
    remaining = len(list(backend.keys("v")))
    assert 7 <= remaining < 10, "one access checks at most 3 entries, and at least one here"
    for _ in range(4):
        state.update("written")  # writes are accesses too
    assert list(backend.keys("v")) == ["reader"]


def test_incremental_cleanup_keeps_unexpired_entries_and_trims_lists(
    backend: HeapKeyedStateBackend, clock: ManualClock
) -> None:
    state = backend.get_state(with_ttl(ListStateDescriptor("l"), builder().cleanup_incrementally(100, False)))
    for key in ("a", "b"):
        backend.current_key = key
        state.add("early")
    clock.set(50)
    backend.current_key = "a"
    state.add("late")
    clock.set(TTL)
    backend.current_key = "reader"
    state.get()  # the access cleans the whole (small) table
    backend.current_key = "a"
    table = backend.value_table("l")
    assert list(table) == ["a"]
    assert [e.value for e in table["a"]] == ["late"]


def test_incremental_cleanup_wakes_up_for_the_oldest_value_it_kept(
    backend: HeapKeyedStateBackend, clock: ManualClock
) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v"), builder().cleanup_incrementally(100, False)))
    backend.current_key = "a"
    state.update("a")  # stamped 0
    clock.set(50)
    backend.current_key = "b"
    state.update("b")  # this access checks "a" (stamped 0) before writing "b"
    clock.set(TTL)
    backend.current_key = "c"
    state.value()
    assert list(backend.keys("v")) == ["b"], "a round that kept a value stamped 0 must wake up at 0 + ttl"


def test_incremental_cleanup_idles_until_something_can_expire() -> None:
    class CountingDict(dict):
        gets = 0

        def get(self, *args):
            CountingDict.gets += 1
            return dict.get(self, *args)

    table = CountingDict(a=TtlValue("a", 0))
    cleanup = IncrementalCleanup(table, layout_for(StateKind.VALUE), TTL, 5)
    cleanup.run(0)
    assert CountingDict.gets == 1
    cleanup.run(TTL - 1)
    assert CountingDict.gets == 1, "nothing stamped 0 or later expires before 100: no entry is checked"
    cleanup.run(TTL)
    assert CountingDict.gets == 2 and "a" not in table
    table["b"] = TtlValue("b", 150)
    cleanup.run(150)
    assert CountingDict.gets == 2, "the round that began at 100 bounds later stamps: idle until 200"
    cleanup.run(200)
    assert CountingDict.gets == 3 and "b" in table


def test_restore_wakes_up_an_idle_incremental_cleanup(clock: ManualClock) -> None:
    ttl = builder().cleanup_incrementally(100, False)
    old = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    old.current_key = "old"
    old.get_state(with_ttl(ValueStateDescriptor("v"), ttl)).update("old")  # stamped 0
    snapshot = old.snapshot_key_groups()

    clock.set(500)
    new = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    state = new.get_state(with_ttl(ValueStateDescriptor("v"), ttl))
    new.current_key = "live"
    state.update("live")
    state.value()  # a full round over {"live"}: idle until 600
    new.restore_key_groups([snapshot])
    clock.set(550)
    state.value()
    assert list(new.keys("v")) == ["live"], "the restored value stamped 0 is cleaned up, not waited for"


def test_without_background_cleanup_untouched_keys_stay(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    descriptor = with_ttl(ValueStateDescriptor("v"))
    _fill_values(backend, descriptor, range(10))
    clock.set(TTL)
    backend.current_key = "reader"
    for _ in range(20):
        backend.get_state(descriptor).value()
    assert len(list(backend.keys("v"))) == 10


def test_cleanup_for_every_record_runs_when_the_key_changes(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    plain = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    _fill_values(plain, with_ttl(ValueStateDescriptor("v"), builder().cleanup_incrementally(5, False)), range(10))
    assert type(plain) is HeapKeyedStateBackend, "without per-record cleanup, current_key stays a plain slot"

    descriptor = with_ttl(ValueStateDescriptor("v"), builder().cleanup_incrementally(5, True))
    _fill_values(backend, descriptor, range(10))
    assert isinstance(backend, HeapKeyedStateBackend)
    clock.set(TTL)
    for key in ("r1", "r2", "r3"):  # records whose function touches no state at all
        backend.current_key = key
    assert backend.current_key == "r3" and backend.get_current_key() == "r3"
    assert list(backend.keys("v")) == []
    for key in ("r1", "r2", "r3"):
        plain.current_key = key
    assert len(list(plain.keys("v"))) == 10


def test_full_snapshot_cleanup_leaves_expired_values_out(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    ttl = builder().cleanup_full_snapshot().return_expired_if_not_cleaned_up()
    values = backend.get_state(with_ttl(ValueStateDescriptor("v"), ttl))
    lists = backend.get_state(with_ttl(ListStateDescriptor("l"), ttl))
    maps = backend.get_state(with_ttl(MapStateDescriptor("m"), ttl))
    backend.current_key = "old"
    values.update("old")
    lists.add("old")
    maps.put("old", 1)
    clock.set(50)
    backend.current_key = "new"
    values.update("new")
    lists.add("new")
    maps.put("new", 2)
    backend.current_key = "old"
    lists.add("new")
    maps.put("new", 3)
    clock.set(TTL)

    snapshot = backend.snapshot_key_groups()
    old_group = snapshot.key_groups[assign_to_key_group("old", 128)]
    assert "v" not in old_group or "old" not in old_group["v"], "the expired value is not in the snapshot"
    assert [e.value for e in old_group["l"]["old"]] == ["new"], "only the unexpired element"
    assert {k: e.value for k, e in old_group["m"]["old"].items()} == {"new": 3}, "only the unexpired entry"
    new_group = snapshot.key_groups[assign_to_key_group("new", 128)]
    assert new_group["v"]["new"] == TtlValue("new", 50), "live values keep their timestamp in the snapshot"
    assert values.value() == "old", "live state still holds the expired value: the snapshot was filtered, not it"


def test_without_full_snapshot_cleanup_expired_values_are_snapshotted(
    backend: HeapKeyedStateBackend, clock: ManualClock
) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v")))
    backend.current_key = "old"
    state.update("old")
    clock.set(10 * TTL)
    snapshot = backend.snapshot_key_groups()
    assert snapshot.key_groups[assign_to_key_group("old", 128)]["v"] == {"old": TtlValue("old", 0)}


# -- snapshots, restore, migration ---------------------------------------------------------------------------------


def test_snapshot_is_isolated_and_restore_keeps_timestamps(clock: ManualClock) -> None:
    ttl = builder().update_ttl_on_read_and_write()
    old = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    values = old.get_state(with_ttl(ValueStateDescriptor("v"), ttl))
    lists = old.get_state(with_ttl(ListStateDescriptor("l"), ttl))
    old.current_key = "k"
    values.update([1])
    lists.add({"n": 1})
    snapshot = old.snapshot_key_groups()
    clock.set(40)
    assert values.value() == [1] and list(lists.get()) == [{"n": 1}]  # renews the live timestamps to 40
    lists.get()[0]["n"] = 2  # mutate the live element in place
    group = snapshot.key_groups[assign_to_key_group("k", 128)]
    assert group["v"]["k"] == TtlValue([1], 0) and group["l"]["k"] == [TtlValue({"n": 1}, 0)]
    assert pickle.loads(pickle.dumps(snapshot, protocol=5)) == snapshot

    new = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    new.restore_key_groups([snapshot])
    restored = new.get_state(with_ttl(ValueStateDescriptor("v"), ttl))
    new.current_key = "k"
    clock.set(TTL - 1)
    assert restored.value() == [1], "written at 0 before the snapshot: alive until 100"
    clock.set(TTL - 1 + TTL)
    assert restored.value() is None


def test_restoring_plain_state_into_a_ttl_descriptor_starts_the_clock(clock: ManualClock) -> None:
    old = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    old.current_key = "k"
    old.get_state(ListStateDescriptor("l")).add_all(["a", "b"])
    old.get_state(MapStateDescriptor("m")).put("x", 1)
    snapshot = old.snapshot_key_groups()

    clock.set(500)
    new = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    new.restore_key_groups([snapshot])
    lists = new.get_state(with_ttl(ListStateDescriptor("l")))
    maps = new.get_state(with_ttl(MapStateDescriptor("m")))
    new.current_key = "k"
    clock.set(500 + TTL - 1)
    assert list(lists.get()) == ["a", "b"] and maps.get("x") == 1
    clock.set(500 + TTL)
    assert list(lists.get()) == [] and maps.get("x") is None


def test_restoring_ttl_state_into_a_plain_descriptor_drops_the_timestamps(
    backend: HeapKeyedStateBackend, clock: ManualClock
) -> None:
    backend.current_key = "k"
    backend.get_state(with_ttl(MapStateDescriptor("m"))).put("x", 1)
    backend.get_state(with_ttl(ReducingStateDescriptor("r", max))).add(5)
    snapshot = backend.snapshot_key_groups()

    new = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    new.restore_key_groups([snapshot])
    maps = new.get_state(MapStateDescriptor("m"))
    reducing = new.get_state(ReducingStateDescriptor("r", max))
    new.current_key = "k"
    clock.set(10 * TTL)
    assert dict(maps.items()) == {"x": 1}
    assert reducing.get() == 5
    reducing.add(9)
    assert reducing.get() == 9


def test_restore_into_an_open_ttl_handle_wraps_plain_entries(clock: ManualClock) -> None:
    old = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    old.current_key = "a"
    old.get_state(ValueStateDescriptor("v")).update("restored")
    snapshot = old.snapshot_key_groups()

    new = HeapKeyedStateBackend(128, range(128), ttl_clock=clock)
    state = new.get_state(with_ttl(ValueStateDescriptor("v")))
    new.current_key = "b"
    state.update("live")
    clock.set(30)
    new.restore_key_groups([snapshot])
    new.current_key = "a"
    clock.set(30 + TTL - 1)
    assert state.value() == "restored"
    clock.set(30 + TTL)
    assert state.value() is None


# -- registration and the zero-overhead path -----------------------------------------------------------------------


def test_states_without_ttl_keep_the_plain_handles_and_table(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(ValueStateDescriptor("plain"))
    assert type(state) is HeapValueState
    backend.current_key = "k"
    state.update(1)
    assert backend.value_table("plain") == {"k": 1}, "no TtlValue wrapping without TTL"
    assert type(backend) is HeapKeyedStateBackend


def test_one_name_has_one_ttl_config(backend: HeapKeyedStateBackend) -> None:
    first = backend.get_state(with_ttl(ValueStateDescriptor("v")))
    assert backend.get_state(with_ttl(ValueStateDescriptor("v"))) is first, "an equal config is the same state"
    with pytest.raises(StateError, match="'v' is already registered with a TTL of 100 ms .* without TTL"):
        backend.get_state(ValueStateDescriptor("v"))
    with pytest.raises(StateError, match="'v' is already registered with a TTL of 100 ms"):
        backend.get_state(with_ttl(ValueStateDescriptor("v"), builder().update_ttl_on_read_and_write()))
    backend.get_state(ValueStateDescriptor("plain"))
    with pytest.raises(StateError, match="'plain' is already registered without TTL"):
        backend.get_state(with_ttl(ValueStateDescriptor("plain")))


def test_a_non_config_smuggled_into_a_descriptor_is_a_clear_error(backend: HeapKeyedStateBackend) -> None:
    descriptor = ValueStateDescriptor("v")
    descriptor.ttl_config = {"ttl": 1000}
    with pytest.raises(StateError, match="has dict as its TTL config: pass a StateTtlConfig"):
        backend.get_state(descriptor)
    assert list(backend.keys("v")) == [] and "v" not in backend.snapshot_key_groups().state_kinds


def test_apply_to_all_keys_sees_only_live_values(backend: HeapKeyedStateBackend, clock: ManualClock) -> None:
    descriptor = with_ttl(ValueStateDescriptor("v"))
    state = backend.get_state(descriptor)
    backend.current_key = "old"
    state.update(1)
    clock.set(50)
    backend.current_key = "new"
    state.update(2)
    clock.set(TTL)
    seen = {}
    backend.apply_to_all_keys(descriptor, lambda key, handle: seen.__setitem__(key, handle.value()))
    assert seen == {"old": None, "new": 2}
    assert list(backend.keys("v")) == ["new"]


def test_dispose_drops_ttl_bookkeeping(backend: HeapKeyedStateBackend) -> None:
    backend.get_state(with_ttl(ValueStateDescriptor("v"), builder().cleanup_incrementally(1, True)))
    backend.current_key = "k"
    backend.dispose()
    with pytest.raises(StateError, match="disposed"):
        backend.get_state(with_ttl(ValueStateDescriptor("v")))
