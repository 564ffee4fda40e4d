"""The runtime side of checkpoint storage: where a task's state bytes go, and where a checkpoint's metadata goes.

Built from a picklable description (fluvial.datastream.checkpoint_storage) by `create_checkpoint_storage`, once
per process that needs it (the JobMaster, and each TaskManager for its tasks).

The protocol, per checkpoint n (DESIGN 2.3, seed 001):
1. A task's asynchronous snapshot part calls `write_state(n, name, data)` once per state blob, off the task
   thread and concurrently for different names, and acknowledges the returned handles.
2. When every task has acknowledged, the JobMaster calls `write_metadata(n, metadata)`: from then on the
   checkpoint exists and can be restored through the returned location.
3. When a newer checkpoint subsumes it, `discard_checkpoint(n)` removes its private files. Files of incremental
   checkpoints live in the shared directory instead (`write_shared`) and are removed by reference count
   (fluvial.checkpoint.store), never by `discard_checkpoint`.

Integrity: every handle and the `_metadata` file carry a CRC-32 (zlib) of their bytes. It detects accidental
damage (a truncated upload, a flipped bit, a file overwritten by something else); it is not a signature. Reading
a checkpoint unpickles it, so restore only checkpoints that this deployment wrote.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import posixpath
import re
import struct
import threading
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import fsspec.core

from fluvial.common.errors import ConfigurationError, FluvialError, ResourceError
from fluvial.datastream.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)

logger = logging.getLogger(__name__)

CHECKSUM_ALGORITHM = "crc32"
METADATA_FILE_NAME = "_metadata"
SHARED_DIR_NAME = "shared"
JOBMANAGER_SCHEME = "jobmanager://"

_METADATA_MAGIC = b"FLUVCKPT"
_METADATA_VERSION = 1
_METADATA_HEADER = struct.Struct(">8sHQI")  # magic, format version, payload length, crc32 of the payload
_LOCAL_PROTOCOLS = frozenset({"file", "local"})
_DIRECTORY_PROTOCOLS = _LOCAL_PROTOCOLS | {"memory"}
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]")


# -- errors -------------------------------------------------------------------------------------------------------


class CorruptCheckpointError(FluvialError):
    """Stored checkpoint data does not match its checksum or size: the checkpoint cannot be used."""


class CheckpointNotFoundError(FluvialError):
    """No completed checkpoint exists at the given location."""


class StateTooLargeError(FluvialError):
    """A state exceeds what the configured checkpoint storage accepts."""


def checksum(data: bytes | bytearray | memoryview) -> int:
    """The checksum stored in handles and metadata headers (CRC-32, unsigned)."""
    return zlib.crc32(data) & 0xFFFFFFFF


# -- handles and metadata -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ByteStreamStateHandle:
    """State carried inline: its bytes travel in the acknowledgement and live in the checkpoint metadata."""

    name: str
    data: bytes = field(repr=False)
    checksum: int

    @property
    def size(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"ByteStreamStateHandle(name={self.name!r}, size={len(self.data)}, checksum={self.checksum:08x})"


@dataclass(frozen=True, slots=True)
class FileStateHandle:
    """State in a file. `path` is a full fsspec URL (`file:///...`, `memory:///...`), readable from any process
    that has the same file system, so restoring never needs the storage object that wrote it."""

    path: str
    size: int
    checksum: int


StateHandle = ByteStreamStateHandle | FileStateHandle


@dataclass(frozen=True, slots=True)
class SubtaskState:
    """One operator's state in one subtask at one checkpoint.

    `keyed` and `operator`: handles of keyed and operator state blobs, private to this checkpoint. `shared`:
    handles written with `write_shared` (incremental RocksDB files) that later checkpoints may reference too;
    they are reference-counted by the CompletedCheckpointStore. `raw`: small picklable values kept directly in
    the metadata (offsets, counters).
    """

    keyed: list[StateHandle] = field(default_factory=list)
    operator: list[StateHandle] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    shared: list[StateHandle] = field(default_factory=list)

    def handles(self) -> Iterator[StateHandle]:
        yield from self.keyed
        yield from self.operator
        yield from self.shared


@dataclass(frozen=True, slots=True)
class OperatorState:
    """One operator's state over all its subtasks. `max_parallelism` fixes its key groups for restore."""

    operator_id: str
    parallelism: int
    max_parallelism: int
    subtask_states: dict[int, SubtaskState] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """Everything needed to restore a job from one checkpoint; written last, so its presence means complete."""

    checkpoint_id: int
    timestamp: int
    job_id: str
    is_savepoint: bool = False
    operator_states: dict[str, OperatorState] = field(default_factory=dict)

    def handles(self) -> Iterator[StateHandle]:
        for operator in self.operator_states.values():
            for subtask in operator.subtask_states.values():
                yield from subtask.handles()

    def shared_handles(self) -> set[StateHandle]:
        return {h for op in self.operator_states.values() for s in op.subtask_states.values() for h in s.shared}


def encode_metadata(metadata: CheckpointMetadata) -> bytes:
    """Header (magic, version, payload length, crc32) + the metadata pickled with protocol 5."""
    payload = pickle.dumps(metadata, protocol=5)
    return _METADATA_HEADER.pack(_METADATA_MAGIC, _METADATA_VERSION, len(payload), checksum(payload)) + payload


