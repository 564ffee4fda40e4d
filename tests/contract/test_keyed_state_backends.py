"""One contract suite over every keyed state backend: heap (HashMapStateBackend) and RocksDB, each also wrapped in
the changelog state backend (`changelog-heap`, `changelog-rocksdb`: every write logged, checkpoints as
materialization + log, restores replaying it).

Each test runs once per backend, and the restore tests once per (source, target) pair, so a heap snapshot must
restore into RocksDB and back. Only what the contract in `fluvial/state/backend.py` promises is asserted here;
what one backend does beyond it (RocksDB's native checkpoints, heap's TTL) has its own unit tests.
The one pattern both must support for internal operators is "read, change, WRITE BACK" on a value table.
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fluvial.common.errors import StateError
from fluvial.common.key_groups import assign_to_key_group, key_group_range_for_operator
from fluvial.datastream.functions import AggregateFunction, ReduceFunction
from fluvial.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateKind,
    ValueStateDescriptor,
)
from fluvial.state.backend import NO_KEY, KeyedStateBackend, KeyedStateSnapshot
from fluvial.state.heap import HeapKeyedStateBackend

try:
    from fluvial.state.rocksdb import RocksDBKeyedStateBackend
except ImportError:  # rocksdict missing: the heap half of the suite still runs
    RocksDBKeyedStateBackend = None  # type: ignore[assignment,misc]

_NEEDS_ROCKSDB = pytest.mark.skipif(
    RocksDBKeyedStateBackend is None, reason="rocksdict is not installed: pip install rocksdict==0.3.29"
)
KINDS = [
    "heap",
    pytest.param("rocksdb", marks=_NEEDS_ROCKSDB),
    "changelog-heap",
    pytest.param("changelog-rocksdb", marks=_NEEDS_ROCKSDB),
]
MAX_PARALLELISM = 128
Factory = Callable[..., Any]


class AverageAggregate(AggregateFunction):
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
def factory(tmp_path: Path) -> Any:
    """`factory(kind, key_group_range=everything)` -> a new backend; all are disposed after the test."""
    created: list[Any] = []
    numbers = itertools.count()

    def make(kind: str, key_group_range: range = range(MAX_PARALLELISM), max_parallelism: int = MAX_PARALLELISM):
        inner_kind = kind.removeprefix("changelog-")
        if inner_kind == "heap":
            backend: Any = HeapKeyedStateBackend(max_parallelism, key_group_range)
        else:
            path = tmp_path / f"rocksdb-{next(numbers)}"
            backend = RocksDBKeyedStateBackend(max_parallelism, key_group_range, str(path))
        if kind.startswith("changelog-"):
            backend = _changelog(backend)
        created.append(backend)
        return backend

    yield make
    for backend in created:
        backend.dispose()


def _changelog(inner: Any) -> Any:
    from fluvial.checkpoint.changelog_storage import InMemoryStateChangelogStorage
    from fluvial.common.task_info import TaskInfo
    from fluvial.datastream.state_backend import ChangelogSettings
    from fluvial.state.changelog import ChangelogKeyedStateBackend

    info = TaskInfo("job", "contract", 0, 1, inner.max_parallelism)
    return ChangelogKeyedStateBackend(inner, ChangelogSettings(), info, "op", InMemoryStateChangelogStorage())


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def backend(factory: Factory, kind: str) -> Any:
    return factory(kind)


def _fill(backend: Any, keys: Any) -> None:
    """Every state kind, with values that differ per key."""
    values = backend.get_state(ValueStateDescriptor("v"))
    lists = backend.get_state(ListStateDescriptor("l"))
    maps = backend.get_state(MapStateDescriptor("m"))
    reduced = backend.get_state(ReducingStateDescriptor("r", MaxReduce()))
    averages = backend.get_state(AggregatingStateDescriptor("avg", AverageAggregate()))
    for key in keys:
        backend.current_key = key
        values.update(f"value-{key}")
        lists.add_all([key, "x"])
        maps.put_all({"k": key, ("nested", key): [key]})
        reduced.add(3)
        reduced.add(7)
        averages.add(2)
        averages.add(4)


def _entries(snapshot: KeyedStateSnapshot) -> dict[str, dict[Any, Any]]:
    """state name -> key -> value, flattened over key groups (entry order does not matter)."""
    flat: dict[str, dict[Any, Any]] = {}
    for states in snapshot.key_groups.values():
        for name, entries in states.items():
            flat.setdefault(name, {}).update(entries)
    return flat


# -- handles ---------------------------------------------------------------------------------------------------


def test_satisfies_the_protocol(backend: Any) -> None:
    assert isinstance(backend, KeyedStateBackend)
    assert backend.current_key is NO_KEY


def test_value_state(backend: Any) -> None:
    state = backend.get_state(ValueStateDescriptor("count"))
    backend.current_key = "a"
    assert state.value() is None
    state.update(1)
    backend.set_current_key("b")
    assert backend.get_current_key() == "b"
    assert state.value() is None
    state.update({"nested": [5]})
    backend.current_key = "a"
    assert state.value() == 1
    state.clear()
    assert state.value() is None
    backend.current_key = "b"
    assert state.value() == {"nested": [5]}
    state.update(None)  # Flink: update(null) clears
    assert state.value() is None
    assert list(backend.keys("count")) == []


def test_list_state(backend: Any) -> None:
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


def test_map_state(backend: Any) -> None:
    state = backend.get_state(MapStateDescriptor("m"))
    backend.current_key = "k"
    assert state.is_empty()
    assert state.get("a") is None
    state.put("a", 1)
    state.put_all({"b": 2, "c": 3})
    state["d"] = 4
    state[("t", 1)] = "tuple key"
    assert state.contains("a") and "b" in state and not state.contains("z")
    assert state.get("c") == 3 and state["d"] == 4 and state[("t", 1)] == "tuple key"
    assert dict(state.items()) == {"a": 1, "b": 2, "c": 3, "d": 4, ("t", 1): "tuple key"}
    state.remove(("t", 1))
    assert sorted(state.keys()) == ["a", "b", "c", "d"]
    assert sorted(state) == ["a", "b", "c", "d"]
    assert sorted(state.values()) == [1, 2, 3, 4]
    state.remove("a")
    del state["b"]
    state.remove("missing")
    assert dict(state.items()) == {"c": 3, "d": 4}
    backend.current_key = "other"
    assert state.is_empty() and list(state.items()) == []
    state.put("o", 0)
    backend.current_key = "k"
    state.remove("c")
    state.remove("d")
    assert state.is_empty()
    assert list(backend.keys("m")) == ["other"], "an emptied map leaves no entry behind"
    backend.current_key = "other"
    state.clear()
    assert state.is_empty() and list(backend.keys("m")) == []


def test_map_state_entries_of_keys_that_share_a_prefix_stay_apart(backend: Any) -> None:
    """Keys whose encodings could overlap (a str and a longer str, a tuple and its extension) never mix."""
    state = backend.get_state(MapStateDescriptor("m"))
    keys = ["a", "ab", ("a",), ("a", "b"), 1, 12, None]
    for number, key in enumerate(keys):
        backend.current_key = key
        state.put("entry", number)
    for number, key in enumerate(keys):
        backend.current_key = key
        assert dict(state.items()) == {"entry": number}
    assert sorted(map(repr, backend.keys("m"))) == sorted(map(repr, keys))


def test_reducing_state_with_function_object_and_plain_callable(backend: Any) -> None:
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
    assert maximum.get() == 9


def test_aggregating_state(backend: Any) -> None:
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
    backend.current_key = "k"
    assert state.get() == 3.0


def test_equal_keys_built_differently_share_state(backend: Any) -> None:
    """Keys are equal by value, not identity: a tuple of two distinct equal strings is the same key as a tuple
    holding one string twice (a memoizing serializer would tell them apart)."""
    state = backend.get_state(ValueStateDescriptor("v"))
    word = "".join(["ke", "y"])  # built at run time: a str object distinct from the literal "key"
    backend.current_key = (word, word)
    state.update("shared")
    backend.current_key = ("key", "".join(["k", "ey"]))
    assert state.value() == "shared"
    backend.current_key = None  # None is a legal key
    state.update("for None")
    assert state.value() == "for None"
    assert len(list(backend.keys("v"))) == 2


def test_same_name_returns_same_handle(backend: Any) -> None:
    first = backend.get_state(ValueStateDescriptor("v"))
    assert backend.get_state(ValueStateDescriptor("v")) is first


@pytest.mark.parametrize("second", [ListStateDescriptor("x"), MapStateDescriptor("x")])
def test_same_name_with_another_kind_is_an_error(backend: Any, second: Any) -> None:
    backend.get_state(ValueStateDescriptor("x"))
    message = f"'x' is already registered as value state and cannot also be {second.kind.value} state"
    with pytest.raises(StateError, match=message):
        backend.get_state(second)


def test_get_state_needs_a_descriptor(backend: Any) -> None:
    with pytest.raises(StateError, match="get_state needs a state descriptor, got str"):
        backend.get_state("v")


@pytest.mark.parametrize(
    "descriptor, use",
    [
        (ValueStateDescriptor("x"), lambda s: s.value()),
        (ValueStateDescriptor("x"), lambda s: s.update(1)),
        (ListStateDescriptor("x"), lambda s: s.add(1)),
        (MapStateDescriptor("x"), lambda s: s.put("a", 1)),
        (MapStateDescriptor("x"), lambda s: s.items()),
        (ReducingStateDescriptor("x", MaxReduce()), lambda s: s.get()),
        (AggregatingStateDescriptor("x", AverageAggregate()), lambda s: s.add(1)),
        (ValueStateDescriptor("x"), lambda s: s.clear()),
    ],
)
def test_state_outside_a_keyed_context_is_an_error(backend: Any, descriptor: Any, use: Any) -> None:
    state = backend.get_state(descriptor)
    with pytest.raises(StateError, match="keyed state 'x' used outside a keyed context: use it in a function"):
        use(state)
    backend.current_key = "k"
    use(state)
    backend.current_key = NO_KEY
    with pytest.raises(StateError, match="outside a keyed context"):
        use(state)


# -- value tables ----------------------------------------------------------------------------------------------


def test_value_table_basic_operations(backend: Any) -> None:
    table = backend.value_table("running")
    assert backend.value_table("running") is table
    assert table.get("a") is None and table.get("a", 0) == 0 and "a" not in table
    table["a"] = 10
    table["b"] = None  # a stored None is an entry
    assert table["a"] == 10 and table.get("a") == 10 and "a" in table and "b" in table
    assert sorted(table) == ["a", "b"] and len(table) == 2
    assert dict(table.items()) == {"a": 10, "b": None}
    assert table.pop("b") is None and table.pop("b", "gone") == "gone"
    with pytest.raises(KeyError):
        del table["b"]
    with pytest.raises(KeyError):
        table["missing"]
    del table["a"]
    assert len(table) == 0 and list(backend.keys("running")) == []


def test_value_table_is_the_state_of_its_name(backend: Any) -> None:
    table = backend.value_table("running")
    table["a"] = 10
    handle = backend.get_state(ValueStateDescriptor("running"))
    backend.current_key = "a"
    assert handle.value() == 10
    handle.update(11)
    assert table["a"] == 11
    snapshot = backend.snapshot_key_groups()
    assert snapshot.state_kinds == {"running": "value"}
    assert snapshot.key_groups[assign_to_key_group("a", MAX_PARALLELISM)]["running"] == {"a": 11}


def test_value_table_read_change_write_back(backend: Any) -> None:
    """The window operator's pattern: a dict {window: contents} per key, changed and always written back."""
    table = backend.value_table("windows")
    for key in ("k1", "k2"):
        cell = table.get(key) or {}
        cell[(0, 10)] = [1]
        table[key] = cell
    cell = table.get("k1")
    cell[(0, 10)] = cell[(0, 10)] + [2]
    cell[(10, 20)] = [3]
    table["k1"] = cell
    assert table["k1"] == {(0, 10): [1, 2], (10, 20): [3]}
    assert table["k2"] == {(0, 10): [1]}
    cell = table["k2"]
    cell.pop((0, 10))
    if cell:
        table["k2"] = cell
    else:
        table.pop("k2", None)
    assert sorted(table) == ["k1"]
    snapshot = backend.snapshot_key_groups()
    assert _entries(snapshot)["windows"] == {"k1": {(0, 10): [1, 2], (10, 20): [3]}}


