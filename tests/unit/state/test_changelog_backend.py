"""The changelog state backend (FLIP-158): writes logged beside the heap or RocksDB backend, checkpoints as the last
materialization plus the log after it, restore as materialization then replay — through the operator harness
(the real checkpoint path) and on the backend itself. The contract suite (tests/contract) runs every keyed-state
case over the changelog-wrapped backends as well."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from fluvial.checkpoint.changelog_storage import FsStateChangelogStorage, InMemoryStateChangelogStorage
from fluvial.checkpoint.metadata import FileStateHandle
from fluvial.checkpoint.storage import create_checkpoint_storage, read_state_handle
from fluvial.common import Configuration
from fluvial.common.errors import ConfigurationError, StateError
from fluvial.common.task_info import TaskInfo
from fluvial.common.time import Duration
from fluvial.common.typeinfo import Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.functions import KeyedProcessFunction
from fluvial.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from fluvial.datastream.state_backend import (
    ChangelogSettings,
    ChangelogStateBackend,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
)
from fluvial.runtime.checkpointing import _SubtaskStateWriter
from fluvial.state.changelog import ChangelogKeyedStateBackend
from fluvial.state.changelog_handles import ChangelogStateBackendHandle
from fluvial.state.heap import HeapKeyedStateBackend
from fluvial.state.snapshot import KeyGroupsStateHandle
from fluvial.testing import OperatorHarness, wait_until

INNER = {"heap": HashMapStateBackend, "rocksdb": EmbeddedRocksDBStateBackend}


class Accumulate(KeyedProcessFunction):
    """Per key: a running sum (value state), every value (list state), value -> count (map state)."""

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.INT()))
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen", Types.INT()))
        self.counts = runtime_context.get_map_state(MapStateDescriptor("counts", Types.INT(), Types.INT()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        key, number = value
        self.total.update((self.total.value() or 0) + number)
        self.seen.add(number)
        self.counts.put(number, (self.counts.get(number) or 0) + 1)
        if number < 0:
            self.counts.remove(-number)
        yield key, self.total.value(), list(self.seen.get()), dict(self.counts.items())


def harness(inner: str, restore: list | None = None, **options: Any) -> OperatorHarness:
    backend = ChangelogStateBackend(INNER[inner](), ChangelogSettings())
    made = OperatorHarness.of(
        lambda stream: stream.key_by(lambda record: record[0]).process(Accumulate()), state_backend=backend, **options
    )
    return made.open(restore)


def feed(h: OperatorHarness, records: list[tuple[str, int]]) -> None:
    for record in records:
        h.process_element(record)


def expected_after(records: list[tuple[str, int]]) -> dict[str, tuple]:
    """What Accumulate emits last per key after `records`, computed in plain Python."""
    total: dict[str, int] = {}
    seen: dict[str, list[int]] = {}
    counts: dict[str, dict[int, int]] = {}
    last = {}
    for key, number in records:
        total[key] = total.get(key, 0) + number
        seen.setdefault(key, []).append(number)
        mapping = counts.setdefault(key, {})
        mapping[number] = mapping.get(number, 0) + 1
        if number < 0:
            mapping.pop(-number, None)
        last[key] = (key, total[key], list(seen[key]), dict(mapping))
    return last


def probe(h: OperatorHarness, keys: list[str]) -> dict[str, tuple]:
    """Each key's state, read by feeding it a 0 (which adds nothing but a 0 to its lists)."""
    h.take_values()
    feed(h, [(key, 0) for key in keys])
    return {output[0]: output for output in h.take_values()}


