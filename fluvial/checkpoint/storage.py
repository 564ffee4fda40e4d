"""The runtime side of checkpoint storage: where a task's state bytes go, and where a checkpoint's metadata goes.

Built from a picklable description (fluvial.datastream.checkpoint_storage) by `create_checkpoint_storage`, once
per process that needs it (the JobMaster, and each TaskManager for its tasks).

The protocol, per checkpoint n (DESIGN 2.3, seed 001):
1. A task's asynchronous snapshot part calls `write_state(n, name, data)` once per state blob, off the task
   thread and concurrently for different names, and acknowledges the returned handles.
2. When every task has acknowledged, the JobMaster calls `write_metadata(n, metadata)`: from then on the
   checkpoint exists and can be restored through the returned location.
3. When a newer checkpoint subsumes it, `discard_checkpoint(n)` removes its private files: `_metadata` first,
   so a discard interrupted half-way never leaves a checkpoint that looks complete and is not. Files of
   incremental checkpoints live in the shared directory instead (`write_shared`) and are removed by reference
   count (fluvial.checkpoint.store), never by `discard_checkpoint`.

Integrity: every handle and the `_metadata` file carry a CRC-32 (zlib) of their bytes. It detects accidental
damage (a truncated upload, a flipped bit, a file overwritten by something else); it is not a signature.

Trust (docs/operations/security.md): `_metadata` is JSON and parsing it runs no code (fluvial.checkpoint.
metadata_format), but the state it points to is pickled user values. On local disks every directory this
module creates is 0700 and every file 0600, and a restore refuses a checkpoint that another user could have
written (fluvial.common.private_files). Relocation: `_metadata` names the files of its own directory relatively,
so a savepoint or a `chk-<n>` directory can be moved and restored from its new place.
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import re
import threading
import uuid
from typing import Protocol

import fsspec.core

from fluvial.checkpoint.metadata import (
    CHECKSUM_ALGORITHM,
    ByteStreamStateHandle,
    CheckpointMetadata,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    FileStateHandle,
    OperatorState,
    StateHandle,
    StateTooLargeError,
    SubtaskState,
    checksum,
)
from fluvial.checkpoint.metadata_format import METADATA_FILE_NAME, decode_metadata, encode_metadata
from fluvial.common.errors import ConfigurationError, ResourceError
from fluvial.common.file_paths import local_path
from fluvial.common.private_files import check_trusted, fsync_directory, make_private_dirs, write_private_file
from fluvial.datastream.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)

__all__ = [  # the handles and metadata live in fluvial.checkpoint.metadata; importing them from here works too
    "CHECKSUM_ALGORITHM",
    "ByteStreamStateHandle",
    "CheckpointMetadata",
    "CheckpointNotFoundError",
    "CheckpointStorageAccess",
    "CorruptCheckpointError",
    "FileStateHandle",
    "FileSystemCheckpointStorageAccess",
    "JobManagerCheckpointStorageAccess",
    "METADATA_FILE_NAME",
    "OperatorState",
    "StateHandle",
    "StateTooLargeError",
    "SubtaskState",
    "checksum",
    "create_checkpoint_storage",
    "decode_metadata",
    "discard_checkpoint_at",
    "encode_metadata",
    "read_checkpoint_metadata",
    "read_state_handle",
]

logger = logging.getLogger(__name__)

SHARED_DIR_NAME = "shared"
JOBMANAGER_SCHEME = "jobmanager://"

_LOCAL_PROTOCOLS = frozenset({"file", "local"})
_DIRECTORY_PROTOCOLS = _LOCAL_PROTOCOLS | {"memory"}
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def _verify(data: bytes, size: int, expected: int, where: str) -> bytes:
    fix = "the checkpoint cannot be used — restore from an older checkpoint or a savepoint"
    if len(data) != size:
        raise CorruptCheckpointError(
            f"{where} is truncated or altered: expected {size} bytes, found {len(data)}; {fix}"
        )
    actual = checksum(data)
    if actual != expected:
        raise CorruptCheckpointError(
            f"{where} is corrupted: {CHECKSUM_ALGORITHM} {actual:08x} does not match {expected:08x}; {fix}"
        )
    return data


def read_state_handle(handle: StateHandle) -> bytes:
    """The bytes behind any handle, verified (handles are self-describing, so no storage object is needed)."""
    if isinstance(handle, ByteStreamStateHandle):
        return _verify(handle.data, len(handle.data), handle.checksum, f"inline checkpoint state '{handle.name}'")
    if isinstance(handle, FileStateHandle):
        fs, path = fsspec.core.url_to_fs(handle.path)
        try:
            data = fs.cat_file(path)
        except FileNotFoundError:
            raise CorruptCheckpointError(
                f"checkpoint state file {handle.path} is missing; the checkpoint cannot be used — restore from an "
                "older checkpoint or a savepoint"
            ) from None
        return _verify(data, handle.size, handle.checksum, f"checkpoint state file {handle.path}")
    raise TypeError(f"not a state handle: {type(handle).__name__}")


def read_checkpoint_metadata(location: str) -> CheckpointMetadata:
    """The metadata of a checkpoint on a file system: `location` is its `chk-<n>` directory or `_metadata` file.

    On a local disk the checkpoint must be trusted: `_metadata`, every local state file it names, and each
    directory above them writable by this user (or root) only — else UntrustedLocationError says why."""
    try:
        fs, path = fsspec.core.url_to_fs(local_path(location))
    except (ValueError, ImportError) as error:
        raise CheckpointNotFoundError(f"cannot open checkpoint location {location!r}: {error}") from None
    if posixpath.basename(path.rstrip("/")) != METADATA_FILE_NAME:
        path = posixpath.join(path.rstrip("/"), METADATA_FILE_NAME)
    where = fs.unstrip_protocol(path)
    local = _is_local(fs)
    if local:
        check_trusted(path, f"checkpoint metadata {where}")
    try:
        blob = fs.cat_file(path)
    except FileNotFoundError:
        raise CheckpointNotFoundError(
            f"no checkpoint metadata at {where}: the checkpoint was never completed or has been "
            "discarded; pass the chk-<n> directory (or its _metadata file) of a completed checkpoint"
        ) from None
    metadata = decode_metadata(blob, where)
    if local:
        _check_state_files_trusted(metadata, where)
    return metadata


def _check_state_files_trusted(metadata: CheckpointMetadata, where: str) -> None:
    """Every local file the metadata names is unpickled on restore: the same rule as for `_metadata`."""
    checked: set[str] = set()
    for handle in metadata.handles():
        if not isinstance(handle, FileStateHandle) or handle.path in checked:
            continue
        checked.add(handle.path)
        fs, path = fsspec.core.url_to_fs(handle.path)
        if _is_local(fs):
            check_trusted(path, f"state file {handle.path} of the checkpoint {where}")


def _is_local(fs: fsspec.AbstractFileSystem) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return any(p in _LOCAL_PROTOCOLS for p in protocols)


def _file_name(name: str) -> str:
    """A file name for a state name. Names are free-form (operator uids may hold spaces or slashes); a name that
    needs changing gets a digest of the original appended, so two different names never share a file."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a checkpoint state name must be a non-empty string, got {name!r}")
    safe = _UNSAFE_NAME_CHARS.sub("_", name)[:120]
    if safe[0] in "._":
        safe = "s" + safe
    if safe != name:
        safe += "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return safe