def test_value_table_of_a_list_and_a_map_state(backend: Any) -> None:
    lists = backend.get_state(ListStateDescriptor("l"))
    maps = backend.get_state(MapStateDescriptor("m"))
    backend.current_key = "k"
    lists.add_all([1, 2])
    maps.put_all({"a": 1})
    list_table = backend.value_table("l")
    map_table = backend.value_table("m")
    assert list_table["k"] == [1, 2] and map_table["k"] == {"a": 1}
    list_table["k"] = list_table["k"] + [3]
    map_table["k"] = {"b": 2}
    assert list(lists.get()) == [1, 2, 3] and dict(maps.items()) == {"b": 2}
    assert backend.snapshot_key_groups().state_kinds == {"l": "list", "m": "map"}


# -- keys ------------------------------------------------------------------------------------------------------


def test_keys_and_apply_to_all_keys(backend: Any) -> None:
    descriptor = ValueStateDescriptor("v")
    state = backend.get_state(descriptor)
    for key in range(5):
        backend.current_key = key
        state.update(key * 10)
    backend.current_key = "outer"
    seen = {}

    def visit(key: int, handle: Any) -> None:
        seen[key] = handle.value()
        if key % 2:
            handle.clear()  # changing state while visiting is allowed

    backend.apply_to_all_keys(descriptor, visit)
    assert seen == {0: 0, 1: 10, 2: 20, 3: 30, 4: 40}
    assert sorted(backend.keys("v")) == [0, 2, 4]
    assert backend.current_key == "outer"
    assert list(backend.keys("unknown")) == []


