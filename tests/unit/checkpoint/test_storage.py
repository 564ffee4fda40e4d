"""Checkpoint storage: one contract run over JobManager memory, file:// and memory:// storage, then the parts
only file storage has (layout, validation at creation, `_metadata` integrity)."""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
import zlib

import fsspec.core
import pytest

from fluvial.checkpoint.storage import (
    ByteStreamStateHandle,
    CheckpointMetadata,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    FileStateHandle,
    FileSystemCheckpointStorageAccess,
    JobManagerCheckpointStorageAccess,
    OperatorState,
    StateTooLargeError,
    SubtaskState,
    create_checkpoint_storage,
    decode_metadata,
    encode_metadata,
    read_checkpoint_metadata,
)
from fluvial.common.errors import ConfigurationError, FluvialError, ResourceError
from fluvial.datastream.checkpoint_storage import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)

JOB = "job-0123"
KINDS = ["jobmanager", "file", "memory"]
FILE_KINDS = ["file", "memory"]


def _memory_url() -> str:
    return f"memory://ckpt-{uuid.uuid4().hex}"


def make_storage(kind: str, tmp_path, **options):
    if kind == "jobmanager":
        return create_checkpoint_storage(JobManagerCheckpointStorage(**options), JOB)
    url = f"file://{tmp_path}/checkpoints" if kind == "file" else _memory_url()
    options.setdefault("file_state_size_threshold", 0)  # every state in a file, so files are what we test
    return create_checkpoint_storage(FileSystemCheckpointStorage(url, **options), JOB)


@pytest.fixture(params=KINDS)
def storage(request, tmp_path):
    return make_storage(request.param, tmp_path)


@pytest.fixture(params=FILE_KINDS)
def file_storage(request, tmp_path):
    return make_storage(request.param, tmp_path)


def metadata_for(checkpoint_id: int, *handles, shared=()) -> CheckpointMetadata:
    subtask = SubtaskState(keyed=list(handles), operator=[], raw={"offset": 42}, shared=list(shared))
    operator = OperatorState("map-1", parallelism=1, max_parallelism=128, subtask_states={0: subtask})
    return CheckpointMetadata(checkpoint_id, 1_700_000_000_000, JOB, False, {"map-1": operator})


def fs_of(url: str):
    return fsspec.core.url_to_fs(url)


def damage(handle, mutate):
    """Apply `mutate(bytes) -> bytes` to what a handle points to (the file, or the inline bytes)."""
    if isinstance(handle, ByteStreamStateHandle):
        return dataclasses.replace(handle, data=mutate(handle.data))
    fs, path = fs_of(handle.path)
    fs.pipe_file(path, mutate(fs.cat_file(path)))
    return handle


# -- the contract, over every storage -------------------------------------------------------------------------


def test_state_round_trips_with_a_crc32_checksum(storage):
    data = b"keyed state \x00\xff" * 100
    handle = storage.write_state(1, "op-0-keyed", data)
    assert handle.checksum == zlib.crc32(data)
    assert handle.size == len(data)
    assert storage.read_state(handle) == data


def test_handle_kind_matches_the_storage(storage):
    handle = storage.write_state(1, "op-0-keyed", b"x" * 10)
    expected = ByteStreamStateHandle if isinstance(storage, JobManagerCheckpointStorageAccess) else FileStateHandle
    assert type(handle) is expected


def test_concurrent_writes_of_different_names_all_survive(storage):
    payloads = {f"op-{i}-keyed": os.urandom(2000 + i) for i in range(16)}
    handles: dict[str, object] = {}

    def write(name: str) -> None:
        handles[name] = storage.write_state(7, name, payloads[name])

    threads = [threading.Thread(target=write, args=(name,)) for name in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {name: storage.read_state(handle) for name, handle in handles.items()} == payloads


def test_a_corrupted_state_is_detected_naming_where_it_is(storage):
    handle = storage.write_state(1, "op-0-keyed", b"abcdefgh" * 64)
    damaged = damage(handle, lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]))
    with pytest.raises(CorruptCheckpointError) as caught:
        storage.read_state(damaged)
    message = str(caught.value)
    assert "corrupted" in message and "cannot be used" in message
    assert (handle.path if isinstance(handle, FileStateHandle) else "op-0-keyed") in message


def test_a_truncated_state_is_detected(storage):
    handle = storage.write_state(1, "op-0-keyed", b"abcdefgh" * 64)
    damaged = damage(handle, lambda data: data[:100])
    # a file handle records its size; inline bytes carry only their checksum
    expected = "truncated" if isinstance(handle, FileStateHandle) else "corrupted"
    with pytest.raises(CorruptCheckpointError, match=expected):
        storage.read_state(damaged)