# -- the interface ------------------------------------------------------------------------------------------------


class CheckpointStorageAccess(Protocol):
    """A job's view of its checkpoint storage. Thread-safe: tasks write state concurrently (different names)."""

    job_id: str

    def write_state(self, checkpoint_id: int, name: str, data: bytes) -> StateHandle:
        """Store one state blob of checkpoint `checkpoint_id`. Called off the task thread; `name` is unique
        within the checkpoint. Raises StateTooLargeError when the storage cannot take it."""
        ...

    def read_state(self, handle: StateHandle) -> bytes:
        """The verified bytes; CorruptCheckpointError (naming the handle) if they do not match the handle."""
        ...

    def write_metadata(self, checkpoint_id: int, metadata: CheckpointMetadata) -> str:
        """Complete the checkpoint; returns its location (what `read_metadata` and restores take)."""
        ...

    def read_metadata(self, location: str) -> CheckpointMetadata: ...

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        """Remove the checkpoint's metadata and private state; never shared files. Missing is fine."""
        ...

    def checkpoint_location(self, checkpoint_id: int) -> str: ...

    def shared_state_dir(self) -> str | None:
        """Where `write_shared` puts files (`<dir>/<job-id>/shared`), or None when the storage keeps no files."""
        ...

    def write_shared(self, name: str, data: bytes) -> StateHandle:
        """Store a blob several checkpoints may reference. Each call gets a new handle (never overwrites)."""
        ...

    def discard_shared(self, handle: StateHandle) -> None: ...


# -- files --------------------------------------------------------------------------------------------------------