# -- snapshots and restores ------------------------------------------------------------------------------------


def test_snapshot_holds_every_state_by_key_group(backend: Any) -> None:
    keys = [f"user-{i}" for i in range(40)]
    _fill(backend, keys)
    snapshot = backend.snapshot_key_groups()
    assert snapshot.max_parallelism == MAX_PARALLELISM
    assert snapshot.state_kinds == {"v": "value", "l": "list", "m": "map", "r": "reducing", "avg": "aggregating"}
    for key_group, states in snapshot.key_groups.items():
        for entries in states.values():
            assert all(assign_to_key_group(key, MAX_PARALLELISM) == key_group for key in entries)
    flat = _entries(snapshot)
    key = "user-7"
    assert flat["v"][key] == "value-user-7"
    assert flat["l"][key] == [key, "x"]
    assert flat["m"][key] == {"k": key, ("nested", key): [key]}
    assert flat["r"][key] == 7
    assert flat["avg"][key] == [6, 2]
    assert all(set(entries) == set(keys) for entries in flat.values())


def test_snapshot_is_isolated_from_later_changes(backend: Any) -> None:
    _fill(backend, ["a"])
    table = backend.value_table("nested")
    table["a"] = [{"n": 1}]
    snapshot = backend.snapshot_key_groups()
    backend.current_key = "a"
    backend.get_state(ListStateDescriptor("l")).add("later")
    backend.get_state(MapStateDescriptor("m")).put("k2", "later")
    backend.get_state(AggregatingStateDescriptor("avg", AverageAggregate())).add(100)
    backend.get_state(ValueStateDescriptor("v")).update("later")
    cell = table["a"]
    cell[0]["n"] = 2
    table["a"] = cell
    states = snapshot.key_groups[assign_to_key_group("a", MAX_PARALLELISM)]
    assert states["l"] == {"a": ["a", "x"]}
    assert states["m"] == {"a": {"k": "a", ("nested", "a"): ["a"]}}
    assert states["avg"] == {"a": [6, 2]}
    assert states["v"] == {"a": "value-a"}
    assert states["nested"] == {"a": [{"n": 1}]}