def test_corrupt_checkpoint_error_is_a_fluvial_error():
    assert issubclass(CorruptCheckpointError, FluvialError)


def test_metadata_round_trips_through_the_returned_location(storage):
    handle = storage.write_state(3, "map-1-0-keyed", b"state" * 50)
    metadata = metadata_for(3, handle)
    location = storage.write_metadata(3, metadata)
    assert location == storage.checkpoint_location(3)
    restored = storage.read_metadata(location)
    assert restored == metadata
    assert storage.read_state(restored.operator_states["map-1"].subtask_states[0].keyed[0]) == b"state" * 50


def test_a_completed_checkpoint_is_never_overwritten(storage):
    storage.write_metadata(4, metadata_for(4))
    with pytest.raises(ResourceError, match="never overwritten"):
        storage.write_metadata(4, metadata_for(4))


def test_metadata_must_be_written_under_its_own_id(storage):
    with pytest.raises(ValueError, match="checkpoint 5 cannot be written as checkpoint 6"):
        storage.write_metadata(6, metadata_for(5))


def test_discarded_checkpoint_is_gone(storage):
    handle = storage.write_state(2, "op-0-keyed", b"y" * 500)
    location = storage.write_metadata(2, metadata_for(2, handle))
    storage.discard_checkpoint(2)
    with pytest.raises(CheckpointNotFoundError):
        storage.read_metadata(location)
    if isinstance(handle, FileStateHandle):
        with pytest.raises(CorruptCheckpointError, match="missing"):
            storage.read_state(handle)
    storage.discard_checkpoint(2)  # discarding twice is harmless


def test_reading_an_unknown_checkpoint_names_the_location(storage):
    location = storage.checkpoint_location(99)
    with pytest.raises(CheckpointNotFoundError) as caught:
        storage.read_metadata(location)
    assert "99" in str(caught.value)


def test_shared_state_round_trips_and_is_never_overwritten(storage):
    first = storage.write_shared("000012.sst", b"sst-a" * 100)
    second = storage.write_shared("000012.sst", b"sst-b" * 100)
    assert first != second
    assert storage.read_state(first) == b"sst-a" * 100
    assert storage.read_state(second) == b"sst-b" * 100


def test_discarding_shared_state_removes_only_that_file(storage):
    gone = storage.write_shared("a.sst", b"a" * 300)
    kept = storage.write_shared("b.sst", b"b" * 300)
    storage.discard_shared(gone)
    assert storage.read_state(kept) == b"b" * 300
    if isinstance(gone, FileStateHandle):
        with pytest.raises(CorruptCheckpointError, match="missing"):
            storage.read_state(gone)


def test_shared_state_dir_is_per_job(storage):
    directory = storage.shared_state_dir()
    if isinstance(storage, JobManagerCheckpointStorageAccess):
        assert directory is None
    else:
        assert directory.endswith(f"/{JOB}/shared")
        assert storage.write_shared("x.sst", b"z" * 10).path.startswith(directory + "/")


# -- JobManager memory ------------------------------------------------------------------------------------------


def test_jobmanager_storage_rejects_a_state_above_max_state_size():
    storage = create_checkpoint_storage(JobManagerCheckpointStorage(max_state_size=1000), JOB)
    assert storage.read_state(storage.write_state(1, "fits", b"x" * 1000)) == b"x" * 1000
    with pytest.raises(StateTooLargeError) as caught:
        storage.write_state(1, "too-big", b"x" * 1001)
    message = str(caught.value)
    assert "1001 bytes" in message and "1000 bytes" in message
    assert "FileSystemCheckpointStorage" in message and "max_state_size" in message
    with pytest.raises(StateTooLargeError):
        storage.write_shared("too-big.sst", b"x" * 1001)


def test_jobmanager_storage_with_a_path_also_writes_metadata_files(tmp_path):
    storage = create_checkpoint_storage(JobManagerCheckpointStorage(str(tmp_path)), JOB)
    location = storage.write_metadata(1, metadata_for(1, storage.write_state(1, "s", b"inline")))
    assert (tmp_path / JOB / "chk-1" / "_metadata").is_file()
    assert read_checkpoint_metadata(location).operator_states["map-1"].subtask_states[0].raw == {"offset": 42}


def test_jobmanager_memory_does_not_know_other_jobs():
    storage = create_checkpoint_storage(JobManagerCheckpointStorage(), JOB)
    storage.write_metadata(1, metadata_for(1))
    with pytest.raises(CheckpointNotFoundError, match="use FileSystemCheckpointStorage"):
        storage.read_metadata("jobmanager://other-job/chk-1")


# -- file systems: layout and thresholds --------------------------------------------------------------------------