def decode_metadata(blob: bytes, where: str) -> CheckpointMetadata:
    """The metadata in `blob`, read from `where`; CorruptCheckpointError if it is damaged in any way."""

    def corrupt(problem: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"checkpoint metadata {where} {problem}; the checkpoint cannot be used — restore from an older "
            "checkpoint or a savepoint"
        )

    if len(blob) < _METADATA_HEADER.size:
        raise corrupt(f"is truncated: {len(blob)} bytes, shorter than its {_METADATA_HEADER.size}-byte header")
    magic, version, length, expected = _METADATA_HEADER.unpack_from(blob)
    if magic != _METADATA_MAGIC:
        raise corrupt("is not a fluvial checkpoint metadata file (wrong magic bytes)")
    if version != _METADATA_VERSION:
        raise corrupt(f"has format version {version}, which this fluvial does not read (it reads {_METADATA_VERSION})")
    payload = memoryview(blob)[_METADATA_HEADER.size:]
    if len(payload) != length:
        raise corrupt(f"is truncated: the header announces {length} bytes of payload, found {len(payload)}")
    if checksum(payload) != expected:
        raise corrupt(f"is corrupted: {CHECKSUM_ALGORITHM} {checksum(payload):08x} does not match {expected:08x}")
    try:
        metadata = pickle.loads(payload)
    except Exception as error:  # any unpickling failure means the same: unusable
        raise corrupt(f"cannot be unpickled ({type(error).__name__}: {error})") from error
    if not isinstance(metadata, CheckpointMetadata):
        raise corrupt(f"holds a {type(metadata).__name__}, not CheckpointMetadata")
    return metadata


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
    """The metadata of a checkpoint on a file system: `location` is its `chk-<n>` directory or `_metadata` file."""
    try:
        fs, path = fsspec.core.url_to_fs(location)
    except (ValueError, ImportError) as error:
        raise CheckpointNotFoundError(f"cannot open checkpoint location {location!r}: {error}") from None
    if posixpath.basename(path.rstrip("/")) != METADATA_FILE_NAME:
        path = posixpath.join(path.rstrip("/"), METADATA_FILE_NAME)
    try:
        blob = fs.cat_file(path)
    except FileNotFoundError:
        raise CheckpointNotFoundError(
            f"no checkpoint metadata at {fs.unstrip_protocol(path)}: the checkpoint was never completed or has been "
            "discarded; pass the chk-<n> directory (or its _metadata file) of a completed checkpoint"
        ) from None
    return decode_metadata(blob, fs.unstrip_protocol(path))


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
            self.fs, base = fsspec.core.url_to_fs(base_url)
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
        self.is_local = any(p in _LOCAL_PROTOCOLS for p in protocols)
        self.has_directories = any(p in _DIRECTORY_PROTOCOLS for p in protocols)
        self._created: set[str] = set()
        self._lock = threading.Lock()

    def url(self, path: str) -> str:
        return self.fs.unstrip_protocol(path)

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
            self.fs.makedirs(path, exist_ok=True)
            self._created.add(path)

    def write_file(self, path: str, data: bytes) -> None:
        with self.fs.open(path, "wb") as out:
            out.write(data)

    def write_metadata(self, checkpoint_id: int, blob: bytes) -> str:
        """Write `_metadata` so that a reader sees all of it or none: a temp file renamed into place on local
        disks; object stores and memory:// publish a file in one step anyway. Never overwrites."""
        directory = self.checkpoint_dir(checkpoint_id)
        self.ensure_dir(directory)
        final = posixpath.join(directory, METADATA_FILE_NAME)
        if self.fs.exists(final):
            raise ResourceError(
                f"checkpoint metadata {self.url(final)} already exists and a checkpoint is never overwritten; "
                "another job with the same id writes here — choose a fresh checkpoint directory"
            )
        if not self.is_local:
            self.fs.pipe_file(final, blob)
            return self.url(directory)
        temp = posixpath.join(directory, f".{METADATA_FILE_NAME}.inprogress-{uuid.uuid4().hex}")
        with open(temp, "wb") as out:
            out.write(blob)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, final)
        return self.url(directory)

    def remove(self, path: str, recursive: bool = False) -> None:
        try:
            self.fs.rm(path, recursive=recursive)
        except FileNotFoundError:
            pass
        with self._lock:
            self._created.discard(path)


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
        blob = encode_metadata(metadata)
        if self._files is not None:
            return self._files.write_metadata(checkpoint_id, blob)
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
        job_id, _, chk = location[len(JOBMANAGER_SCHEME):].partition("/chk-")
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
            self._files.remove(self._files.checkpoint_dir(checkpoint_id), recursive=True)

    def shared_state_dir(self) -> str | None:
        return None

    def write_shared(self, name: str, data: bytes) -> StateHandle:
        _file_name(name)
        return self._inline("the shared state", name, data)

    def discard_shared(self, handle: StateHandle) -> None:
        """Inline handles own no storage: nothing to remove."""

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
        return self._files.write_metadata(checkpoint_id, encode_metadata(metadata))

    def read_metadata(self, location: str) -> CheckpointMetadata:
        return read_checkpoint_metadata(location)

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        self._files.remove(self._files.checkpoint_dir(checkpoint_id), recursive=True)

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
            fs, path = fsspec.core.url_to_fs(handle.path)
            try:
                fs.rm_file(path)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"FileSystemCheckpointStorageAccess(job_dir={self._files.url(self._files.job_dir)!r})"


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