def test_snapshot_survives_pickling(backend: Any) -> None:
    _fill(backend, range(20))
    snapshot = backend.snapshot_key_groups()
    assert pickle.loads(pickle.dumps(snapshot, protocol=5)) == snapshot


def test_empty_backend_snapshot_is_empty(backend: Any) -> None:
    backend.get_state(ValueStateDescriptor("v"))
    snapshot = backend.snapshot_key_groups()
    assert snapshot.is_empty() and snapshot.state_kinds == {"v": "value"}


PAIRS = [
    pytest.param(
        source, target, id=f"{source}-to-{target}", marks=[_NEEDS_ROCKSDB] if "rocksdb" in (source, target) else []
    )
    for source, target in [
        *itertools.product(["heap", "rocksdb"], repeat=2),
        ("changelog-heap", "changelog-heap"),
        ("changelog-rocksdb", "changelog-rocksdb"),
        ("changelog-heap", "rocksdb"),
        ("heap", "changelog-rocksdb"),
    ]
]


@pytest.mark.parametrize("source, target", PAIRS)
def test_restore_round_trip(factory: Factory, source: str, target: str) -> None:
    old = factory(source)
    _fill(old, [f"user-{i}" for i in range(50)] + [("tuple", 1), None, 42])
    snapshot = old.snapshot_key_groups()
    new = factory(target)
    new.restore_key_groups([snapshot])
    assert new.snapshot_key_groups() == snapshot
    new.current_key = "user-3"
    assert new.get_state(ValueStateDescriptor("v")).value() == "value-user-3"
    assert new.get_state(AggregatingStateDescriptor("avg", AverageAggregate())).get() == 3.0
    maps = new.get_state(MapStateDescriptor("m"))
    maps.put("after", 1)
    assert dict(maps.items()) == {"k": "user-3", ("nested", "user-3"): ["user-3"], "after": 1}
    assert _entries(snapshot)["m"]["user-3"] == {"k": "user-3", ("nested", "user-3"): ["user-3"]}, (
        "restore must not alias the snapshot's values"
    )