class _FileLayout:
    """`<base>/<job-id>/chk-<n>/` and `<base>/<job-id>/shared/` on an fsspec file system."""

    def __init__(self, base_url: str, job_id: str) -> None:
        try:
            self.fs, base = fsspec.core.url_to_fs(local_path(base_url))
        except (ValueError, ImportError) as error:
            raise ResourceError(
                f"checkpoint directory {base_url!r} cannot be opened ({error}); use a local path, file:///... or "
                "a URL whose fsspec file system is installed"
            ) from None
        self.base_url = base_url
        self.base = base.rstrip("/") or "/"
        self.job_dir = posixpath.join(self.base, job_id)
        self.shared_dir = posixpath.join(self.job_dir, SHARED_DIR_NAME)
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.is_local = _is_local(self.fs)
        self.has_directories = any(p in _DIRECTORY_PROTOCOLS for p in protocols)
        self._created: set[str] = set()
        self._lock = threading.Lock()

    def url(self, path: str) -> str:
        return str(self.fs.unstrip_protocol(path))

    def checkpoint_dir(self, checkpoint_id: int) -> str:
        return posixpath.join(self.job_dir, f"chk-{checkpoint_id}")

    def validate(self) -> None:
        """Fail now, not at the first checkpoint, if the directory cannot hold checkpoints."""
        fix = "create it or choose a writable directory (state.checkpoints.dir / set_checkpoint_storage_dir)"
        where = self.url(self.base)
        if self.has_directories:
            if self.fs.exists(self.base):
                if not self.fs.isdir(self.base):
                    raise ResourceError(f"checkpoint directory {where} exists but is not a directory; {fix}")
            else:
                parent = posixpath.dirname(self.base)
                if not self.fs.isdir(parent):
                    raise ResourceError(
                        f"checkpoint directory {where} cannot be created: its parent {self.url(parent)} does not "
                        f"exist or is not a directory; {fix}"
                    )
        probe = posixpath.join(self.job_dir, f".probe-{uuid.uuid4().hex}")
        try:
            self.ensure_dir(self.shared_dir)
            self.fs.pipe_file(probe, b"")
            self.fs.rm_file(probe)
        except OSError as error:
            raise ResourceError(f"checkpoint directory {where} is not writable ({error}); {fix}") from None

    def ensure_dir(self, path: str) -> None:
        with self._lock:
            if path in self._created:
                return
            if self.is_local:
                make_private_dirs(path)
            else:
                self.fs.makedirs(path, exist_ok=True)
            self._created.add(path)

    def write_file(self, path: str, data: bytes) -> None:
        """A new file (0600 on local disks, from its first byte)."""
        if self.is_local:
            write_private_file(path, data)
            return
        with self.fs.open(path, "wb") as out:
            out.write(data)

    def write_metadata(self, checkpoint_id: int, metadata: CheckpointMetadata) -> str:
        """Write `_metadata` so that a reader sees all of it or none: a temp file renamed into place on local
        disks; object stores and memory:// publish a file in one step anyway. Never overwrites. Called after
        every state file of the checkpoint is written, so its presence means the checkpoint is complete."""
        directory = self.checkpoint_dir(checkpoint_id)
        self.ensure_dir(directory)
        final = posixpath.join(directory, METADATA_FILE_NAME)
        blob = encode_metadata(metadata, self.url(directory))
        if self.fs.exists(final):
            raise ResourceError(
                f"checkpoint metadata {self.url(final)} already exists and a checkpoint is never overwritten; "
                "another job with the same id writes here — choose a fresh checkpoint directory"
            )
        if not self.is_local:
            self.fs.pipe_file(final, blob)
            return self.url(directory)
        temp = posixpath.join(directory, f".{METADATA_FILE_NAME}.inprogress-{uuid.uuid4().hex}")
        write_private_file(temp, blob, fsync=True)
        os.replace(temp, final)
        fsync_directory(directory)
        return self.url(directory)

    def remove_checkpoint(self, checkpoint_id: int) -> None:
        directory = self.checkpoint_dir(checkpoint_id)
        _remove_checkpoint_dir(self.fs, directory, self.is_local)
        with self._lock:
            self._created.discard(directory)


def _remove_checkpoint_dir(fs: fsspec.AbstractFileSystem, directory: str, is_local: bool) -> None:
    """Delete `_metadata` first (durably, on local disks), then the rest: a discard interrupted anywhere
    leaves either a complete checkpoint or one that no longer claims to be complete. Missing is fine."""
    try:
        fs.rm_file(posixpath.join(directory, METADATA_FILE_NAME))
        if is_local:
            fsync_directory(directory)
    except FileNotFoundError:
        pass
    try:
        fs.rm(directory, recursive=True)
    except FileNotFoundError:
        pass


