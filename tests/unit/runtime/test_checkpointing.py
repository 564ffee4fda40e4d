"""SubtaskCheckpointCoordinator, step by step (its module docstring numbers them): the barrier leaves on every
output before any operator snapshots; the synchronous part freezes state; the asynchronous part runs on the I/O
executor (a ManualScheduledExecutor here, so the test decides when) and acknowledges through the responder, or
declines with ASYNC_ERROR and discards what was frozen; savepoints go to their own storage; a source adds its
split positions; and `load` reads a subtask's share back — keyed state, timers merged, operator lists dealt."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from fluvial.checkpoint.failure_reason import CheckpointFailureReason
from fluvial.checkpoint.restore import subtask_assignment
from fluvial.checkpoint.snapshots import OperatorSnapshot, RestoreAssignment
from fluvial.checkpoint.storage import OperatorState, create_checkpoint_storage
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.checkpoint_storage import JobManagerCheckpointStorage
from fluvial.runtime.checkpointing import SOURCE_SPLITS, SubtaskCheckpointCoordinator
from fluvial.runtime.records import CheckpointBarrier, RecordBatch
from fluvial.state.heap import HeapKeyedStateBackend
from fluvial.state.snapshot import SnapshotType
from fluvial.testing import ManualScheduledExecutor
from tests.unit.runtime.chains import build_chain, job_graph, open_chain

INFO = TaskInfo("job", "Reduce", 0, 1, 128)


class Responder:
    def __init__(self) -> None:
        self.acks: dict[int, dict] = {}
        self.declines: list[tuple[int, CheckpointFailureReason, str]] = []

    def acknowledge(self, checkpoint_id: int, states: dict, metrics: Any = None) -> None:
        self.acks[checkpoint_id] = states

    def decline(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str = "") -> None:
        self.declines.append((checkpoint_id, reason, detail))


class Storages:
    """A CheckpointStorageProvider: the job's storage, and one storage per savepoint directory asked for."""

    def __init__(self, failing: bool = False) -> None:
        self.checkpoints = (
            FailingStorage() if failing else create_checkpoint_storage(JobManagerCheckpointStorage(), "job")
        )
        self.savepoints: dict[str, Any] = {}

    def checkpoint_storage(self) -> Any:
        return self.checkpoints

    def savepoint_storage(self, directory: str) -> Any:
        return self.savepoints.setdefault(
            directory, create_checkpoint_storage(JobManagerCheckpointStorage(), f"savepoint-{len(self.savepoints)}")
        )


class FailingStorage:
    def write_state(self, checkpoint_id: int, name: str, data: bytes) -> Any:
        raise OSError("no space left on device")


class Logged:
    """A stand-in for a writer and for operators: everything they are asked, in one log."""

    def __init__(self, log: list, name: str, snapshot: Any = None, fail: bool = False) -> None:
        self.log, self.name, self.snapshot, self.fail = log, name, snapshot, fail
        self.snapshot_types: list[SnapshotType] = []

    def broadcast_event(self, event: Any) -> None:
        self.log.append((self.name, "event", event))

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.log.append((self.name, "pre-barrier", checkpoint_id))

    def snapshot_state(self, checkpoint_id: int, snapshot_type: SnapshotType) -> Any:
        self.log.append((self.name, "snapshot", checkpoint_id))
        self.snapshot_types.append(snapshot_type)
        if self.fail:
            raise RuntimeError(f"{self.name} cannot freeze its state")
        return self.snapshot


class PendingKeyed:
    """A keyed backend's pending snapshot that records whether it was discarded."""

    def __init__(self) -> None:
        self.discarded = False

    def write(self, writer: Any) -> Any:
        return writer.write("keyed", b"frozen state")

    def discard(self) -> None:
        self.discarded = True


class Chain:
    def __init__(self, operators: list) -> None:
        self.order = operators
        self.head = operators[0]


def checkpointer(
    chain: Any, writers: list, storages: Storages, io: ManualScheduledExecutor, responder: Responder, source: Any = None
) -> SubtaskCheckpointCoordinator:
    return SubtaskCheckpointCoordinator(chain, writers, source, storages, io, responder, INFO)