@pytest.mark.parametrize("source, target", PAIRS)
def test_rescale_one_to_two(factory: Factory, source: str, target: str) -> None:
    keys = [f"user-{i}" for i in range(300)]
    old = factory(source)
    _fill(old, keys)
    snapshot = old.snapshot_key_groups()
    restored = [factory(target, key_group_range_for_operator(MAX_PARALLELISM, 2, i)) for i in range(2)]
    for new in restored:
        new.restore_key_groups([snapshot])
    owned = [set(new.keys("v")) for new in restored]
    for new, own in zip(restored, owned, strict=True):
        assert own == {k for k in keys if assign_to_key_group(k, MAX_PARALLELISM) in new.key_group_range}
        assert all(set(new.keys(name)) == own for name in ("l", "m", "r", "avg"))
        assert new.snapshot_key_groups() == snapshot.select(new.key_group_range)
    assert owned[0] | owned[1] == set(keys)
    assert not owned[0] & owned[1]
    new = restored[1]
    key = next(iter(owned[1]))
    new.current_key = key
    lists = new.get_state(ListStateDescriptor("l"))
    lists.add("after restore")
    assert list(lists.get()) == [key, "x", "after restore"]


@pytest.mark.parametrize("source, target", PAIRS)
def test_rescale_two_to_one(factory: Factory, source: str, target: str) -> None:
    keys = list(range(200))
    old = [factory(source, key_group_range_for_operator(MAX_PARALLELISM, 2, i)) for i in range(2)]
    for backend in old:
        _fill(backend, [k for k in keys if assign_to_key_group(k, MAX_PARALLELISM) in backend.key_group_range])
    snapshots = [backend.snapshot_key_groups() for backend in old]
    merged = factory(target)
    merged.restore_key_groups(snapshots)
    assert sorted(merged.keys("v")) == keys
    assert sorted(merged.keys("m")) == keys
    expected = {name: {} for name in snapshots[0].state_kinds}
    for snapshot in snapshots:
        for name, entries in _entries(snapshot).items():
            expected[name].update(entries)
    assert _entries(merged.snapshot_key_groups()) == expected