@pytest.mark.parametrize("inner", ["heap", "rocksdb"])
def test_write_checkpoint_restore_with_replay_after_a_materialization(inner: str) -> None:
    first = [("a", 1), ("b", 2), ("a", 3)]
    second = [("a", 4), ("c", 5), ("a", -1)]
    third = [("b", 6), ("a", 7)]
    h = harness(inner)
    feed(h, first)
    h.snapshot(1)
    feed(h, second)
    backend = h.operator.keyed_backend
    assert isinstance(backend, ChangelogKeyedStateBackend)
    backend.trigger_materialization().result(timeout=30)
    feed(h, third)
    snapshot = h.snapshot(2)
    h.close()
    handle = pickle.loads(read_state_handle(snapshot.state.keyed[0]))[0]
    assert isinstance(handle, ChangelogStateBackendHandle)
    assert handle.materialized is not None and [segment.number for segment in handle.changes] == [2]
    restored = harness(inner, [snapshot])
    everything = first + second + third
    want = expected_after(everything + [(key, 0) for key in "abc"])
    assert probe(restored, ["a", "b", "c"]) == want
    restored.close()


@pytest.mark.parametrize("inner", ["heap", "rocksdb"])
def test_a_checkpoint_without_materialization_replays_the_whole_log(inner: str) -> None:
    records = [("a", 1), ("b", 2), ("a", 3), ("a", -3)]
    h = harness(inner)
    feed(h, records[:2])
    h.snapshot(1)
    feed(h, records[2:])
    snapshot = h.snapshot(2)
    h.close()
    handle = pickle.loads(read_state_handle(snapshot.state.keyed[0]))[0]
    assert handle.materialized is None and [segment.number for segment in handle.changes] == [0, 1]
    restored = harness(inner, [snapshot])
    assert probe(restored, ["a", "b"]) == expected_after(records + [("a", 0), ("b", 0)])
    restored.close()


