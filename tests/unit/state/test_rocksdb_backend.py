"""RocksDBKeyedStateBackend beyond the shared contract (tests/contract/): native incremental checkpoints,
native restores with rescaling, the key layout, and the errors only RocksDB has.

Measured with `python -m bench.rocksdb_state` (1,000,000 int keys in one ValueState, max parallelism 128; two
runs on the 2-core dev container, numbers vary by machine):
- put through the handle: 6.2-7.0 s (~150k updates/s: about 4-6 us per handle call, ~1.3 us of it encoding
  the key, ~2.4 us the RocksDB point operation);
- full `snapshot()`: 1.4-1.8 s, 9.3 MB pickled;
- native checkpoint, synchronous part: 0.5 s for the first (flushing a memtable holding all 1M writes; the
  cost is bounded by the 64 MB write buffer), 6-9 ms for the next; the hard links themselves cost ~1 ms;
- incremental checkpoint after changing 1% of the keys: 0.17 MB of new SST bytes against 14.9 MB of full SST
  bytes = 1.2% (target < 10%), 1 new and 1 reused SST file;
- restore of 1M keys: `restore(full snapshot)` 1.9-2.0 s, `restore_native(checkpoint dir)` 0.01 s (target
  < 5 s); the heap's `restore` of the same snapshot takes 0.2-0.3 s, for reference.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from fluvial.common.errors import StateError
from fluvial.common.key_groups import assign_to_key_group, key_group_range_for_operator
from fluvial.common.time import Duration
from fluvial.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from fluvial.state.heap import HeapKeyedStateBackend

pytest.importorskip("rocksdict", reason="rocksdict is not installed: pip install rocksdict==0.3.29")

from fluvial.state.rocksdb import RocksDBKeyedStateBackend, RocksDBSnapshot
from fluvial.state.rocksdb_layout import KeySerializer, prefix_end, split_key

MAX_PARALLELISM = 128
EVERYTHING = range(MAX_PARALLELISM)


class Backends:
    """Creates backends under one tmp dir and disposes them after the test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.created: list[RocksDBKeyedStateBackend] = []

    def new(
        self, key_group_range: range = EVERYTHING, incremental: bool = True, max_parallelism: int = MAX_PARALLELISM
    ) -> RocksDBKeyedStateBackend:
        path = self.root / f"db-{len(self.created)}"
        backend = RocksDBKeyedStateBackend(max_parallelism, key_group_range, str(path), incremental)
        self.created.append(backend)
        return backend

    def checkpoint_dir(self, name: str) -> str:
        return str(self.root / "checkpoints" / name)


@pytest.fixture
def backends(tmp_path: Path) -> Any:
    made = Backends(tmp_path)
    yield made
    for backend in made.created:
        backend.dispose()


def _put_values(backend: RocksDBKeyedStateBackend, keys: Any, offset: int = 0) -> None:
    state = backend.get_state(ValueStateDescriptor("v"))
    for key in keys:
        backend.current_key = key
        state.update(key + offset)


def _values(backend: RocksDBKeyedStateBackend) -> dict[Any, Any]:
    return dict(backend.value_table("v").items())


# -- native checkpoints ----------------------------------------------------------------------------------------


def test_first_checkpoint_lists_its_files_and_uploads_everything(backends: Backends) -> None:
    backend = backends.new()
    _put_values(backend, range(1000))  # only in the memtable: the checkpoint must flush it
    snapshot = backend.checkpoint_native(1, backends.checkpoint_dir("chk-1"))
    assert isinstance(snapshot, RocksDBSnapshot)
    assert snapshot.checkpoint_id == 1 and snapshot.base_checkpoint_id is None
    assert snapshot.sst_files and all(name.endswith(".sst") for name in snapshot.sst_files)
    assert snapshot.new_sst_files == list(snapshot.sst_files) and snapshot.reused_sst_files == []
    assert "CURRENT" in snapshot.other_files and any(n.startswith("MANIFEST-") for n in snapshot.other_files)
    on_disk = sorted(os.listdir(snapshot.directory))
    assert on_disk == sorted([*snapshot.sst_files, *snapshot.other_files])
    assert sorted(snapshot.files_to_upload()) == on_disk
    for name, size in snapshot.sst_files.items():
        assert os.path.getsize(os.path.join(snapshot.directory, name)) == size
    assert snapshot.total_sst_bytes == snapshot.new_sst_bytes == sum(snapshot.sst_files.values())
    assert snapshot.max_parallelism == MAX_PARALLELISM and snapshot.key_group_range == EVERYTHING
    snapshot.discard()
    assert not os.path.exists(snapshot.directory)