class _InlineWriter:
    """A StateWriter keeping every blob inline (what JobManagerCheckpointStorage does)."""

    def write(self, name: str, data: bytes) -> Any:
        from fluvial.checkpoint.metadata import ByteStreamStateHandle, checksum

        return ByteStreamStateHandle(name, data, checksum(data))

    write_shared = write


def _through_handles(old: list[Any], new: list[Any], snapshot_type: Any) -> None:
    """Each old backend's snapshot of `snapshot_type` written to a handle; every handle restored into each
    new backend, as a restore hands every overlapping old subtask's handle to a new subtask."""
    from fluvial.checkpoint.storage import read_state_handle

    handles = [backend.snapshot(1, snapshot_type).write(_InlineWriter()) for backend in old]
    for backend in new:
        backend.restore(handles, read_state_handle, 1)


@pytest.mark.parametrize("snapshot_type", ["CHECKPOINT", "SAVEPOINT"])
@pytest.mark.parametrize("before, after", [(1, 1), (1, 3), (3, 2), (2, 1)])
@pytest.mark.parametrize("source, target", PAIRS)
def test_written_snapshots_restore_at_any_parallelism(
    factory: Factory, source: str, target: str, before: int, after: int, snapshot_type: str
) -> None:
    """The asynchronous part's handles (heap tables or key groups, RocksDB files or key groups) restore into
    every backend at the same and at another parallelism: each key lands in exactly the subtask owning it."""
    from fluvial.state.snapshot import SnapshotType

    keys = [f"user-{i}" for i in range(120)] + list(range(80)) + [("tuple", 1), None]
    old = [factory(source, key_group_range_for_operator(MAX_PARALLELISM, before, i)) for i in range(before)]
    for backend in old:
        _fill(backend, [k for k in keys if assign_to_key_group(k, MAX_PARALLELISM) in backend.key_group_range])
    expected = {}
    for backend in old:
        for name, entries in _entries(backend.snapshot_key_groups()).items():
            expected.setdefault(name, {}).update(entries)
    new = [factory(target, key_group_range_for_operator(MAX_PARALLELISM, after, i)) for i in range(after)]
    _through_handles(old, new, SnapshotType[snapshot_type])
    restored: dict[str, dict[Any, Any]] = {}
    for backend in new:
        owned = {k for k in keys if assign_to_key_group(k, MAX_PARALLELISM) in backend.key_group_range}
        assert set(backend.keys("v")) == owned
        for name, entries in _entries(backend.snapshot_key_groups()).items():
            restored.setdefault(name, {}).update(entries)
    assert restored == expected


def test_heap_checkpoints_are_tables_and_savepoints_key_groups() -> None:
    """Checkpoints pay no per-entry key-group hashing (defect 13); savepoints stay canonical by key group."""
    from fluvial.state.snapshot import KeyedTablesStateHandle, KeyGroupsStateHandle, SnapshotType

    backend = HeapKeyedStateBackend(MAX_PARALLELISM, range(MAX_PARALLELISM))
    _fill(backend, range(10))
    assert isinstance(backend.snapshot(1, SnapshotType.CHECKPOINT).write(_InlineWriter()), KeyedTablesStateHandle)
    assert isinstance(backend.snapshot(2, SnapshotType.SAVEPOINT).write(_InlineWriter()), KeyGroupsStateHandle)


