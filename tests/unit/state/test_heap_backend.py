"""HeapKeyedStateBackend: every state kind, the errors, snapshot isolation and restore with rescaling."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

from fluvial.common.errors import InvalidJobError, StateError
from fluvial.common.key_groups import assign_to_key_group, key_group_range_for_operator
from fluvial.common.time import Duration
from fluvial.datastream.functions import AggregateFunction, ReduceFunction
from fluvial.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateKind,
    StateTtlConfig,
    ValueStateDescriptor,
)
from fluvial.state.backend import NO_KEY, KeyedStateBackend, KeyedStateSnapshot
from fluvial.state.heap import HeapKeyedStateBackend


class AverageAggregate(AggregateFunction):
    """Accumulator is a mutable [sum, count] list, changed in place: the case snapshots must copy."""

    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, accumulator: list[int]) -> list[int]:
        accumulator[0] += value
        accumulator[1] += 1
        return accumulator

    def get_result(self, accumulator: list[int]) -> float:
        return accumulator[0] / accumulator[1]


class MaxReduce(ReduceFunction):
    def reduce(self, value1: int, value2: int) -> int:
        return max(value1, value2)


@pytest.fixture
def backend() -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend(128, range(0, 128))


def test_backend_satisfies_the_protocol(backend: HeapKeyedStateBackend) -> None:
    assert isinstance(backend, KeyedStateBackend)
    assert backend.current_key is NO_KEY


def test_value_state_is_per_key(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(ValueStateDescriptor("count"))
    backend.current_key = "a"
    assert state.value() is None
    state.update(1)
    backend.set_current_key("b")
    assert backend.get_current_key() == "b"
    assert state.value() is None
    state.update(5)
    backend.current_key = "a"
    assert state.value() == 1
    state.clear()
    assert state.value() is None
    backend.current_key = "b"
    state.update(None)  # Flink: update(null) clears
    assert list(backend.keys("count")) == []


def test_list_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(ListStateDescriptor("items"))
    backend.current_key = 1
    assert list(state.get()) == []
    state.add("x")
    state.add_all(["y", "z"])
    assert list(state.get()) == ["x", "y", "z"]
    assert list(state) == ["x", "y", "z"]
    given = ["p"]
    state.update(given)
    given.append("q")  # the state must not alias the caller's list
    assert list(state.get()) == ["p"]
    backend.current_key = 2
    assert list(state.get()) == []
    state.add_all([])
    assert list(backend.keys("items")) == [1], "add_all([]) creates no entry"
    backend.current_key = 1
    state.update([])
    assert list(backend.keys("items")) == []


def test_map_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(MapStateDescriptor("m"))
    backend.current_key = "k"
    assert state.is_empty()
    assert state.get("a") is None
    state.put("a", 1)
    state.put_all({"b": 2, "c": 3})
    state["d"] = 4
    assert state.contains("a") and "b" in state and not state.contains("z")
    assert state.get("c") == 3 and state["d"] == 4
    assert dict(state.items()) == {"a": 1, "b": 2, "c": 3, "d": 4}
    assert sorted(state.keys()) == ["a", "b", "c", "d"]
    assert sorted(state) == ["a", "b", "c", "d"]
    assert sorted(state.values()) == [1, 2, 3, 4]
    state.remove("a")
    del state["b"]
    state.remove("missing")
    assert dict(state.items()) == {"c": 3, "d": 4}
    backend.current_key = "other"
    assert state.is_empty() and list(state.items()) == []
    backend.current_key = "k"
    state.remove("c")
    state.remove("d")
    assert state.is_empty()
    assert list(backend.keys("m")) == [], "an emptied map leaves no entry behind"


def test_reducing_state_with_function_object_and_plain_callable(backend: HeapKeyedStateBackend) -> None:
    maximum = backend.get_state(ReducingStateDescriptor("max", MaxReduce()))
    total = backend.get_state(ReducingStateDescriptor("sum", lambda a, b: a + b))
    backend.current_key = "k"
    assert maximum.get() is None and total.get() is None
    for value in (3, 9, 4):
        maximum.add(value)
        total.add(value)
    assert maximum.get() == 9
    assert total.get() == 16
    total.clear()
    assert total.get() is None


def test_aggregating_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(AggregatingStateDescriptor("avg", AverageAggregate()))
    backend.current_key = "k"
    assert state.get() is None
    state.add(2)
    state.add(4)
    assert state.get() == 3.0
    backend.current_key = "j"
    state.add(10)
    assert state.get() == 10.0
    state.clear()
    assert state.get() is None


def test_same_name_returns_same_handle(backend: HeapKeyedStateBackend) -> None:
    first = backend.get_state(ValueStateDescriptor("v"))
    assert backend.get_state(ValueStateDescriptor("v")) is first


def test_same_name_with_another_kind_is_an_error(backend: HeapKeyedStateBackend) -> None:
    backend.get_state(ValueStateDescriptor("x"))
    with pytest.raises(StateError, match="'x' is already registered as value state and cannot also be list state"):
        backend.get_state(ListStateDescriptor("x"))


def test_state_outside_a_keyed_context_is_an_error(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(ValueStateDescriptor("x"))
    message = "keyed state 'x' used outside a keyed context: use it in a function applied to a KeyedStream"
    with pytest.raises(StateError, match=message):
        state.value()
    with pytest.raises(StateError, match=message):
        state.update(1)


def test_none_is_a_legal_key(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(ValueStateDescriptor("x"))
    backend.current_key = None
    state.update("for None")
    assert state.value() == "for None"


def test_value_table_is_the_live_state(backend: HeapKeyedStateBackend) -> None:
    table = backend.value_table("running")
    assert backend.value_table("running") is table
    table["a"] = 10
    handle = backend.get_state(ValueStateDescriptor("running"))
    backend.current_key = "a"
    assert handle.value() == 10
    snapshot = backend.snapshot_key_groups()
    assert snapshot.state_kinds == {"running": "value"}
    assert snapshot.key_groups[assign_to_key_group("a", 128)]["running"] == {"a": 10}


def test_keys_and_apply_to_all_keys(backend: HeapKeyedStateBackend) -> None:
    descriptor = ValueStateDescriptor("v")
    state = backend.get_state(descriptor)
    for key in range(5):
        backend.current_key = key
        state.update(key * 10)
    backend.current_key = "outer"
    seen = {}

    def visit(key: int, handle) -> None:
        seen[key] = handle.value()
        if key % 2:
            handle.clear()  # changing state while visiting is allowed

    backend.apply_to_all_keys(descriptor, visit)
    assert seen == {0: 0, 1: 10, 2: 20, 3: 30, 4: 40}
    assert sorted(backend.keys("v")) == [0, 2, 4]
    assert backend.current_key == "outer"
    assert list(backend.keys("unknown")) == []


def _fill(backend: HeapKeyedStateBackend, keys) -> None:
    values = backend.get_state(ValueStateDescriptor("v"))
    lists = backend.get_state(ListStateDescriptor("l"))
    maps = backend.get_state(MapStateDescriptor("m"))
    averages = backend.get_state(AggregatingStateDescriptor("avg", AverageAggregate()))
    for key in keys:
        backend.current_key = key
        values.update(f"value-{key}")
        lists.add(key)
        maps.put("k", key)
        averages.add(2)


def test_snapshot_is_isolated_from_later_changes(backend: HeapKeyedStateBackend) -> None:
    _fill(backend, ["a"])
    snapshot = backend.snapshot_key_groups()
    key_group = assign_to_key_group("a", 128)
    assert set(snapshot.key_groups) == {key_group}
    backend.current_key = "a"
    backend.get_state(ListStateDescriptor("l")).add("later")
    backend.get_state(MapStateDescriptor("m")).put("k2", "later")
    backend.get_state(AggregatingStateDescriptor("avg", AverageAggregate())).add(100)
    backend.get_state(ValueStateDescriptor("v")).update("later")
    states = snapshot.key_groups[key_group]
    assert states["l"] == {"a": ["a"]}
    assert states["m"] == {"a": {"k": "a"}}
    assert states["avg"] == {"a": [2, 1]}
    assert states["v"] == {"a": "value-a"}
    assert snapshot.state_kinds == {"v": "value", "l": "list", "m": "map", "avg": "aggregating"}


def test_snapshot_deep_copies_nested_mutable_values(backend: HeapKeyedStateBackend) -> None:
    table = backend.value_table("nested")
    table["k"] = [{"n": 1}]
    snapshot = backend.snapshot_key_groups()
    table["k"][0]["n"] = 2
    assert snapshot.key_groups[assign_to_key_group("k", 128)]["nested"]["k"] == [{"n": 1}]


def test_snapshot_survives_pickling(backend: HeapKeyedStateBackend) -> None:
    _fill(backend, range(20))
    snapshot = backend.snapshot_key_groups()
    assert pickle.loads(pickle.dumps(snapshot, protocol=5)) == snapshot


def test_restore_into_two_backends_splits_keys_by_key_group() -> None:
    keys = [f"user-{i}" for i in range(300)]
    old = HeapKeyedStateBackend(128, range(0, 128))
    _fill(old, keys)
    snapshot = old.snapshot_key_groups()

    restored = [HeapKeyedStateBackend(128, key_group_range_for_operator(128, 2, i)) for i in range(2)]
    for new in restored:
        new.restore_key_groups([snapshot])
    owned = [set(new.keys("v")) for new in restored]
    for new, own in zip(restored, owned):
        assert own == {k for k in keys if assign_to_key_group(k, 128) in new.key_group_range}
        assert set(new.keys("l")) == own and set(new.keys("m")) == own and set(new.keys("avg")) == own
    assert owned[0] | owned[1] == set(keys)
    assert not owned[0] & owned[1]

    new = restored[0]
    key = next(iter(owned[0]))
    new.current_key = key
    assert new.get_state(ValueStateDescriptor("v")).value() == f"value-{key}"
    lists = new.get_state(ListStateDescriptor("l"))
    lists.add("after restore")
    assert list(lists.get()) == [key, "after restore"]
    assert new.get_state(AggregatingStateDescriptor("avg", AverageAggregate())).get() == 2.0
    group = assign_to_key_group(key, 128)
    assert snapshot.key_groups[group]["l"][key] == [key], "restore must not alias the snapshot's values"


def test_restore_merges_snapshots_of_several_old_subtasks() -> None:
    keys = list(range(200))
    old = [HeapKeyedStateBackend(128, key_group_range_for_operator(128, 2, i)) for i in range(2)]
    for backend in old:
        _fill(backend, [k for k in keys if assign_to_key_group(k, 128) in backend.key_group_range])
    merged = HeapKeyedStateBackend(128, range(0, 128))
    merged.restore_key_groups([backend.snapshot_key_groups() for backend in old])
    assert sorted(merged.keys("v")) == keys


def test_restore_with_other_max_parallelism_is_an_error() -> None:
    old = HeapKeyedStateBackend(256, range(0, 256))
    _fill(old, ["a"])
    with pytest.raises(
        StateError,
        match="max parallelism 256 into an operator with max parallelism 128: max "
        "parallelism cannot change between a savepoint and its restore",
    ):
        HeapKeyedStateBackend(128, range(0, 128)).restore_key_groups([old.snapshot_key_groups()])


def test_restore_rejects_a_name_reused_with_another_kind() -> None:
    snapshot = KeyedStateSnapshot(128, {}, {"x": StateKind.LIST.value})
    backend = HeapKeyedStateBackend(128, range(0, 128))
    backend.get_state(ValueStateDescriptor("x"))
    with pytest.raises(StateError, match="'x' is already registered as value state"):
        backend.restore_key_groups([snapshot])


def test_snapshot_select_keeps_only_the_given_range(backend: HeapKeyedStateBackend) -> None:
    _fill(backend, range(100))
    snapshot = backend.snapshot_key_groups()
    part = snapshot.select(range(0, 64))
    assert part.key_groups and all(kg < 64 for kg in part.key_groups)
    assert part.state_kinds == snapshot.state_kinds


def test_dispose_drops_state(backend: HeapKeyedStateBackend) -> None:
    _fill(backend, ["a"])
    backend.dispose()
    assert list(backend.keys("v")) == []
    assert backend.current_key is NO_KEY
    with pytest.raises(StateError, match="disposed"):
        backend.get_state(ValueStateDescriptor("v"))


def test_bad_key_group_range_is_rejected() -> None:
    with pytest.raises(StateError, match="does not fit in range"):
        HeapKeyedStateBackend(128, range(100, 200))


def test_snapshot_of_many_int_values_covers_every_entry_in_its_key_group(backend: HeapKeyedStateBackend) -> None:
    """Its speed is measured in bench/heap_checkpoint.py (never in a timed test); here, that it is complete."""
    entries = 250_000
    table = backend.value_table("big")
    table.update(zip(range(entries), range(entries)))
    snapshot = backend.snapshot_key_groups()
    assert sum(len(states["big"]) for states in snapshot.key_groups.values()) == entries
    assert len(snapshot.key_groups) == 128


# -- descriptors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", None, 3])
def test_descriptor_needs_a_non_empty_string_name(name) -> None:
    with pytest.raises(InvalidJobError, match="needs a non-empty string name"):
        ValueStateDescriptor(name)


def test_descriptors_are_picklable_plain_data() -> None:
    descriptors = [
        ValueStateDescriptor("v", "INT"),
        ListStateDescriptor("l"),
        MapStateDescriptor("m", "STRING", "INT"),
        ReducingStateDescriptor("r", MaxReduce()),
        AggregatingStateDescriptor("a", AverageAggregate()),
    ]
    for descriptor in descriptors:
        copy = pickle.loads(pickle.dumps(descriptor, protocol=5))
        assert type(copy) is type(descriptor) and copy.name == descriptor.name
    assert pickle.loads(pickle.dumps(descriptors[2])) == descriptors[2]
    with_lambda = cloudpickle.loads(cloudpickle.dumps(ReducingStateDescriptor("r", lambda a, b: a * b)))
    assert with_lambda.get_reduce_function().reduce(3, 4) == 12


def test_descriptor_stores_ttl_config() -> None:
    descriptor = ListStateDescriptor("l")
    assert descriptor.ttl_config is None
    config = StateTtlConfig.new_builder(Duration.of_seconds(1)).build()
    descriptor.enable_time_to_live(config)
    assert descriptor.ttl_config is config and descriptor.get_ttl_config() is config
    with pytest.raises(InvalidJobError, match="enable_time_to_live needs a StateTtlConfig, got dict"):
        descriptor.enable_time_to_live({"ttl": 1000})


def test_descriptor_rejects_bad_functions() -> None:
    with pytest.raises(InvalidJobError, match="pass a ReduceFunction or a callable"):
        ReducingStateDescriptor("r", 42)
    with pytest.raises(InvalidJobError, match="lacks create_accumulator, add, get_result"):
        AggregatingStateDescriptor("a", object())