def test_incremental_checkpoint_uploads_only_new_sst_files(backends: Backends) -> None:
    backend = backends.new()
    _put_values(backend, range(20_000))
    first = backend.checkpoint_native(1, backends.checkpoint_dir("chk-1"))
    backend.notify_checkpoint_complete(1)
    _put_values(backend, range(0, 20_000, 200), offset=1)  # change 0.5% of the keys
    second = backend.checkpoint_native(2, backends.checkpoint_dir("chk-2"))
    assert second.base_checkpoint_id == 1
    assert set(first.sst_files) <= set(second.reused_sst_files) | set(second.new_sst_files)
    assert set(second.reused_sst_files) == set(first.sst_files) & set(second.sst_files)
    assert second.reused_sst_files, "the unchanged SST files are reused"
    assert 0 < len(second.new_sst_files) <= 1
    assert second.new_sst_bytes < 0.1 * first.total_sst_bytes
    assert sorted(second.files_to_upload()) == sorted([*second.new_sst_files, *second.other_files])


def test_only_a_confirmed_checkpoint_becomes_the_base(backends: Backends) -> None:
    backend = backends.new()
    _put_values(backend, range(1000))
    backend.checkpoint_native(1, backends.checkpoint_dir("chk-1"))
    _put_values(backend, [1])
    unconfirmed = backend.checkpoint_native(2, backends.checkpoint_dir("chk-2"))
    assert unconfirmed.base_checkpoint_id is None
    assert unconfirmed.new_sst_files == list(unconfirmed.sst_files), "nothing is known to be stored yet"
    backend.notify_checkpoint_aborted(2)
    backend.notify_checkpoint_complete(2)  # aborted: forgotten, so this confirms nothing
    _put_values(backend, [2])
    third = backend.checkpoint_native(3, backends.checkpoint_dir("chk-3"))
    assert third.base_checkpoint_id is None
    backend.notify_checkpoint_complete(3)
    backend.notify_checkpoint_complete(1)  # subsumed by 3: ignored
    _put_values(backend, [3])
    fourth = backend.checkpoint_native(4, backends.checkpoint_dir("chk-4"))
    assert fourth.base_checkpoint_id == 3
    assert set(fourth.reused_sst_files) == set(third.sst_files) & set(fourth.sst_files) != set()


def test_non_incremental_backend_always_uploads_everything(backends: Backends) -> None:
    backend = backends.new(incremental=False)
    _put_values(backend, range(1000))
    backend.checkpoint_native(1, backends.checkpoint_dir("chk-1"))
    backend.notify_checkpoint_complete(1)
    _put_values(backend, [5])
    second = backend.checkpoint_native(2, backends.checkpoint_dir("chk-2"))
    assert second.base_checkpoint_id is None and second.new_sst_files == list(second.sst_files)
    assert len(second.sst_files) >= 2


def test_checkpoint_into_an_existing_directory_is_an_error(backends: Backends) -> None:
    backend = backends.new()
    target = backends.checkpoint_dir("taken")
    os.makedirs(target)
    with pytest.raises(StateError, match="already exists: RocksDB creates it"):
        backend.checkpoint_native(1, target)


def test_restore_native_round_trip(backends: Backends) -> None:
    old = backends.new()
    _put_values(old, range(500))
    old.current_key = "k"
    old.get_state(MapStateDescriptor("m")).put_all({"a": 1, ("b", 2): [3]})
    expected = old.snapshot_key_groups()
    checkpoint = old.checkpoint_native(7, backends.checkpoint_dir("chk-7"))
    files_before = sorted(os.listdir(checkpoint.directory))
    _put_values(old, range(10), offset=1000)  # later changes must not reach the checkpoint

    new = backends.new()
    new.restore_native(checkpoint.directory, checkpoint_id=7)
    assert new.snapshot_key_groups() == expected
    assert sorted(os.listdir(checkpoint.directory)) == files_before, "the checkpoint copy is left untouched"
    new.current_key = "k"
    maps = new.get_state(MapStateDescriptor("m"))
    maps.put("c", 4)
    assert dict(maps.items()) == {"a": 1, ("b", 2): [3], "c": 4}
    _put_values(new, [1])
    after = new.checkpoint_native(8, backends.checkpoint_dir("chk-8"))
    assert after.base_checkpoint_id == 7, "the restored files are stored already: they are the base"
    assert set(after.reused_sst_files) == set(checkpoint.sst_files) & set(after.sst_files) != set()

    again = backends.new()
    again.restore_native([checkpoint.directory])  # the same checkpoint can be restored twice
    assert again.snapshot_key_groups() == expected
    unbased = again.checkpoint_native(1, backends.checkpoint_dir("again-1"))
    assert unbased.base_checkpoint_id is None and unbased.new_sst_files == list(unbased.sst_files)


