"""CompletedCheckpointStore: retention of the newest N, savepoints kept, shared files reference-counted."""

from __future__ import annotations

import logging
import uuid

import pytest

from fluvial.checkpoint.storage import (
    CheckpointMetadata,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    OperatorState,
    SubtaskState,
    create_checkpoint_storage,
)
from fluvial.checkpoint.store import CompletedCheckpoint, CompletedCheckpointStore
from fluvial.datastream.checkpoint_storage import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)

JOB = "job-store"


@pytest.fixture(params=["file", "memory"])
def storage(request, tmp_path):
    url = f"file://{tmp_path}" if request.param == "file" else f"memory://store-{uuid.uuid4().hex}"
    return create_checkpoint_storage(FileSystemCheckpointStorage(url, file_state_size_threshold=0), JOB)


def complete(storage, checkpoint_id: int, *, shared=(), is_savepoint: bool = False) -> CompletedCheckpoint:
    """Write a checkpoint the way a finalized PendingCheckpoint does, with one private state file."""
    private = storage.write_state(checkpoint_id, "op-0-keyed", b"p" * 64)
    subtask = SubtaskState(keyed=[private], shared=list(shared))
    metadata = CheckpointMetadata(
        checkpoint_id, 1000 + checkpoint_id, JOB, is_savepoint, {"op": OperatorState("op", 1, 128, {0: subtask})}
    )
    location = storage.write_metadata(checkpoint_id, metadata)
    return CompletedCheckpoint(checkpoint_id, 1000 + checkpoint_id, location, metadata, is_savepoint)


def exists(storage, checkpoint: CompletedCheckpoint) -> bool:
    try:
        storage.read_metadata(checkpoint.metadata_location)
    except CheckpointNotFoundError:
        return False
    return True


def readable(storage, handle) -> bool:
    try:
        storage.read_state(handle)
    except CorruptCheckpointError:
        return False
    return True


def test_keeps_the_newest_n_and_discards_the_rest(storage):
    store = CompletedCheckpointStore(2, storage)
    first, second, third = (complete(storage, i) for i in (1, 2, 3))
    assert store.add(first) == [] and store.add(second) == []
    assert store.add(third) == [first]
    assert [c.checkpoint_id for c in store.all()] == [2, 3]
    assert store.latest() is third and len(store) == 2
    assert not exists(storage, first)
    assert exists(storage, second) and exists(storage, third)
    assert not readable(storage, first.metadata.operator_states["op"].subtask_states[0].keyed[0])


def test_an_empty_store_has_no_latest(storage):
    store = CompletedCheckpointStore(1, storage)
    assert store.latest() is None and store.all() == []


def test_savepoints_leave_the_store_but_keep_their_files(storage):
    store = CompletedCheckpointStore(1, storage)
    savepoint = complete(storage, 1, is_savepoint=True)
    store.add(savepoint)
    assert store.add(complete(storage, 2)) == [savepoint]
    assert exists(storage, savepoint)


def test_ids_must_increase(storage):
    store = CompletedCheckpointStore(3, storage)
    store.add(complete(storage, 5))
    with pytest.raises(ValueError, match="checkpoint 4 completed after checkpoint 5"):
        store.add(complete(storage, 4))


@pytest.mark.parametrize("bad", [0, -1, True])
def test_num_retained_must_be_positive(storage, bad):
    with pytest.raises(ValueError, match="state.checkpoints.num-retained"):
        CompletedCheckpointStore(bad, storage)


def test_a_shared_file_lives_while_a_retained_checkpoint_refers_to_it(storage):
    store = CompletedCheckpointStore(1, storage)
    old = storage.write_shared("000001.sst", b"1" * 100)
    new = storage.write_shared("000002.sst", b"2" * 100)
    store.add(complete(storage, 1, shared=[old]))
    assert store.shared_reference_count(old) == 1
    store.add(complete(storage, 2, shared=[old, new]))  # incremental: reuses `old`
    assert store.shared_reference_count(old) == 1 and readable(storage, old)
    store.add(complete(storage, 3, shared=[new]))  # compaction dropped `old`
    assert store.shared_reference_count(old) == 0 and not readable(storage, old)
    assert store.shared_reference_count(new) == 1 and readable(storage, new)


