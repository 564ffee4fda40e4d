"""Where checkpoints go (PyFlink `pyflink.datastream.checkpoint_storage`): picklable descriptions only.

A description holds configuration and nothing live: it is set on the CheckpointConfig, travels inside the job
to the JobMaster and every TaskManager, and each of them builds its own runtime access object from it
(`fluvial.checkpoint.storage.create_checkpoint_storage(description, job_id)`). Nothing here touches a file.

- JobManagerCheckpointStorage: a task's state travels as bytes inside its acknowledgement and the JobMaster
  keeps it in memory. Each individual state is limited to `max_state_size` (5 MiB by default). Good for tests
  and small state; nothing survives the process unless `checkpoint_path` is given (then the checkpoint
  metadata, which embeds the state bytes, is also written there).
- FileSystemCheckpointStorage: state is written to files under `checkpoint_path` (any fsspec URL: a plain path,
  `file:///...`, `memory://...`, `s3://...` with its fsspec package installed); the acknowledgement carries
  only file handles. A state smaller than `file_state_size_threshold` is carried inline like the JobManager's,
  to avoid a swarm of tiny files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from fluvial.common.errors import InvalidJobError
from fluvial.common.file_paths import normalise_path

__all__ = ["CheckpointStorage", "CustomCheckpointStorage", "FileSystemCheckpointStorage", "JobManagerCheckpointStorage"]


class CheckpointStorage:
    """Base of the checkpoint storage descriptions (PyFlink's abstract `CheckpointStorage`)."""

    __slots__ = ()


def _check_path(path: object, what: str) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path.strip():
        raise InvalidJobError(f"{what} must be a non-empty path or URL (e.g. 'file:///var/checkpoints'), got {path!r}")
    return normalise_path(path)


@dataclass(frozen=True, slots=True, init=False)
class JobManagerCheckpointStorage(CheckpointStorage):
    """State travels as bytes to the JobMaster and lives in its memory.

    `max_state_size` bounds each individual state a task writes; a larger one fails the checkpoint with an
    error that names its size (use FileSystemCheckpointStorage for large state).
    """

    DEFAULT_MAX_STATE_SIZE: ClassVar[int] = 5 * 1024 * 1024

    checkpoint_path: str | None
    max_state_size: int

    def __init__(self, checkpoint_path: str | None = None, max_state_size: int | None = None) -> None:
        if checkpoint_path is not None:
            checkpoint_path = _check_path(checkpoint_path, "JobManagerCheckpointStorage checkpoint_path")
        if max_state_size is None:
            max_state_size = self.DEFAULT_MAX_STATE_SIZE
        if isinstance(max_state_size, bool) or not isinstance(max_state_size, int) or max_state_size <= 0:
            raise InvalidJobError(
                f"JobManagerCheckpointStorage max_state_size must be a positive number of bytes, got "
                f"{max_state_size!r}; leave it out for the default of {self.DEFAULT_MAX_STATE_SIZE} bytes"
            )
        object.__setattr__(self, "checkpoint_path", checkpoint_path)
        object.__setattr__(self, "max_state_size", max_state_size)

    def get_checkpoint_path(self) -> str | None:
        """Where the checkpoints' metadata is also written, or None (memory only)."""
        return self.checkpoint_path

    def get_max_state_size(self) -> int:
        """The largest state one operator subtask may have, in bytes (5 MiB by default)."""
        return self.max_state_size

    def get_savepoint_path(self) -> str | None:
        """The default savepoint directory, or None."""
        return None


@dataclass(frozen=True, slots=True, init=False)
class FileSystemCheckpointStorage(CheckpointStorage):
    """State is written to files under `checkpoint_path`; acknowledgements carry file handles.

    Layout: `<checkpoint_path>/<job-id>/chk-<n>/` (state files and `_metadata`) and
    `<checkpoint_path>/<job-id>/shared/` (files referenced by several incremental checkpoints).
    `file_state_size_threshold` (bytes, default 20 KiB, at most 1 MiB; 0 writes every state to a file): smaller
    states are carried inline in the acknowledgement and the metadata. `write_buffer_size` is accepted for
    PyFlink compatibility (fsspec buffers writes itself).
    """

    DEFAULT_FILE_STATE_THRESHOLD: ClassVar[int] = 20 * 1024
    MAX_FILE_STATE_THRESHOLD: ClassVar[int] = 1024 * 1024
    DEFAULT_WRITE_BUFFER_SIZE: ClassVar[int] = 4096

    checkpoint_path: str
    file_state_size_threshold: int
    write_buffer_size: int

    def __init__(
        self,
        checkpoint_path: str,
        file_state_size_threshold: int | None = None,
        write_buffer_size: int = -1,
    ) -> None:
        path = _check_path(checkpoint_path, "FileSystemCheckpointStorage checkpoint_path")
        if file_state_size_threshold is None or file_state_size_threshold == -1:
            file_state_size_threshold = self.DEFAULT_FILE_STATE_THRESHOLD
        if (
            isinstance(file_state_size_threshold, bool)
            or not isinstance(file_state_size_threshold, int)
            or not 0 <= file_state_size_threshold <= self.MAX_FILE_STATE_THRESHOLD
        ):
            raise InvalidJobError(
                f"FileSystemCheckpointStorage file_state_size_threshold must be between 0 and "
                f"{self.MAX_FILE_STATE_THRESHOLD} bytes (or -1 for the default), got {file_state_size_threshold!r}"
            )
        if write_buffer_size is None or write_buffer_size == -1:
            write_buffer_size = self.DEFAULT_WRITE_BUFFER_SIZE
        if isinstance(write_buffer_size, bool) or not isinstance(write_buffer_size, int) or write_buffer_size <= 0:
            raise InvalidJobError(
                f"FileSystemCheckpointStorage write_buffer_size must be a positive number of bytes (or -1 for "
                f"the default), got {write_buffer_size!r}"
            )
        object.__setattr__(self, "checkpoint_path", path)
        object.__setattr__(self, "file_state_size_threshold", file_state_size_threshold)
        object.__setattr__(self, "write_buffer_size", max(write_buffer_size, file_state_size_threshold))

    def get_checkpoint_path(self) -> str:
        """Where checkpoints are written: a path or an fsspec URL."""
        return self.checkpoint_path

    def get_savepoint_path(self) -> str | None:
        """The default savepoint directory, or None."""
        return None

    def get_min_file_size_threshold(self) -> int:
        """States smaller than this many bytes are carried inline in `_metadata`, not in files of their own."""
        return self.file_state_size_threshold

    def get_write_buffer_size(self) -> int:
        """The write buffer size of state files, in bytes."""
        return self.write_buffer_size


class CustomCheckpointStorage(CheckpointStorage):
    """PyFlink's wrapper of a Java checkpoint storage object. fluvial has no JVM, so there is nothing to wrap:
    constructing one is an error that names the storages there are."""

    __slots__ = ()

    def __init__(self, j_custom_checkpoint_storage: object = None) -> None:
        raise InvalidJobError(
            "CustomCheckpointStorage wraps a Java checkpoint storage, and fluvial runs no JVM; use "
            "JobManagerCheckpointStorage() or FileSystemCheckpointStorage(path) (any fsspec URL)"
        )