def test_restore_native_rescales_one_to_two_and_back(backends: Backends) -> None:
    keys = list(range(1000))
    old = backends.new()
    _put_values(old, keys)
    checkpoint = old.checkpoint_native(1, backends.checkpoint_dir("old"))

    halves = [backends.new(key_group_range_for_operator(MAX_PARALLELISM, 2, i)) for i in range(2)]
    for half in halves:
        half.restore_native(checkpoint.directory)
        owned = set(half.keys("v"))
        assert owned == {k for k in keys if assign_to_key_group(k, MAX_PARALLELISM) in half.key_group_range}
        assert half.snapshot_key_groups() == old.snapshot_key_groups().select(half.key_group_range)
    assert set(halves[0].keys("v")) | set(halves[1].keys("v")) == set(keys)

    halves[0].current_key = next(iter(halves[0].keys("v")))
    halves[0].get_state(ListStateDescriptor("only-in-first")).add("x")  # a state only one half has
    parts = [half.checkpoint_native(2, backends.checkpoint_dir(f"half-{i}")) for i, half in enumerate(halves)]
    merged = backends.new()
    merged.get_state(MapStateDescriptor("registered-first"))  # state ids differ between the three databases
    merged.restore_native([part.directory for part in parts])
    assert _values(merged) == {k: k for k in keys}
    assert list(merged.keys("only-in-first")) == [halves[0].current_key]
    assert merged.snapshot_key_groups().state_kinds == {
        "v": "value",
        "only-in-first": "list",
        "registered-first": "map",
    }


def test_restore_native_keeps_handles_taken_before_it(backends: Backends) -> None:
    old = backends.new()
    old.get_state(ValueStateDescriptor("a"))
    _put_values(old, [1, 2])  # "v" gets state id 1 in the old database
    checkpoint = old.checkpoint_native(1, backends.checkpoint_dir("chk"))
    new = backends.new()
    handle = new.get_state(ValueStateDescriptor("v"))  # state id 0 here, before the restore
    table = new.value_table("v")
    new.restore_native(checkpoint.directory)
    new.current_key = 2
    assert handle.value() == 2 and table[1] == 1
    handle.update(20)
    assert _values(new) == {1: 1, 2: 20}


def test_restore_native_errors(backends: Backends) -> None:
    old = backends.new(range(256), max_parallelism=256)
    _put_values(old, [1])
    checkpoint = old.checkpoint_native(1, backends.checkpoint_dir("chk-256"))
    with pytest.raises(StateError, match="max parallelism 256\\) into an operator with max parallelism 128"):
        backends.new().restore_native(checkpoint.directory)
    busy = backends.new()
    _put_values(busy, [1])
    with pytest.raises(StateError, match="already holds keyed state: restore before the first record"):
        busy.restore_native(checkpoint.directory)
    same = backends.new()
    _put_values(same, [1])
    chk = same.checkpoint_native(1, backends.checkpoint_dir("chk-128"))
    conflicting = backends.new()
    conflicting.get_state(MapStateDescriptor("v"))
    with pytest.raises(StateError, match="'v' is already registered as map state and cannot also be value state"):
        conflicting.restore_native(chk.directory)
    with pytest.raises(StateError, match="at least one checkpoint directory"):
        backends.new().restore_native([])


# -- layout, errors and hazards --------------------------------------------------------------------------------


def test_entries_are_laid_out_by_key_group_then_state_id(backends: Backends) -> None:
    backend = backends.new()
    backend.get_state(ValueStateDescriptor("first"))
    _put_values(backend, [5])  # "v" is state id 1
    backend.current_key = 5
    backend.get_state(MapStateDescriptor("m")).put("user", 1)  # state id 2
    serialize = KeySerializer()
    group = assign_to_key_group(5, MAX_PARALLELISM).to_bytes(2, "big")
    data = [key for key, _ in backend._db.items() if not key.startswith(b"\xff\xff")]
    assert data == [group + b"\x00\x01" + serialize(5), group + b"\x00\x02" + serialize(5) + serialize("user")]


def test_key_serializer_is_canonical_and_prefix_free() -> None:
    serialize = KeySerializer()
    shared = "ab"
    assert serialize((shared, shared)) == serialize(("ab", "".join(["a", "b"])))
    assert pickle.dumps((shared, shared)) != pickle.dumps(("ab", "".join(["a", "b"]))), "why the serializer exists"
    joined = serialize(("a", 1)) + serialize("user")
    key, end = split_key(b"1234" + joined, 4)
    assert key == ("a", 1) and pickle.loads((b"1234" + joined)[end:]) == "user"
    assert prefix_end(b"\x00\x01.") == b"\x00\x01/" and prefix_end(b"\x00\x01\xff") == b"\x00\x02"