def keyed_chain(records: list):
    """The keyed vertex of `source -> key_by -> reduce -> sink`, opened, with `records` reduced."""
    graph = job_graph(
        lambda env: (
            env.from_collection([("x", 0)])
            .key_by(lambda v: v[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .uid("reduce")
            .add_sink(lambda v: None)
        )
    )
    chain, _ = build_chain(graph.vertices[1])
    open_chain(chain)
    chain.head.process_batch(RecordBatch(records))
    return chain


# -- taking a checkpoint ----------------------------------------------------------------------------------------------


def test_operators_emit_what_they_hold_head_first_then_the_barrier_goes_out_before_any_snapshot() -> None:
    log: list = []
    writers = [Logged(log, "writer-1"), Logged(log, "writer-2")]
    chain = Chain([Logged(log, "head"), Logged(log, "tail")])
    barrier = CheckpointBarrier(3, 1234)
    checkpointer(chain, writers, Storages(), ManualScheduledExecutor(), Responder()).checkpoint_state(barrier)
    assert log == [
        ("head", "pre-barrier", 3),
        ("tail", "pre-barrier", 3),
        ("writer-1", "event", barrier),
        ("writer-2", "event", barrier),
        ("head", "snapshot", 3),
        ("tail", "snapshot", 3),
    ]
    assert chain.head.snapshot_types == [SnapshotType.CHECKPOINT]


def test_the_asynchronous_part_runs_on_the_io_executor_and_acknowledges_per_operator() -> None:
    chain = keyed_chain([("a", 1), ("b", 2), ("a", 3)])
    io, responder = ManualScheduledExecutor(), Responder()
    checkpointer(chain, [], Storages(), io, responder).checkpoint_state(CheckpointBarrier(1, 0))
    assert responder.acks == {} and io.queued == 1, "nothing is written on the task thread"
    chain.head.process_batch(RecordBatch([("a", 100)]))  # after the barrier: not part of checkpoint 1
    io.run_all()
    (states,) = responder.acks.values()
    reduce_id = chain.order[0].context.operator_id
    assert set(states) == {reduce_id}, "operators without state acknowledge nothing"
    assert len(states[reduce_id].keyed) == 1 and states[reduce_id].operator == []
    restore = SubtaskCheckpointCoordinator.load(_assignment(reduce_id, states, 1), reduce_id, INFO)
    backend = HeapKeyedStateBackend(128, range(128))
    backend.restore(restore.keyed, restore.reader, 1, False)
    frozen = dict(backend.value_table("_keyed_reduce"))
    assert frozen == {"a": ("a", 4), "b": ("b", 2)}, "the frozen state, not what came after the barrier"


def test_a_failing_write_declines_with_async_error_and_discards_the_frozen_state() -> None:
    pending = PendingKeyed()
    snapshot = OperatorSnapshot("op-1", keyed=pending)
    io, responder = ManualScheduledExecutor(), Responder()
    chain = Chain([Logged([], "op", snapshot=snapshot)])
    checkpointer(chain, [], Storages(failing=True), io, responder).checkpoint_state(CheckpointBarrier(2, 0))
    io.run_all()
    assert responder.acks == {}
    ((checkpoint_id, reason, detail),) = responder.declines
    assert (checkpoint_id, reason) == (2, CheckpointFailureReason.ASYNC_ERROR)
    assert detail == "OSError: no space left on device"
    assert pending.discarded


def test_a_failing_synchronous_part_raises_and_discards_what_was_already_frozen() -> None:
    pending = PendingKeyed()
    chain = Chain(
        [Logged([], "first", snapshot=OperatorSnapshot("op-1", keyed=pending)), Logged([], "second", fail=True)]
    )
    io = ManualScheduledExecutor()
    with pytest.raises(RuntimeError, match="second cannot freeze"):
        checkpointer(chain, [], Storages(), io, Responder()).checkpoint_state(CheckpointBarrier(1, 0))
    assert pending.discarded and io.queued == 0


def test_a_savepoint_is_canonical_and_written_to_its_own_directory() -> None:
    operator = Logged([], "op", snapshot=OperatorSnapshot("op-1", operator_state={"items": [1, 2]}))
    storages, io, responder = Storages(), ManualScheduledExecutor(), Responder()
    checkpointer(Chain([operator]), [], storages, io, responder).checkpoint_state(
        CheckpointBarrier(5, 0, savepoint_dir="/savepoints/here")
    )
    io.run_all()
    assert operator.snapshot_types == [SnapshotType.SAVEPOINT]
    (handle,) = responder.acks[5]["op-1"].operator
    assert list(storages.savepoints) == ["/savepoints/here"]
    assert handle.name.startswith("op-1-0-op"), "state files are named after operator and subtask"


class SourceInputStub:
    def __init__(self) -> None:
        self.snapshots: list[int] = []

    def snapshot_splits(self, checkpoint_id: int) -> list:
        self.snapshots.append(checkpoint_id)
        return ["split-0@42"]


class HeadStub(Logged):
    def __init__(self) -> None:
        super().__init__([], "source")
        self.context = type("Context", (), {"operator_id": "source-id"})()


def test_a_source_adds_its_split_positions_to_the_heads_operator_state() -> None:
    source = SourceInputStub()
    io, responder = ManualScheduledExecutor(), Responder()
    checkpointer(Chain([HeadStub()]), [], Storages(), io, responder, source).checkpoint_state(CheckpointBarrier(7, 0))
    io.run_all()
    assert source.snapshots == [7]
    (handle,) = responder.acks[7]["source-id"].operator
    restore = SubtaskCheckpointCoordinator.load(_assignment("source-id", responder.acks[7], 7), "source-id", INFO)
    assert restore.operator_state == {SOURCE_SPLITS: ["split-0@42"]}
    assert pickle.loads(handle.data) == {SOURCE_SPLITS: ["split-0@42"]}


def test_abort_declines_with_the_reason_given() -> None:
    responder = Responder()
    checkpointer(Chain([HeadStub()]), [], Storages(), ManualScheduledExecutor(), responder).abort_checkpoint(
        9, CheckpointFailureReason.DECLINED_SUBSUMED, "overtaken"
    )
    assert responder.declines == [(9, CheckpointFailureReason.DECLINED_SUBSUMED, "overtaken")]


# -- restoring -------------------------------------------------------------------------------------------------------


def _assignment(operator_id: str, states: dict, checkpoint_id: int, parallelism: int = 1):
    old = OperatorState(operator_id, parallelism, 128, {0: states[operator_id]})
    return subtask_assignment(old, checkpoint_id, 1, 0)


def test_load_merges_timers_of_every_handle_and_deals_out_operator_lists() -> None:
    storage = create_checkpoint_storage(JobManagerCheckpointStorage(), "job")
    keyed = [
        storage.write_state(1, f"k{i}", pickle.dumps((None, timers), protocol=5))
        for i, timers in enumerate(
            [{3: {"event": ["t1"]}}, {3: {"event": ["t2"], "processing": ["p"]}, 4: {"event": ["t3"]}}]
        )
    ]
    operator = [
        (storage.write_state(1, f"o{j}", pickle.dumps({"items": items, "union:all": [j]}, protocol=5)),)
        for j, items in enumerate([[1, 2], [3]])
    ]
    assignment = RestoreAssignment(1, tuple(keyed), tuple(operator), old_parallelism=2, owned=True)
    share = SubtaskCheckpointCoordinator.load(assignment, "op", TaskInfo("job", "T", 0, 3, 128))
    assert share.timers == {3: {"event": ["t1", "t2"], "processing": ["p"]}, 4: {"event": ["t3"]}}
    assert share.keyed == [] and share.owned and share.checkpoint_id == 1
    assert share.operator_state == {"items": [1], "union:all": [0, 1]}
    last = SubtaskCheckpointCoordinator.load(assignment, "op", TaskInfo("job", "T", 2, 3, 128))
    assert last.operator_state == {"items": [3], "union:all": [0, 1]}


def test_an_unaligned_checkpoint_waits_for_its_in_flight_data_then_writes_it_on_the_head_for_replay() -> None:
    from fluvial.runtime.alignment import BarrierStats

    chain = keyed_chain([("a", 1)])
    io, responder = ManualScheduledExecutor(), Responder()
    coordinator = checkpointer(chain, [], Storages(), io, responder)
    coordinator.channel_keys = ["edge/0", "edge/1"]
    coordinator.checkpoint_state(CheckpointBarrier(1, 0), BarrierStats(0, unaligned=True))
    io.run_all()
    assert responder.acks == {}, "the snapshot waits until every channel's in-flight data is known"
    coordinator.channel_state_complete(1, {0: [RecordBatch([("a", 2)]), RecordBatch([("b", 3)])], 1: []})
    io.run_all()
    reduce_id = chain.order[0].context.operator_id
    (states,) = responder.acks.values()
    assert len(states[reduce_id].input_channel) == 1
    restore = SubtaskCheckpointCoordinator.load(_assignment(reduce_id, states, 1), reduce_id, INFO)
    assert {key: [batch.values for batch in items] for key, items in restore.channel_state.items()} == {
        "edge/0": [[("a", 2)], [("b", 3)]]
    }


def test_an_aborted_unaligned_checkpoint_gives_back_its_frozen_state_and_is_never_acknowledged() -> None:
    from fluvial.runtime.alignment import BarrierStats

    keyed = PendingKeyed()
    chain = Chain([Logged([], "head", OperatorSnapshot("head", keyed=keyed))])
    io, responder = ManualScheduledExecutor(), Responder()
    coordinator = checkpointer(chain, [], Storages(), io, responder)
    coordinator.checkpoint_state(CheckpointBarrier(1, 0), BarrierStats(0, unaligned=True))
    coordinator.abort_checkpoint(1, CheckpointFailureReason.DECLINED_SUBSUMED)
    coordinator.channel_state_complete(1, {0: []})
    io.run_all()
    assert keyed.discarded and responder.acks == {}
    assert [decline[0] for decline in responder.declines] == [1]