def discard_checkpoint_at(location: str) -> None:
    """Remove the checkpoint whose directory is `location` (a URL), wherever it lives: how a job discards a
    checkpoint of another run that it claimed (RecoveryClaimMode.CLAIM). Shared files are left to the store's
    reference counts."""
    if location.startswith(JOBMANAGER_SCHEME):
        return  # lives in the memory of the process that took it
    fs, path = fsspec.core.url_to_fs(local_path(location))
    if posixpath.basename(path.rstrip("/")) == METADATA_FILE_NAME:
        path = posixpath.dirname(path.rstrip("/"))
    _remove_checkpoint_dir(fs, path, _is_local(fs))


# -- JobManager memory --------------------------------------------------------------------------------------------


class JobManagerCheckpointStorageAccess:
    """State travels inline (ByteStreamStateHandle); metadata is kept in a dict in this process, and also written
    under `checkpoint_path` when the description has one (so the checkpoint outlives the process)."""

    def __init__(self, description: JobManagerCheckpointStorage, job_id: str) -> None:
        self.job_id = job_id
        self.max_state_size = description.max_state_size
        self._files = _FileLayout(description.checkpoint_path, job_id) if description.checkpoint_path else None
        self._metadata: dict[int, bytes] = {}
        self._lock = threading.Lock()

    def validate(self) -> None:
        if self._files is not None:
            self._files.validate()

    def _inline(self, where: str, name: str, data: bytes) -> ByteStreamStateHandle:
        if len(data) > self.max_state_size:
            raise StateTooLargeError(
                f"{where} '{name}' is {len(data)} bytes, more than JobManagerCheckpointStorage's max_state_size of "
                f"{self.max_state_size} bytes; use FileSystemCheckpointStorage "
                "(checkpoint_config.set_checkpoint_storage_dir('file:///...')) or raise max_state_size "
                "(JobManagerCheckpointStorage(max_state_size=...))"
            )
        data = bytes(data)
        return ByteStreamStateHandle(name, data, checksum(data))

    def write_state(self, checkpoint_id: int, name: str, data: bytes) -> StateHandle:
        _file_name(name)
        return self._inline(f"the state of checkpoint {checkpoint_id}", name, data)

    def read_state(self, handle: StateHandle) -> bytes:
        return read_state_handle(handle)

    def checkpoint_location(self, checkpoint_id: int) -> str:
        if self._files is not None:
            return self._files.url(self._files.checkpoint_dir(checkpoint_id))
        return f"{JOBMANAGER_SCHEME}{self.job_id}/chk-{checkpoint_id}"

    def write_metadata(self, checkpoint_id: int, metadata: CheckpointMetadata) -> str:
        _check_metadata_id(checkpoint_id, metadata)
        if self._files is not None:
            return self._files.write_metadata(checkpoint_id, metadata)
        blob = encode_metadata(metadata)
        with self._lock:
            if checkpoint_id in self._metadata:
                raise ResourceError(
                    f"checkpoint {checkpoint_id} of job {self.job_id} is already complete and is never overwritten"
                )
            self._metadata[checkpoint_id] = blob
        return self.checkpoint_location(checkpoint_id)

    def read_metadata(self, location: str) -> CheckpointMetadata:
        if not location.startswith(JOBMANAGER_SCHEME):
            return read_checkpoint_metadata(location)
        job_id, _, chk = location[len(JOBMANAGER_SCHEME) :].partition("/chk-")
        with self._lock:
            blob = self._metadata.get(int(chk)) if job_id == self.job_id and chk.isdigit() else None
        if blob is None:
            raise CheckpointNotFoundError(
                f"no checkpoint at {location}: JobManager memory holds only this job's retained checkpoints "
                f"({sorted(self._metadata)}); use FileSystemCheckpointStorage to restore across processes"
            )
        return decode_metadata(blob, location)

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        with self._lock:
            self._metadata.pop(checkpoint_id, None)
        if self._files is not None:
            self._files.remove_checkpoint(checkpoint_id)

    def shared_state_dir(self) -> str | None:
        return None

    def write_shared(self, name: str, data: bytes) -> StateHandle:
        _file_name(name)
        return self._inline("the shared state", name, data)

    def discard_shared(self, handle: StateHandle) -> None:
        """Inline handles own no storage; a file (a changelog segment under its own base path) is removed."""
        if isinstance(handle, FileStateHandle):
            _remove_file(handle)

    def __repr__(self) -> str:
        return f"JobManagerCheckpointStorageAccess(job_id={self.job_id!r}, max_state_size={self.max_state_size})"