def test_ttl_is_refused_with_a_clear_error(backends: Backends) -> None:
    descriptor = ValueStateDescriptor("v")
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_seconds(1)).build())
    with pytest.raises(StateError, match="'v' enables time-to-live, which the RocksDB state backend does not"):
        backends.new().get_state(descriptor)


def test_heap_ttl_state_restores_without_its_timestamps(backends: Backends) -> None:
    heap = HeapKeyedStateBackend(MAX_PARALLELISM, EVERYTHING, ttl_clock=lambda: 1000)
    descriptor = ListStateDescriptor("l")
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_seconds(10)).build())
    heap.current_key = "k"
    heap.get_state(descriptor).add_all([1, 2])
    backend = backends.new()
    backend.restore_key_groups([heap.snapshot_key_groups()])
    backend.current_key = "k"
    assert backend.get_state(ListStateDescriptor("l")).get() == [1, 2]


def test_a_key_of_another_subtask_is_refused(backends: Backends) -> None:
    backend = backends.new(range(0, 64))
    foreign = next(k for k in range(100) if assign_to_key_group(k, MAX_PARALLELISM) >= 64)
    state = backend.get_state(ValueStateDescriptor("v"))
    backend.current_key = foreign
    with pytest.raises(StateError, match=f"key {foreign} of key group \\d+, which this subtask does not own"):
        state.update(1)
    with pytest.raises(StateError, match="does not own"):
        backend.value_table("v")[foreign] = 1


def test_values_and_keys_must_pickle(backends: Backends) -> None:
    backend = backends.new()
    backend.current_key = "k"
    with pytest.raises(StateError, match="cannot be stored in RocksDB state 'v': pickling it failed"):
        backend.get_state(ValueStateDescriptor("v")).update(lambda: 1)

    class LocalStr(str):  # hashes like a str, but a local class does not pickle
        pass

    backend.current_key = ("not picklable", LocalStr("x"))
    with pytest.raises(StateError, match="of type tuple cannot be stored in RocksDB state: pickling it failed"):
        backend.get_state(ValueStateDescriptor("v")).value()


def test_value_table_reads_are_copies_until_written_back(backends: Backends) -> None:
    backend = backends.new()
    table = backend.value_table("windows")
    table["k"] = {"w": [1]}
    table["k"]["w"].append(2)  # mutates a copy only: the documented hazard
    assert table["k"] == {"w": [1]}
    cell = table["k"]
    cell["w"].append(2)
    table["k"] = cell
    assert table["k"] == {"w": [1, 2]}


def test_value_table_may_change_while_iterating(backends: Backends) -> None:
    table = backends.new().value_table("t")
    for key in range(10):
        table[key] = key
    for key in table:
        if key % 2:
            del table[key]
        else:
            table[key + 100] = key
    assert sorted(table) == [0, 2, 4, 6, 8, 100, 102, 104, 106, 108]
    table.clear()
    assert len(table) == 0


def test_db_path_is_owned_by_the_backend(backends: Backends, tmp_path: Path) -> None:
    backend = backends.new()
    _put_values(backend, [1])
    checkpoint = backend.checkpoint_native(1, backends.checkpoint_dir("chk"))
    stale = tmp_path / "stale"
    os.rename(checkpoint.directory, stale)  # an old database where a new backend will live
    fresh = RocksDBKeyedStateBackend(MAX_PARALLELISM, EVERYTHING, str(stale))
    backends.created.append(fresh)
    assert list(fresh.keys("v")) == [], "an old database at db_path is replaced, not reused"
    other = tmp_path / "user-data"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(StateError, match="not empty and holds no RocksDB database"):
        RocksDBKeyedStateBackend(MAX_PARALLELISM, EVERYTHING, str(other))
    assert (other / "notes.txt").read_text() == "keep me"


def test_dispose_deletes_the_database_and_disables_handles(backends: Backends) -> None:
    backend = backends.new()
    state = backend.get_state(ValueStateDescriptor("v"))
    backend.current_key = 1
    state.update(1)
    backend.dispose()
    assert not os.path.exists(backend.db_path)
    backend.current_key = 1
    with pytest.raises(StateError, match="used after its RocksDB state backend was disposed"):
        state.value()
    with pytest.raises(StateError, match="disposed"):
        backend.checkpoint_native(1, backends.checkpoint_dir("late"))
    backend.dispose()  # idempotent