def test_heap_checkpoint_and_restore_at_the_same_parallelism_hash_no_key(monkeypatch) -> None:
    """The per-entry key-group loop is what made heap checkpoints slow: neither the checkpoint's asynchronous
    part nor a restore into the same key groups may run it."""
    import fluvial.state.snapshot as snapshot_module
    from fluvial.checkpoint.storage import read_state_handle
    from fluvial.state.snapshot import SnapshotType

    backend = HeapKeyedStateBackend(MAX_PARALLELISM, key_group_range_for_operator(MAX_PARALLELISM, 2, 1))
    _fill(backend, [k for k in range(100) if assign_to_key_group(k, MAX_PARALLELISM) in backend.key_group_range])
    expected = backend.snapshot_key_groups()

    def no_hashing(*args: Any) -> Any:
        raise AssertionError("a key group was computed")

    monkeypatch.setattr(snapshot_module, "key_groups_of", no_hashing)
    handle = backend.snapshot(1, SnapshotType.CHECKPOINT).write(_InlineWriter())
    restored = HeapKeyedStateBackend(MAX_PARALLELISM, backend.key_group_range)
    restored.restore([handle], read_state_handle, 1)
    monkeypatch.undo()
    assert restored.snapshot_key_groups() == expected


def test_restore_replaces_a_keys_entry(backend: Any, factory: Factory, kind: str) -> None:
    source = factory(kind)
    source.current_key = "k"
    source.get_state(MapStateDescriptor("m")).put("new", 2)
    source.get_state(ListStateDescriptor("l")).add("new")
    maps = backend.get_state(MapStateDescriptor("m"))
    lists = backend.get_state(ListStateDescriptor("l"))
    backend.current_key = "k"
    maps.put("old", 1)
    lists.add("old")
    backend.restore_key_groups([source.snapshot_key_groups()])
    assert dict(maps.items()) == {"new": 2}
    assert list(lists.get()) == ["new"]


def test_restore_with_other_max_parallelism_is_an_error(backend: Any, factory: Factory, kind: str) -> None:
    old = factory(kind, range(256), max_parallelism=256)
    _fill(old, ["a"])
    with pytest.raises(
        StateError,
        match="max parallelism 256 into an operator with max parallelism 128: max "
        "parallelism cannot change between a savepoint and its restore",
    ):
        backend.restore_key_groups([old.snapshot_key_groups()])


def test_restore_rejects_a_name_reused_with_another_kind(backend: Any) -> None:
    snapshot = KeyedStateSnapshot(MAX_PARALLELISM, {}, {"x": StateKind.LIST.value})
    backend.get_state(ValueStateDescriptor("x"))
    with pytest.raises(StateError, match="'x' is already registered as value state"):
        backend.restore_key_groups([snapshot])


def test_restore_registers_empty_states_with_their_kind(backend: Any) -> None:
    backend.restore_key_groups([KeyedStateSnapshot(MAX_PARALLELISM, {}, {"x": StateKind.MAP.value})])
    with pytest.raises(StateError, match="'x' is already registered as map state"):
        backend.get_state(ValueStateDescriptor("x"))
    assert backend.snapshot_key_groups().state_kinds == {"x": "map"}


# -- lifecycle -------------------------------------------------------------------------------------------------


def test_dispose_drops_state(backend: Any) -> None:
    _fill(backend, ["a"])
    backend.dispose()
    assert list(backend.keys("v")) == []
    assert backend.current_key is NO_KEY
    with pytest.raises(StateError, match="disposed"):
        backend.get_state(ValueStateDescriptor("v"))
    with pytest.raises(StateError, match="disposed"):
        backend.value_table("t")


@pytest.mark.parametrize("bad", [range(100, 200), range(0, 128, 2), range(-1, 10)])
def test_bad_key_group_range_is_rejected(factory: Factory, kind: str, bad: range) -> None:
    with pytest.raises(StateError, match="does not fit in range"):
        factory(kind, bad)