def test_file_layout_is_job_then_checkpoint(tmp_path):
    storage = make_storage("file", tmp_path)
    handle = storage.write_state(5, "op-3-keyed", b"q" * 100)
    storage.write_metadata(5, metadata_for(5, handle))
    chk = tmp_path / "checkpoints" / JOB / "chk-5"
    assert sorted(p.name for p in chk.iterdir()) == ["_metadata", "op-3-keyed"]
    assert (tmp_path / "checkpoints" / JOB / "shared").is_dir()


def test_plain_paths_work_like_file_urls(tmp_path):
    storage = create_checkpoint_storage(
        FileSystemCheckpointStorage(str(tmp_path / "plain"), file_state_size_threshold=0), JOB
    )
    handle = storage.write_state(1, "s", b"bytes")
    assert (tmp_path / "plain" / JOB / "chk-1" / "s").read_bytes() == b"bytes"
    assert storage.read_state(handle) == b"bytes"


def test_state_names_never_escape_the_checkpoint_directory(tmp_path):
    storage = make_storage("file", tmp_path)
    slashed = storage.write_state(1, "../my uid/with: slashes", b"1" * 10)
    flat = storage.write_state(1, "___my_uid_with__slashes", b"2" * 10)
    chk = tmp_path / "checkpoints" / JOB / "chk-1"
    assert {p.parent for p in chk.rglob("*")} == {chk}
    assert storage.read_state(slashed) == b"1" * 10 and storage.read_state(flat) == b"2" * 10


def test_small_states_stay_inline_below_the_threshold(tmp_path):
    storage = make_storage("file", tmp_path, file_state_size_threshold=1024)
    assert isinstance(storage.write_state(1, "small", b"s" * 1023), ByteStreamStateHandle)
    assert isinstance(storage.write_state(1, "large", b"l" * 1024), FileStateHandle)
    assert isinstance(storage.write_shared("small.sst", b"s" * 10), ByteStreamStateHandle)


def test_metadata_is_written_without_leftover_temp_files(tmp_path):
    storage = make_storage("file", tmp_path)
    storage.write_metadata(1, metadata_for(1))
    chk = tmp_path / "checkpoints" / JOB / "chk-1"
    assert [p.name for p in chk.iterdir()] == ["_metadata"]


@pytest.mark.parametrize("suffix", ["", "/_metadata"])
def test_metadata_can_be_read_from_the_directory_or_the_file(file_storage, suffix):
    location = file_storage.write_metadata(1, metadata_for(1))
    assert read_checkpoint_metadata(location + suffix).checkpoint_id == 1


# -- file systems: damaged metadata -------------------------------------------------------------------------------


def _metadata_path(storage, checkpoint_id: int):
    fs, path = fs_of(storage.checkpoint_location(checkpoint_id) + "/_metadata")
    return fs, path, fs.unstrip_protocol(path)


def test_truncated_metadata_names_the_file(file_storage):
    location = file_storage.write_metadata(1, metadata_for(1))
    fs, path, url = _metadata_path(file_storage, 1)
    fs.pipe_file(path, fs.cat_file(path)[:-10])
    with pytest.raises(CorruptCheckpointError) as caught:
        file_storage.read_metadata(location)
    message = str(caught.value)
    assert url in message and "truncated" in message and "cannot be used" in message


def test_metadata_shorter_than_its_header_is_truncated(file_storage):
    location = file_storage.write_metadata(1, metadata_for(1))
    fs, path, _ = _metadata_path(file_storage, 1)
    fs.pipe_file(path, fs.cat_file(path)[:5])
    with pytest.raises(CorruptCheckpointError, match="header"):
        file_storage.read_metadata(location)


def test_a_flipped_bit_in_metadata_is_detected(file_storage):
    location = file_storage.write_metadata(1, metadata_for(1))
    fs, path, url = _metadata_path(file_storage, 1)
    blob = bytearray(fs.cat_file(path))
    blob[-3] ^= 0x01
    fs.pipe_file(path, bytes(blob))
    with pytest.raises(CorruptCheckpointError, match="corrupted") as caught:
        file_storage.read_metadata(location)
    assert url in str(caught.value)


def test_a_foreign_file_is_not_metadata(file_storage):
    location = file_storage.write_metadata(1, metadata_for(1))
    fs, path, _ = _metadata_path(file_storage, 1)
    fs.pipe_file(path, b"PK\x03\x04 this is a zip file, not a checkpoint at all")
    with pytest.raises(CorruptCheckpointError, match="not a fluvial checkpoint metadata file"):
        file_storage.read_metadata(location)


def test_metadata_of_another_format_version_is_rejected():
    blob = bytearray(encode_metadata(metadata_for(1)))
    blob[8:10] = (99).to_bytes(2, "big")
    with pytest.raises(CorruptCheckpointError, match="format version 99"):
        decode_metadata(bytes(blob), "somewhere/_metadata")