def test_a_pending_reference_protects_a_shared_file(storage):
    store = CompletedCheckpointStore(1, storage)
    reused = storage.write_shared("000007.sst", b"7" * 100)
    store.add(complete(storage, 1, shared=[reused]))
    store.register_shared(2, [reused])  # checkpoint 2 is pending and reuses the file
    store.add(complete(storage, 3))  # checkpoint 1 is subsumed
    assert readable(storage, reused)
    assert store.release_shared(2) == [reused]  # checkpoint 2 was aborted
    assert not readable(storage, reused)


def test_registration_is_idempotent(storage):
    store = CompletedCheckpointStore(1, storage)
    handle = storage.write_shared("x.sst", b"x" * 100)
    store.register_shared(1, [handle])
    store.register_shared(1, [handle, handle])
    assert store.shared_reference_count(handle) == 1


def test_files_only_an_aborted_checkpoint_uploaded_are_discarded(storage):
    store = CompletedCheckpointStore(1, storage)
    fresh = storage.write_shared("fresh.sst", b"f" * 100)
    store.register_shared(4, [fresh])
    store.release_shared(4)
    assert not readable(storage, fresh)
    assert store.release_shared(4) == []


def test_a_savepoints_shared_references_are_never_released(storage):
    store = CompletedCheckpointStore(1, storage)
    handle = storage.write_shared("sp.sst", b"s" * 100)
    store.add(complete(storage, 1, shared=[handle], is_savepoint=True))
    store.add(complete(storage, 2))
    assert readable(storage, handle) and store.shared_reference_count(handle) == 1


def test_shutdown_with_discard_removes_checkpoints_but_not_savepoints(storage):
    store = CompletedCheckpointStore(3, storage)
    savepoint, checkpoint = complete(storage, 1, is_savepoint=True), complete(storage, 2)
    store.add(savepoint)
    store.add(checkpoint)
    store.shutdown(discard=True)
    assert len(store) == 0
    assert exists(storage, savepoint) and not exists(storage, checkpoint)


def test_shutdown_without_discard_keeps_every_file(storage):
    store = CompletedCheckpointStore(3, storage)
    shared = storage.write_shared("keep.sst", b"k" * 100)
    checkpoint = complete(storage, 1, shared=[shared])
    store.add(checkpoint)
    store.shutdown(discard=False)
    assert len(store) == 0
    assert exists(storage, checkpoint) and readable(storage, shared)


def test_a_failing_discard_is_logged_not_raised(caplog):
    class BrokenStorage:
        def discard_checkpoint(self, checkpoint_id):
            raise OSError("disk went away")

        def discard_shared(self, handle):
            raise OSError("disk went away")

    memory = create_checkpoint_storage(JobManagerCheckpointStorage(), JOB)
    store = CompletedCheckpointStore(1, BrokenStorage())  # type: ignore[arg-type]
    store.add(complete(memory, 1))
    with caplog.at_level(logging.WARNING, logger="fluvial.checkpoint.store"):
        subsumed = store.add(complete(memory, 2))
    assert [c.checkpoint_id for c in subsumed] == [1]
    assert "could not discard checkpoint 1" in caplog.text


def test_a_claimed_checkpoint_of_another_run_is_discarded_at_its_location_once_subsumed(tmp_path):
    """RecoveryClaimMode.CLAIM: the other run's checkpoint joins the store; once subsumed, its directory goes,
    and so do its shared files — except those a newer checkpoint of this job still refers to."""
    other = create_checkpoint_storage(
        FileSystemCheckpointStorage(f"file://{tmp_path}", file_state_size_threshold=0), "other-run"
    )
    kept, dropped = other.write_shared("sst-kept", b"k" * 32), other.write_shared("sst-dropped", b"d" * 32)
    claimed = complete(other, 7, shared=[kept, dropped])
    claimed = CompletedCheckpoint(7, claimed.timestamp, claimed.metadata_location, claimed.metadata, claimed=True)
    own = create_checkpoint_storage(FileSystemCheckpointStorage(f"file://{tmp_path}", file_state_size_threshold=0), JOB)
    store = CompletedCheckpointStore(1, own)
    store.add(claimed)
    store.register_shared(8, [kept])  # this job's first incremental checkpoint builds on one of its files
    store.add(complete(own, 8, shared=[kept]))
    assert not exists(other, claimed)
    assert readable(other, kept) and not readable(other, dropped)