# -- file systems -------------------------------------------------------------------------------------------------


class FileSystemCheckpointStorageAccess:
    """State in files under `<dir>/<job-id>/chk-<n>/`, shared state under `<dir>/<job-id>/shared/`; states
    smaller than `file_state_size_threshold` stay inline."""

    def __init__(self, description: FileSystemCheckpointStorage, job_id: str) -> None:
        self.job_id = job_id
        self.file_state_size_threshold = description.file_state_size_threshold
        self._files = _FileLayout(description.checkpoint_path, job_id)

    def validate(self) -> None:
        """ResourceError naming the path if the directory's parent is missing or it is not writable."""
        self._files.validate()

    def write_state(self, checkpoint_id: int, name: str, data: bytes) -> StateHandle:
        file_name = _file_name(name)
        if len(data) < self.file_state_size_threshold:
            data = bytes(data)
            return ByteStreamStateHandle(name, data, checksum(data))
        directory = self._files.checkpoint_dir(checkpoint_id)
        self._files.ensure_dir(directory)
        path = posixpath.join(directory, file_name)
        self._files.write_file(path, data)
        return FileStateHandle(self._files.url(path), len(data), checksum(data))

    def read_state(self, handle: StateHandle) -> bytes:
        return read_state_handle(handle)

    def checkpoint_location(self, checkpoint_id: int) -> str:
        return self._files.url(self._files.checkpoint_dir(checkpoint_id))

    def write_metadata(self, checkpoint_id: int, metadata: CheckpointMetadata) -> str:
        _check_metadata_id(checkpoint_id, metadata)
        return self._files.write_metadata(checkpoint_id, metadata)

    def read_metadata(self, location: str) -> CheckpointMetadata:
        return read_checkpoint_metadata(location)

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        self._files.remove_checkpoint(checkpoint_id)

    def shared_state_dir(self) -> str:
        return self._files.url(self._files.shared_dir)

    def write_shared(self, name: str, data: bytes) -> StateHandle:
        file_name = _file_name(name)
        if len(data) < self.file_state_size_threshold:
            data = bytes(data)
            return ByteStreamStateHandle(name, data, checksum(data))
        self._files.ensure_dir(self._files.shared_dir)
        path = posixpath.join(self._files.shared_dir, f"{uuid.uuid4().hex[:16]}-{file_name}")
        self._files.write_file(path, data)
        return FileStateHandle(self._files.url(path), len(data), checksum(data))

    def discard_shared(self, handle: StateHandle) -> None:
        if isinstance(handle, FileStateHandle):
            _remove_file(handle)

    def __repr__(self) -> str:
        return f"FileSystemCheckpointStorageAccess(job_dir={self._files.url(self._files.job_dir)!r})"


def _remove_file(handle: FileStateHandle) -> None:
    fs, path = fsspec.core.url_to_fs(handle.path)
    try:
        fs.rm_file(path)
    except FileNotFoundError:
        pass


def _check_metadata_id(checkpoint_id: int, metadata: CheckpointMetadata) -> None:
    if metadata.checkpoint_id != checkpoint_id:
        raise ValueError(
            f"metadata of checkpoint {metadata.checkpoint_id} cannot be written as checkpoint {checkpoint_id}"
        )


def create_checkpoint_storage(
    description: CheckpointStorage, job_id: str, *, validate: bool = True
) -> JobManagerCheckpointStorageAccess | FileSystemCheckpointStorageAccess:
    """The access object for `description`. With `validate` (the default) a file directory is checked now:
    a missing parent or an unwritable directory raises ResourceError naming the path."""
    if not isinstance(job_id, str) or not job_id or "/" in job_id:
        raise ValueError(f"a job id must be a non-empty string without '/', got {job_id!r}")
    access: JobManagerCheckpointStorageAccess | FileSystemCheckpointStorageAccess
    if isinstance(description, FileSystemCheckpointStorage):
        access = FileSystemCheckpointStorageAccess(description, job_id)
    elif isinstance(description, JobManagerCheckpointStorage):
        access = JobManagerCheckpointStorageAccess(description, job_id)
    else:
        raise ConfigurationError(
            f"unknown checkpoint storage {description!r}: use JobManagerCheckpointStorage or "
            "FileSystemCheckpointStorage from fluvial.datastream.checkpoint_storage"
        )
    if validate:
        access.validate()
    return access