@pytest.mark.parametrize("inner", ["heap", "rocksdb"])
def test_rescaling_a_changelog_checkpoint_two_to_one_and_one_to_three(inner: str) -> None:
    keys = [f"k{i}" for i in range(40)]
    records = [(key, number) for number in (1, 2, 3) for key in keys]
    snapshots = []
    for index in range(2):
        h = harness(inner, parallelism=2, subtask_index=index)
        owned = [
            r
            for r in records
            if h.operator.keyed_backend.key_group_range.start
            <= _group(r[0])
            < h.operator.keyed_backend.key_group_range.stop
        ]
        feed(h, owned[: len(owned) // 2])
        h.snapshot(1)
        h.operator.keyed_backend.trigger_materialization().result(timeout=30)
        feed(h, owned[len(owned) // 2 :])
        snapshots.append(h.snapshot(2))
        h.close()
    merged = harness(inner, snapshots)
    want = expected_after(records + [(key, 0) for key in keys])
    assert probe(merged, keys) == want
    later = merged.snapshot(3)  # a rescaled restore stores a full materialization with its first checkpoint
    merged.close()
    handle = pickle.loads(read_state_handle(later.state.keyed[0]))[0]
    assert handle.materialized is not None and handle.changes == ()
    spread: dict[str, tuple] = {}
    for index in range(3):
        h = harness(inner, [later], parallelism=3, subtask_index=index)
        backend = h.operator.keyed_backend
        mine = [key for key in keys if _group(key) in backend.key_group_range]
        assert set(backend.keys("total")) == set(mine)
        spread.update(probe(h, mine))
        h.close()
    assert spread == expected_after(records + [(key, 0) for key in keys] * 2)


def _group(key: Any) -> int:
    from fluvial.common.key_groups import assign_to_key_group

    return assign_to_key_group(key, 128)


def test_savepoints_are_the_wrapped_backends_canonical_snapshot() -> None:
    h = harness("heap")
    feed(h, [("a", 1)])
    savepoint = h.snapshot(1, savepoint=True)
    h.close()
    assert isinstance(pickle.loads(read_state_handle(savepoint.state.keyed[0]))[0], KeyGroupsStateHandle)
    plain = OperatorHarness.of(lambda stream: stream.key_by(lambda record: record[0]).process(Accumulate()))
    plain.open([savepoint])
    assert probe(plain, ["a"]) == expected_after([("a", 1), ("a", 0)])
    plain.close()


def test_a_job_without_the_changelog_restores_a_changelog_checkpoint() -> None:
    h = harness("rocksdb")
    feed(h, [("a", 1), ("b", 2)])
    h.snapshot(1)
    h.operator.keyed_backend.trigger_materialization().result(timeout=30)
    feed(h, [("a", 5)])
    snapshot = h.snapshot(2)
    h.close()
    plain = OperatorHarness.of(lambda stream: stream.key_by(lambda record: record[0]).process(Accumulate()))
    plain.open([snapshot])
    assert probe(plain, ["a", "b"]) == expected_after([("a", 1), ("b", 2), ("a", 5), ("a", 0), ("b", 0)])
    plain.close()


def test_keyed_reduce_writes_through_its_value_table_are_logged() -> None:
    backend = ChangelogStateBackend(HashMapStateBackend(), ChangelogSettings())

    def reduced(restore: list | None = None) -> OperatorHarness:
        return OperatorHarness.of(
            lambda stream: stream.key_by(lambda record: record[0]).reduce(lambda a, b: (a[0], a[1] + b[1])),
            state_backend=backend,
        ).open(restore)

    h = reduced()
    h.process_elements([("a", 1), ("b", 1), ("a", 1)])
    snapshot = h.snapshot(1)
    h.close()
    again = reduced([snapshot])
    again.process_elements([("a", 10), ("b", 10)])
    assert again.take_values() == [("a", 12), ("b", 11)]
    again.close()


# -- on the backend itself --------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def backend_on(
    inner: Any, settings: ChangelogSettings, storage: Any = None, clock: Any = None
) -> ChangelogKeyedStateBackend:
    info = TaskInfo("job", "unit", 0, 1, inner.max_parallelism)
    return ChangelogKeyedStateBackend(
        inner, settings, info, "op", storage or InMemoryStateChangelogStorage(), **({"clock": clock} if clock else {})
    )


def file_writer(tmp_path: Path, checkpoint_id: int) -> Any:
    storage = create_checkpoint_storage(
        FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}", file_state_size_threshold=0), "job"
    )
    return _SubtaskStateWriter(storage, checkpoint_id, "op-0")


def written_size(handle: Any) -> int:
    """What a checkpoint stores for the keyed state: the pickled handle (the checkpointer writes it as one blob)."""
    return len(pickle.dumps(handle, protocol=5))


def test_a_checkpoints_upload_stays_small_while_the_state_is_large(tmp_path: Path) -> None:
    """FLIP-158's point: after a materialization, a checkpoint stores the few changes since the last one, not
    the state; without the changelog every checkpoint stores all of it."""
    keys = 50_000
    settings = ChangelogSettings(storage="filesystem", base_path=str(tmp_path / "dstl"))
    backend = backend_on(
        HeapKeyedStateBackend(128, range(128)), settings, FsStateChangelogStorage(settings.base_path, "job")
    )
    plain = HeapKeyedStateBackend(128, range(128))
    for target in (backend, plain):
        state = target.get_state(ValueStateDescriptor("payload"))
        for key in range(keys):
            target.current_key = key
            state.update(f"value of {key} " * 4)
    full = written_size(plain.snapshot(1).write(file_writer(tmp_path, 1)))
    backend.snapshot(1).write(file_writer(tmp_path, 1))
    backend.trigger_materialization().result(timeout=30)
    state = backend.get_state(ValueStateDescriptor("payload"))
    for key in range(10):
        backend.current_key = key
        state.update("changed")
    handle = backend.snapshot(2).write(file_writer(tmp_path, 2))
    uploaded = backend.last_checkpoint_upload + written_size(handle)
    assert full > 2_000_000
    assert handle.materialized is not None and handle.materialized.size > full / 2
    assert uploaded < full / 100, f"a checkpoint of 10 changes stored {uploaded} bytes; the state is {full}"
    assert all(isinstance(h, FileStateHandle) for h in handle.shared_handles())
    backend.dispose()


def test_materialization_follows_the_interval_and_drops_the_log_before_it(tmp_path: Path) -> None:
    clock = Clock()
    backend = backend_on(
        HeapKeyedStateBackend(128, range(128)), ChangelogSettings(materialize_interval_ms=1000), clock=clock
    )
    state = backend.get_state(ValueStateDescriptor("v"))
    backend.current_key = "a"
    for checkpoint_id in range(1, 4):
        state.update(checkpoint_id)
        clock.now += 0.4
        handle = backend.snapshot(checkpoint_id).write(file_writer(tmp_path, checkpoint_id))
        backend.notify_checkpoint_complete(checkpoint_id)
    assert handle.materialized is None and len(handle.changes) == 3  # 1.2 s passed: the 3rd started one
    wait_until(
        lambda: backend._in_flight is None or backend._in_flight[1].done(), timeout=30, what="the materialization"
    )
    state.update(4)
    handle = backend.snapshot(4).write(file_writer(tmp_path, 4))
    assert handle.materialized is not None and [segment.number for segment in handle.changes] == [3]
    backend.dispose()


def test_failed_materializations_beyond_the_allowed_number_fail_the_task() -> None:
    class Failing:
        def write(self, name: str, data: bytes) -> Any:
            raise OSError("disk full")

        write_shared = write

    backend = backend_on(HeapKeyedStateBackend(128, range(128)), ChangelogSettings(max_failures_allowed=1))
    state = backend.get_state(ValueStateDescriptor("v"))
    backend.current_key = "a"
    backend._writer = Failing()
    for attempt in range(2):
        state.update(attempt)
        future = backend.trigger_materialization()
        with pytest.raises(OSError):
            future.result(timeout=30)
        if attempt == 0:
            backend.snapshot(attempt + 1)  # one failure is allowed: logged, retried later
    with pytest.raises(StateError, match="max-failures-allowed"):
        backend.snapshot(3)
    backend.dispose()


def test_a_failover_carries_on_from_the_restored_materialization_and_log(tmp_path: Path) -> None:
    old = backend_on(HeapKeyedStateBackend(128, range(128)), ChangelogSettings())
    state = old.get_state(ValueStateDescriptor("v"))
    old.current_key = "a"
    state.update(1)
    old.snapshot(1).write(file_writer(tmp_path, 1))
    old.trigger_materialization().result(timeout=30)
    state.update(2)
    checkpoint = old.snapshot(2).write(file_writer(tmp_path, 2))
    old.dispose()
    new = backend_on(HeapKeyedStateBackend(128, range(128)), ChangelogSettings())
    new.restore([checkpoint], read_state_handle, 2, owned=True)
    state = new.get_state(ValueStateDescriptor("v"))
    new.current_key = "a"
    assert state.value() == 2
    state.update(3)
    after = new.snapshot(3).write(file_writer(tmp_path, 3))
    assert after.materialized == checkpoint.materialized
    assert after.changes[: len(checkpoint.changes)] == checkpoint.changes and len(after.changes) == 2
    new.dispose()


def test_ttl_state_keeps_its_timestamps_through_the_log(tmp_path: Path) -> None:
    now = [1_000]
    ttl = StateTtlConfig.new_builder(Duration.of_millis(100)).build()
    descriptor = ValueStateDescriptor("v")
    descriptor.enable_time_to_live(ttl)
    old = backend_on(HeapKeyedStateBackend(128, range(128), ttl_clock=lambda: now[0]), ChangelogSettings())
    old.current_key = "a"
    old.get_state(descriptor).update("fresh")
    checkpoint = old.snapshot(1).write(file_writer(tmp_path, 1))
    old.dispose()
    new = backend_on(HeapKeyedStateBackend(128, range(128), ttl_clock=lambda: now[0]), ChangelogSettings())
    new.restore([checkpoint], read_state_handle, 1)
    new.current_key = "a"
    state = new.get_state(descriptor)
    assert state.value() == "fresh"
    now[0] += 150
    assert state.value() is None  # expired by the timestamp of its write, carried through the log
    new.dispose()


# -- configuration ----------------------------------------------------------------------------------------------


def test_the_keys_reach_the_jobs_state_backend(tmp_path: Path) -> None:
    configuration = Configuration()
    for key, value in {
        "state.changelog.enabled": "true",
        "state.changelog.storage": "filesystem",
        "state.changelog.dstl.dfs.base-path": str(tmp_path),
        "state.changelog.periodic-materialize.interval": "2 s",
        "state.changelog.periodic-materialize.enabled": "false",
        "state.changelog.max-failures-allowed": "0",
        "state.changelog.dstl.dfs.compression.enabled": "true",
        "state.changelog.dstl.dfs.upload.max-attempts": "5",
        "state.changelog.dstl.dfs.upload.next-attempt-delay": "20 ms",
        "state.backend.type": "rocksdb",
    }.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    assert env.is_changelog_state_backend_enabled()
    backend = env._fault_tolerance().state_backend
    assert isinstance(backend, ChangelogStateBackend)
    assert isinstance(backend.get_delegated_state_backend(), EmbeddedRocksDBStateBackend)
    assert backend.get_settings() == ChangelogSettings("filesystem", str(tmp_path), False, 2000, 0, True, 5, 20)
    assert pickle.loads(pickle.dumps(backend)) == backend


def test_filesystem_storage_without_a_base_path_is_refused() -> None:
    configuration = Configuration().set_string("state.changelog.storage", "filesystem")
    with pytest.raises(ConfigurationError, match="state.changelog.dstl.dfs.base-path"):
        ChangelogSettings.of(configuration)


@pytest.mark.parametrize(
    "key", ["state.changelog.dstl.dfs.upload.num-threads", "state.changelog.dstl.dfs.preemptive-persist-threshold"]
)
def test_the_storage_keys_fluvial_has_no_use_for_are_refused(key: str) -> None:
    with pytest.raises(ConfigurationError, match="upload pool|batching"):
        Configuration().set_string(key, "4")


def test_compressed_segments_in_files_restore(tmp_path: Path) -> None:
    settings = ChangelogSettings(storage="filesystem", base_path=str(tmp_path / "dstl"), compression=True)
    old = backend_on(
        HeapKeyedStateBackend(128, range(128)), settings, FsStateChangelogStorage(str(tmp_path / "dstl"), "job")
    )
    state = old.get_state(ListStateDescriptor("l"))
    old.current_key = "a"
    state.add_all(["x"] * 1000)
    checkpoint = old.snapshot(1).write(file_writer(tmp_path, 1))
    old.dispose()
    (segment,) = checkpoint.changes
    assert segment.compressed and isinstance(segment.handle, FileStateHandle) and segment.handle.size < 1000
    assert segment.handle.path.startswith(f"file://{tmp_path / 'dstl' / 'job'}")
    new = backend_on(HeapKeyedStateBackend(128, range(128)), settings, InMemoryStateChangelogStorage())
    new.restore([checkpoint], read_state_handle, 1)
    new.current_key = "a"
    assert list(new.get_state(ListStateDescriptor("l")).get()) == ["x"] * 1000
    new.dispose()


@pytest.mark.parametrize("inner", ["heap", "rocksdb"])
def test_windows_and_their_timers_restore_from_a_changelog_checkpoint(inner: str) -> None:
    from fluvial.datastream.window import TumblingEventTimeWindows

    backend = ChangelogStateBackend(INNER[inner](), ChangelogSettings())

    def windowed(restore: list | None = None) -> OperatorHarness:
        return OperatorHarness.of(
            lambda stream: (
                stream.key_by(lambda record: record[0])
                .window(TumblingEventTimeWindows.of(Duration.of_millis(1000)))
                .reduce(lambda a, b: (a[0], a[1] + b[1]))
            ),
            state_backend=backend,
        ).open(restore)

    h = windowed()
    h.process_element(("a", 1), 10).process_element(("b", 2), 20)
    h.snapshot(1)
    h.process_element(("a", 3), 900).process_element(("a", 5), 1500)
    snapshot = h.snapshot(2)
    h.close()
    again = windowed([snapshot])
    assert again.timer_count() == 3
    again.process_element(("b", 4), 999)
    again.process_watermark(999)
    assert sorted(again.take_values()) == [("a", 4), ("b", 6)]
    again.process_final_watermark()
    assert again.take_values() == [("a", 5)]
    again.close()
