"""Savepoints: checkpoints a user asks for, written self-contained into a directory of their choosing, kept
until they delete them, and restorable by another run of the job — at another parallelism too (keyed state
moves by key group; operator state is matched by operator uid).

Layout: `<target>/savepoint-<job id prefix>/chk-<n>/` holding the state files and `_metadata`; the returned path
is that directory, which `execution.savepoint.path` accepts.
"""

from __future__ import annotations

from typing import Any

from fluvial.common.errors import ResourceError


def savepoint_target(directory: str | None, configuration: Any = None) -> str:
    """The directory to write a savepoint into: the one given, else `state.savepoints.dir`."""
    if directory:
        return directory
    configured: str | None = configuration.get_string("state.savepoints.dir") if configuration is not None else None
    if configured:
        return configured
    raise ResourceError(
        "no savepoint directory: pass one (client.trigger_savepoint('/path/to/savepoints')) or set state.savepoints.dir"
    )


def savepoint_storage(directory: str, job_id: str, checkpoint_storage: Any = None) -> Any:
    """The storage access that writes one job's savepoints into `directory` (the same in every process: it is
    built from the job's description alone). With a FileSystemCheckpointStorage for the job's checkpoints, its
    `file_state_size_threshold` and write buffer size apply to savepoints too, as in Flink (states below the
    threshold are carried inline in `_metadata`); otherwise the defaults."""
    from fluvial.checkpoint.storage import create_checkpoint_storage
    from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage

    if isinstance(checkpoint_storage, FileSystemCheckpointStorage):
        description = FileSystemCheckpointStorage(
            directory, checkpoint_storage.file_state_size_threshold, checkpoint_storage.write_buffer_size
        )
    else:
        description = FileSystemCheckpointStorage(directory)
    return create_checkpoint_storage(description, f"savepoint-{job_id[:8]}")


def read_savepoint(path: str) -> Any:
    """The metadata of the savepoint (or retained checkpoint) at `path`; a clear error naming it if absent."""
    from fluvial.checkpoint.storage import CheckpointNotFoundError, read_checkpoint_metadata

    try:
        return read_checkpoint_metadata(path)
    except CheckpointNotFoundError as error:
        raise ResourceError(
            f"execution.savepoint.path {path!r} holds no savepoint ({error}); give the directory a savepoint "
            "was written to (the path trigger_savepoint returned)"
        ) from error
