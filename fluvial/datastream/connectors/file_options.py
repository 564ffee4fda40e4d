"""Options of the file connectors that PyFlink programs name (`pyflink.datastream.connectors.file_system`):
how files become splits, how splits reach readers, and file compaction.

- Files are read whole, one split per file (Flink's non-splitting enumerator). Splitting files into blocks
  is refused: a block split only helps a reader that can start mid-file, and fluvial's formats cannot.
- Splits are assigned statically, split i to subtask i % parallelism. Flink's locality-aware assigner
  prefers the host storing a split; on one machine every split is local, so it is the same assignment.
- Compaction of small part files is not built yet: asking for it is refused.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fluvial.common.errors import InvalidJobError, NotYetSupportedError

__all__ = ["FileCompactStrategy", "FileCompactor", "FileEnumeratorProvider", "FileSplitAssignerProvider"]


class FileEnumeratorProvider(enum.Enum):
    """How a FileSource lists files into splits (PyFlink's `FileEnumeratorProvider`)."""

    NON_SPLITTING = "non-splitting"
    BLOCK_SPLITTING = "block-splitting"

    @staticmethod
    def default_splitting_file_enumerator() -> FileEnumeratorProvider:
        """Split files into blocks where the format allows it."""
        return FileEnumeratorProvider.BLOCK_SPLITTING

    @staticmethod
    def default_non_splitting_file_enumerator() -> FileEnumeratorProvider:
        """One split per file."""
        return FileEnumeratorProvider.NON_SPLITTING


def check_enumerator(provider: object) -> None:
    if not isinstance(provider, FileEnumeratorProvider):
        raise InvalidJobError(f"set_file_enumerator takes a FileEnumeratorProvider, got {provider!r}")
    if provider is FileEnumeratorProvider.BLOCK_SPLITTING:
        raise NotYetSupportedError(
            "splitting files into blocks is not supported yet: files are read whole, one split per file; use "
            "FileEnumeratorProvider.default_non_splitting_file_enumerator()"
        )


class FileSplitAssignerProvider(enum.Enum):
    """How a FileSource hands splits to its readers (PyFlink's `FileSplitAssignerProvider`)."""

    LOCALITY_AWARE = "locality-aware"

    @staticmethod
    def locality_aware_split_assigner() -> FileSplitAssignerProvider:
        """Prefer splits stored near the reader (on a local disk: any)."""
        return FileSplitAssignerProvider.LOCALITY_AWARE


def check_split_assigner(provider: object) -> None:
    if not isinstance(provider, FileSplitAssignerProvider):
        raise InvalidJobError(f"set_split_assigner takes a FileSplitAssignerProvider, got {provider!r}")


@dataclass(frozen=True, slots=True)
class FileCompactor:
    """How compaction would join part files: concatenated with an optional delimiter, or one file kept as is."""

    kind: str
    delimiter: bytes | None = None

    @staticmethod
    def concat_file_compactor(file_delimiter: bytes | None = None) -> FileCompactor:
        """A compactor that concatenates files.

        Args:
            file_delimiter: Bytes written between files, or None.

        Returns:
            The compactor.
        """
        return FileCompactor("concat", file_delimiter)

    @staticmethod
    def identical_file_compactor() -> FileCompactor:
        """A compactor that copies files as they are."""
        return FileCompactor("identical")


@dataclass(frozen=True, slots=True)
class FileCompactStrategy:
    """When FileSink compacts small part files (PyFlink's `FileCompactStrategy`)."""

    size_threshold: int = -1
    num_checkpoints_before_compaction: int = 1
    num_compact_threads: int = 1

    @staticmethod
    def builder() -> FileCompactStrategyBuilder:
        """A builder of the strategy."""
        return FileCompactStrategyBuilder()


class FileCompactStrategyBuilder:
    def __init__(self) -> None:
        self._size = -1
        self._checkpoints = 1
        self._threads = 1

    def enable_compaction_on_checkpoint(self, num_checkpoints_before_compaction: int) -> FileCompactStrategyBuilder:
        self._checkpoints = num_checkpoints_before_compaction
        return self

    def set_size_threshold(self, size_threshold: int) -> FileCompactStrategyBuilder:
        self._size = size_threshold
        return self

    def set_num_compact_threads(self, num_compact_threads: int) -> FileCompactStrategyBuilder:
        self._threads = num_compact_threads
        return self

    def build(self) -> FileCompactStrategy:
        return FileCompactStrategy(self._size, self._checkpoints, self._threads)


def refuse_compaction() -> None:
    raise NotYetSupportedError(
        "compaction of part files (enable_compact) is not supported yet; roll larger parts instead "
        "(RollingPolicy.default_rolling_policy(part_size=...), longer checkpoint intervals)"
    )
