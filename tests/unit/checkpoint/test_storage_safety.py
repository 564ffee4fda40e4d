"""File checkpoint storage under faults and hostile neighbours (issue 13, defects 9, 10, 11): `_metadata` goes
first when a checkpoint is discarded, a checkpoint directory can be moved, everything written is private, and a
checkpoint someone else could have written is not restored."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from fluvial.checkpoint.storage import (
    CheckpointMetadata,
    CheckpointNotFoundError,
    FileStateHandle,
    OperatorState,
    SubtaskState,
    create_checkpoint_storage,
    read_checkpoint_metadata,
    read_state_handle,
)
from fluvial.common.private_files import UntrustedLocationError
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage, JobManagerCheckpointStorage

JOB = "job-safety"


def file_storage(tmp_path, **options):
    options.setdefault("file_state_size_threshold", 0)
    return create_checkpoint_storage(FileSystemCheckpointStorage(f"file://{tmp_path}/checkpoints", **options), JOB)


def complete_checkpoint(storage, checkpoint_id: int = 1) -> str:
    keyed = storage.write_state(checkpoint_id, "op-0-keyed", b"keyed state")
    operator = storage.write_state(checkpoint_id, "op-0-op", b"operator state")
    subtask = SubtaskState(keyed=[keyed], operator=[operator], raw={"position": 7})
    metadata = CheckpointMetadata(checkpoint_id, 1, JOB, False, {"op": OperatorState("op", 1, 128, {0: subtask})})
    return storage.write_metadata(checkpoint_id, metadata)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- defect 9: discard -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        file_storage,
        lambda tmp_path: create_checkpoint_storage(
            JobManagerCheckpointStorage(checkpoint_path=f"file://{tmp_path}/checkpoints"), JOB
        ),
    ],
)
def test_a_discard_killed_after_its_first_step_leaves_no_metadata(tmp_path, monkeypatch, make):
    storage = make(tmp_path)
    location = complete_checkpoint(storage)
    fs = storage._files.fs

    def killed(*args, **kwargs):
        raise OSError("killed while deleting the state files")

    monkeypatch.setattr(fs, "rm", killed)
    with pytest.raises(OSError, match="killed"):
        storage.discard_checkpoint(1)
    with pytest.raises(CheckpointNotFoundError):
        read_checkpoint_metadata(location)
    monkeypatch.undo()
    storage.discard_checkpoint(1)  # finishing the discard later is fine
    assert not os.path.exists(location.removeprefix("file://"))


# -- defect 10: relocation ----------------------------------------------------------------------------------------


def test_a_moved_checkpoint_directory_restores_from_its_new_place(tmp_path):
    storage = file_storage(tmp_path)
    location = complete_checkpoint(storage)
    old_dir = location.removeprefix("file://")
    new_dir = tmp_path / "moved" / "chk-1"
    new_dir.parent.mkdir(mode=0o700)
    shutil.move(old_dir, new_dir)
    metadata = read_checkpoint_metadata(str(new_dir))
    subtask = metadata.operator_states["op"].subtask_states[0]
    assert [h.path for h in subtask.handles()] == [f"file://{new_dir}/op-0-keyed", f"file://{new_dir}/op-0-op"]
    assert [read_state_handle(h) for h in subtask.handles()] == [b"keyed state", b"operator state"]
    assert subtask.raw == {"position": 7}


def test_shared_files_keep_their_full_url(tmp_path):
    storage = file_storage(tmp_path)
    shared = storage.write_shared("op-0-000001.sst", b"sst")
    subtask = SubtaskState(shared=[shared])
    location = storage.write_metadata(
        1, CheckpointMetadata(1, 1, JOB, False, {"op": OperatorState("op", 1, 128, {0: subtask})})
    )
    [read] = read_checkpoint_metadata(location).operator_states["op"].subtask_states[0].shared
    assert isinstance(read, FileStateHandle) and read.path == shared.path


# -- defect 11: private files, trusted restores -----------------------------------------------------------------


def test_checkpoint_files_and_directories_are_private(tmp_path):
    storage = file_storage(tmp_path)
    location = complete_checkpoint(storage)
    storage.write_shared("x.sst", b"sst")
    base = tmp_path / "checkpoints"
    directories = [base, base / JOB, base / JOB / "shared", base / JOB / "chk-1"]
    assert {str(d): mode(d) for d in directories} == {str(d): 0o700 for d in directories}
    files = [p for p in base.rglob("*") if p.is_file()]
    assert len(files) == 4 and {mode(f) for f in files} == {0o600}
    assert read_checkpoint_metadata(location).checkpoint_id == 1


@pytest.mark.parametrize("target", ["chk", "metadata", "state", "job"])
def test_a_checkpoint_others_can_write_is_refused_with_the_reason(tmp_path, target):
    storage = file_storage(tmp_path)
    location = complete_checkpoint(storage)
    chk = location.removeprefix("file://")
    path = {"chk": chk, "metadata": f"{chk}/_metadata", "state": f"{chk}/op-0-keyed", "job": os.path.dirname(chk)}[
        target
    ]
    os.chmod(path, mode(path) | stat.S_IWOTH)
    with pytest.raises(UntrustedLocationError) as caught:
        read_checkpoint_metadata(location)
    message = str(caught.value)
    assert f"{path} is writable by others" in message and "chmod go-w" in message


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: only root can give a file to another user (chown)")
def test_a_checkpoint_owned_by_another_user_is_refused(tmp_path):
    storage = file_storage(tmp_path)
    location = complete_checkpoint(storage)
    metadata_file = location.removeprefix("file://") + "/_metadata"
    os.chown(metadata_file, 4242, 4242)
    with pytest.raises(UntrustedLocationError, match="owned by another user \\(uid 4242\\)"):
        read_checkpoint_metadata(location)


def test_a_sticky_world_writable_ancestor_is_trusted(tmp_path):
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    os.chmod(shared_tmp, 0o1777)
    storage = create_checkpoint_storage(FileSystemCheckpointStorage(str(shared_tmp / "ckpt")), JOB)
    assert read_checkpoint_metadata(complete_checkpoint(storage)).checkpoint_id == 1
