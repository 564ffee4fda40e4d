"""Where the changelog state backend stores its log segments (Flink's StateChangelogStorage, `state.changelog.storage`).

- `memory` (Flink's InMemoryStateChangelogStorage): a segment travels inline in the checkpoint, like any small
  state (it is kept where the checkpoint's metadata is kept).
- `filesystem` (Flink's FsStateChangelogStorage): a segment is a file under `state.changelog.dstl.dfs.base-path`
  (a local path or any fsspec URL), `<base>/<job-id>/<operator>-<subtask>-<attempt>-changelog-<n>-<random>`, written
  by the checkpoint I/O thread with up to `upload.max-attempts` attempts, `upload.next-attempt-delay` apart. The
  checkpoint store removes a file once no retained checkpoint refers to it.
"""

from __future__ import annotations

import logging
import posixpath
import time
import uuid

import fsspec

from fluvial.checkpoint.metadata import ByteStreamStateHandle, FileStateHandle, StateHandle, checksum
from fluvial.common.errors import ResourceError
from fluvial.common.file_paths import local_path
from fluvial.datastream.state_backend import ChangelogSettings

logger = logging.getLogger(__name__)


class InMemoryStateChangelogStorage:
    """Segments inline in the checkpoint."""

    def upload(self, name: str, data: bytes) -> StateHandle:
        data = bytes(data)
        return ByteStreamStateHandle(name, data, checksum(data))

    def describe(self) -> str:
        return "memory"


class FsStateChangelogStorage:
    """Segments as files under `<base_path>/<job_id>/`."""

    def __init__(self, base_path: str, job_id: str, max_attempts: int = 3, retry_delay_ms: int = 500) -> None:
        try:
            self._fs, base = fsspec.core.url_to_fs(local_path(base_path))
        except (ValueError, ImportError) as error:
            raise ResourceError(
                f"state.changelog.dstl.dfs.base-path {base_path!r} cannot be opened ({error}); use a local path, "
                "file:///... or a URL whose fsspec file system is installed"
            ) from None
        self._directory = posixpath.join(base.rstrip("/") or "/", job_id)
        self._max_attempts = max_attempts
        self._retry_delay = retry_delay_ms / 1000
        self._made = False

    def upload(self, name: str, data: bytes) -> StateHandle:
        path = posixpath.join(self._directory, f"{name}-{uuid.uuid4().hex[:12]}")
        for attempt in range(1, self._max_attempts + 1):
            try:
                if not self._made:
                    self._fs.makedirs(self._directory, exist_ok=True)
                    self._made = True
                self._fs.pipe_file(path, bytes(data))
                break
            except OSError as error:
                if attempt == self._max_attempts:
                    raise ResourceError(
                        f"changelog file {path} could not be written in {attempt} attempt(s): {error}; check "
                        "state.changelog.dstl.dfs.base-path is writable"
                    ) from error
                logger.warning("writing changelog file %s failed (attempt %d): %s; retrying", path, attempt, error)
                time.sleep(self._retry_delay)
        return FileStateHandle(str(self._fs.unstrip_protocol(path)), len(data), checksum(data))

    def describe(self) -> str:
        return str(self._fs.unstrip_protocol(self._directory))


def create_changelog_storage(
    settings: ChangelogSettings, job_id: str
) -> InMemoryStateChangelogStorage | FsStateChangelogStorage:
    """The storage `settings.storage` names."""
    if settings.storage == "filesystem":
        assert settings.base_path is not None  # ChangelogSettings.of refuses filesystem without one
        return FsStateChangelogStorage(
            settings.base_path, job_id, settings.upload_max_attempts, settings.upload_retry_delay_ms
        )
    return InMemoryStateChangelogStorage()