def test_metadata_codec_round_trips():
    metadata = metadata_for(8, ByteStreamStateHandle("n", b"d", zlib.crc32(b"d")))
    assert decode_metadata(encode_metadata(metadata), "x") == metadata


# -- file systems: validation at creation --------------------------------------------------------------------------


def test_a_missing_parent_directory_fails_at_creation(tmp_path):
    target = tmp_path / "missing" / "checkpoints"
    with pytest.raises(ResourceError) as caught:
        create_checkpoint_storage(FileSystemCheckpointStorage(str(target)), JOB)
    message = str(caught.value)
    assert str(tmp_path / "missing") in message
    assert "create it or choose a writable directory" in message


def test_a_missing_parent_in_memory_fails_at_creation():
    url = f"memory://nowhere-{uuid.uuid4().hex}/checkpoints"
    with pytest.raises(ResourceError, match="does not exist"):
        create_checkpoint_storage(FileSystemCheckpointStorage(url), JOB)


def test_a_missing_directory_with_an_existing_parent_is_created(tmp_path):
    create_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path / "new")), JOB)
    assert (tmp_path / "new" / JOB / "shared").is_dir()


def test_a_file_in_place_of_the_directory_fails_at_creation(tmp_path):
    (tmp_path / "taken").write_text("not a directory")
    with pytest.raises(ResourceError, match="not a directory") as caught:
        create_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path / "taken")), JOB)
    assert str(tmp_path / "taken") in str(caught.value)


def test_a_file_as_parent_fails_at_creation(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ResourceError, match="does not exist or is not a directory"):
        create_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path / "file" / "checkpoints")), JOB)


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0,
    reason="needs a non-root user: as root, chmod cannot make a directory unwritable (root writes anywhere)",
)
def test_an_unwritable_directory_fails_at_creation(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(ResourceError, match="not writable"):
            create_checkpoint_storage(FileSystemCheckpointStorage(str(locked)), JOB)
    finally:
        locked.chmod(0o700)


def test_a_failing_probe_write_is_reported_as_unwritable(tmp_path, monkeypatch):
    description = FileSystemCheckpointStorage(str(tmp_path / "ro"))
    access = create_checkpoint_storage(description, JOB, validate=False)
    fs = access._files.fs

    def refuse(path, value, **kwargs):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(fs, "pipe_file", refuse)
    with pytest.raises(ResourceError) as caught:
        access.validate()
    message = str(caught.value)
    assert "not writable" in message and str(tmp_path / "ro") in message
    assert "create it or choose a writable directory" in message


def test_validation_can_be_skipped(tmp_path):
    create_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path / "later")), JOB, validate=False)
    assert not (tmp_path / "later").exists()


def test_an_unknown_protocol_fails_at_creation():
    with pytest.raises(ResourceError, match="nosuchfs://"):
        create_checkpoint_storage(FileSystemCheckpointStorage("nosuchfs://bucket/x"), JOB)


def test_an_unknown_description_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="JobManagerCheckpointStorage or FileSystemCheckpointStorage"):
        create_checkpoint_storage("file:///tmp/x", JOB)  # type: ignore[arg-type]


def test_the_access_classes_match_the_descriptions(tmp_path):
    assert isinstance(make_storage("file", tmp_path), FileSystemCheckpointStorageAccess)
    assert isinstance(make_storage("jobmanager", tmp_path), JobManagerCheckpointStorageAccess)


@pytest.mark.parametrize(
    "job_storage, threshold",
    [
        (FileSystemCheckpointStorage("file:///elsewhere", file_state_size_threshold=0), 0),
        (FileSystemCheckpointStorage("file:///elsewhere", file_state_size_threshold=4096), 4096),
        (JobManagerCheckpointStorage(), FileSystemCheckpointStorage.DEFAULT_FILE_STATE_THRESHOLD),
        (None, FileSystemCheckpointStorage.DEFAULT_FILE_STATE_THRESHOLD),
    ],
)
def test_savepoints_keep_the_file_state_threshold_of_the_jobs_file_storage(tmp_path, job_storage, threshold):
    """As Flink's file-system storage: a savepoint writes states below the job's threshold inline, the rest to
    files — in its own directory, whatever directory the job's checkpoints go to."""
    from fluvial.checkpoint.savepoint import savepoint_storage

    access = savepoint_storage(f"file://{tmp_path}/savepoints", JOB, job_storage)
    assert access.file_state_size_threshold == threshold
    small = access.write_state(1, "small", b"x" * 100)
    assert isinstance(small, FileStateHandle if threshold <= 100 else ByteStreamStateHandle)
    assert access.checkpoint_location(1).startswith(f"file://{tmp_path}/savepoints/")
