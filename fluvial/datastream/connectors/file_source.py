"""`FileSource`: records of files, static or continuously monitored (PyFlink's names; users import it from
`file_system`). Paths are local paths or any URL fsspec reaches (`file://`, `memory://`, `s3://`, ...; see
`file_systems`).

Source contract details (beyond `source.py`):
- One split per file; a split's `offset` is the byte offset of the first line not yet returned by `poll`,
  so a restored reader seeks there and resumes with exactly the next line.
- Lines end at "\\n"; a "\\r" right before it is dropped too, and a last line without a newline still counts.
- Files and directories whose name starts with "." or "_" are skipped (in-progress files of a `FileSink` are
  such files, so a source can watch a sink's output directory).
- With `monitor_continuously`, a `FileMonitorSplit` per planned subtask re-lists the paths every interval and
  owns the new files whose path hashes to it; it remembers the files it handed out, and that memory is part
  of the checkpoint, so a restored job neither re-reads nor misses files. Files must appear atomically
  (write elsewhere, then move in): a file still being written may be read half.
"""

from __future__ import annotations

import abc
import codecs
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, BinaryIO

from fluvial.common.errors import InvalidJobError, ResourceError
from fluvial.common.task_info import TaskInfo
from fluvial.common.time import Duration, to_millis
from fluvial.datastream.connectors.file_systems import list_files, open_for_read, resolve_path
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

# ---------------------------------------------------------------------------------------------- paths


def _is_hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _list_files(path: str) -> list[str]:
    """Every visible file at or under `path`, sorted; the path itself is read even when its name is hidden."""
    found = list_files(path, _is_hidden)
    if found is None:  # (a memory:// path never gets here in another process: refused at submission)
        raise ResourceError(
            f"file source path {path!r} does not exist (or is neither a file nor a directory); "
            "create it or fix the path given to FileSource.for_record_stream_format"
        )
    return found


def _list_all(paths: tuple[str, ...]) -> list[str]:
    """Files under every path, in the order the paths were given, each file once."""
    return list(dict.fromkeys(f for p in paths for f in _list_files(p)))


# ---------------------------------------------------------------------------------------------- formats


class StreamFormat(abc.ABC):
    """How a file's bytes become records. Picklable; opens a `FormatReader` per file at run time."""

    @abc.abstractmethod
    def open_reader(self, path: str, offset: int) -> FormatReader:
        """A reader of one file from a byte offset.

        Args:
            path: The file.
            offset: Where to start (a checkpointed position).

        Returns:
            The reader.
        """

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> TextLineFormat:
        """One record per line, decoded with `charset_name` (which must encode "\\n" as one byte)."""
        return TextLineFormat(charset_name)


class BulkFormat(StreamFormat):
    """A format read in batches of records from files that are not line-oriented (Parquet, ORC, Avro
    containers). Its readers' `offset` counts the records already returned from the file, so a restored
    reader skips exactly that many."""


class FormatReader(abc.ABC):
    """Reads one file from a byte offset. `offset` is always the position of the next unreturned record."""

    offset: int

    @abc.abstractmethod
    def read(self, max_records: int) -> list | None:
        """Up to `max_records` records, or None at end of file."""

    @abc.abstractmethod
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class TextLineFormat(StreamFormat):
    charset_name: str = "UTF-8"

    def __post_init__(self) -> None:
        try:
            codecs.lookup(self.charset_name)
        except LookupError:
            raise InvalidJobError(
                f"unknown charset {self.charset_name!r} for StreamFormat.text_line_format; "
                f"use a Python codec name such as 'UTF-8' or 'ISO-8859-1'"
            ) from None
        if not "x\r\n".encode(self.charset_name).endswith(b"x\r\n"):
            raise InvalidJobError(
                f"charset {self.charset_name!r} does not encode line breaks as single bytes, so lines cannot be "
                f"split at byte offsets; convert the files to UTF-8 or another ASCII-compatible charset"
            )

    def open_reader(self, path: str, offset: int) -> TextLineReader:
        return TextLineReader(path, offset, self.charset_name)


class TextLineReader(FormatReader):
    """Reads ahead in chunks, keeps raw lines, and advances `offset` only for the lines it returns."""

    CHUNK_SIZE = 64 * 1024

    def __init__(self, path: str, offset: int, charset: str) -> None:
        try:
            self._file: BinaryIO = open_for_read(path)
        except FileNotFoundError:
            raise ResourceError(
                f"file {path!r} vanished after the job was planned; keep input files in place until the job "
                f"has read them"
            ) from None
        self._file.seek(offset)
        self._charset = charset
        self.offset = offset
        self._lines: list[bytes] = []  # read ahead, "\n" removed
        self._next = 0  # index in _lines of the next line to return
        self._tail = b""  # bytes after the last "\n" read so far
        self._eof = False
        self._last_unterminated = False  # _lines holds only the file's final line, which has no "\n"

    def read(self, max_records: int) -> list | None:
        if max_records <= 0:
            return []
        if self._next >= len(self._lines) and not self._fill():
            return None
        batch = self._lines[self._next : self._next + max_records]
        self._next += len(batch)
        advance = sum(map(len, batch)) + len(batch)
        if self._last_unterminated and self._next == len(self._lines):
            advance -= 1
        self.offset += advance
        text = b"\n".join(batch).decode(self._charset, errors="replace")
        lines = text.split("\n")
        if "\r" in text:
            lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        return lines

    def _fill(self) -> bool:
        """Read until at least one whole line (or the unterminated last one) is buffered; False at EOF."""
        self._lines, self._next = [], 0
        parts = [self._tail] if self._tail else []
        while not self._eof:
            chunk = self._file.read(self.CHUNK_SIZE)
            if not chunk:
                self._eof = True
                if parts:
                    self._lines, self._last_unterminated = [b"".join(parts)], True
                break
            cut = chunk.rfind(b"\n")
            if cut < 0:
                parts.append(chunk)  # a line longer than a chunk: keep collecting, never re-copy
                continue
            parts.append(chunk[:cut])
            self._lines = b"".join(parts).split(b"\n")
            parts = [chunk[cut + 1 :]]
            break
        self._tail = b"".join(parts) if not self._eof else b""
        return bool(self._lines)

    def close(self) -> None:
        self._file.close()


# ---------------------------------------------------------------------------------------------- source


@dataclass(frozen=True, slots=True)
class FileSourceSplit:
    """One file; `offset` is the byte offset of the first line not yet emitted."""

    split_id: str
    path: str
    offset: int = 0


@dataclass(frozen=True, slots=True)
class FileMonitorSplit:
    """Discovery duty for new files under `paths` whose path hash modulo `count` is `index`.

    `seen` holds the owned files already turned into splits; it only grows.
    """

    split_id: str
    paths: tuple[str, ...]
    index: int
    count: int
    seen: frozenset[str] = frozenset()

    def owns(self, path: str) -> bool:
        return zlib.crc32(path.encode("utf-8", "surrogateescape")) % self.count == self.index


@dataclass(frozen=True, slots=True)
class FileSource(Source[Any]):
    """Reads files with a StreamFormat; bounded unless built with `monitor_continuously`."""

    stream_format: StreamFormat
    paths: tuple[str, ...]
    discovery_interval_ms: int | None = None

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str | os.PathLike) -> FileSourceBuilder:
        """A FileSource reading records one by one with a StreamFormat (e.g. text lines, CSV).

        Args:
            stream_format: The format.
            *paths: Files or directories: local paths or fsspec URLs.

        Returns:
            The builder.

        Example:
            ```python
            FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/data/in").build()
            ```
        """
        if not isinstance(stream_format, StreamFormat):
            raise InvalidJobError(
                f"for_record_stream_format takes a StreamFormat (e.g. StreamFormat.text_line_format(), "
                f"CsvReaderFormat.for_schema(...)), got {stream_format!r}"
            )
        return FileSourceBuilder(stream_format, paths)

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str | os.PathLike) -> FileSourceBuilder:
        """A FileSource reading files with a BulkFormat (Parquet, ORC, Avro).

        Args:
            bulk_format: The format.
            *paths: Files or directories.

        Returns:
            The builder.
        """
        if not isinstance(bulk_format, BulkFormat):
            raise InvalidJobError(
                f"for_bulk_file_format takes a BulkFormat (e.g. ParquetColumnarRowInputFormat(...)), got "
                f"{bulk_format!r}"
            )
        return FileSourceBuilder(bulk_format, paths)

    def get_boundedness(self) -> Boundedness:
        """BOUNDED when the source ends, CONTINUOUS_UNBOUNDED otherwise."""
        return Boundedness.BOUNDED if self.discovery_interval_ms is None else Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism: int) -> list[Any]:
        """Monitor splits first (one per subtask, only when continuous), then one split per file.

        Monitor i sits at index i, so subtask i gets monitor i under `assign_splits`.
        """
        if parallelism < 1:
            raise InvalidJobError(f"cannot split a file source for parallelism {parallelism}; use 1 or more")
        files = _list_all(self.paths)
        splits: list[Any] = []
        if self.discovery_interval_ms is not None:
            for i in range(parallelism):
                monitor = FileMonitorSplit(f"monitor-{i}-of-{parallelism}", self.paths, i, parallelism)
                splits.append(replace(monitor, seen=frozenset(f for f in files if monitor.owns(f))))
        splits.extend(FileSourceSplit(path, path, 0) for path in files)
        return splits

    def create_reader(self, task_info: TaskInfo) -> FileSourceReader:
        """The reader of one source subtask.

        Args:
            task_info: The subtask.

        Returns:
            The SourceReader.
        """
        return FileSourceReader(self.stream_format, self.discovery_interval_ms)

    def default_name(self) -> str:
        """The source's name when `from_source` gives none."""
        return "File Source"

    def locations(self) -> tuple[str, ...]:
        """The paths the source reads (checked at submission: `memory://` needs one process)."""
        return self.paths


class FileSourceBuilder:
    """`FileSource.for_record_stream_format(fmt, *paths)...build()`; static file set unless told otherwise."""

    def __init__(self, stream_format: StreamFormat, paths: tuple[str | os.PathLike, ...]) -> None:
        if not paths:
            raise InvalidJobError("FileSource needs at least one path: for_record_stream_format(format, path, ...)")
        self._format = stream_format
        self._paths = tuple(resolve_path(p) for p in paths)
        self._interval: int | None = None

    def monitor_continuously(self, discovery_interval: Duration | int) -> FileSourceBuilder:
        """Watch the paths for new files forever (an unbounded source).

        Args:
            discovery_interval: How often to look (ms or a Duration).

        Returns:
            This builder.
        """
        interval = to_millis(discovery_interval)
        if interval <= 0:
            raise InvalidJobError(
                f"monitor_continuously needs a positive interval, got {interval} ms; e.g. Duration.of_seconds(1)"
            )
        self._interval = interval
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        """Read the files there now and end (a bounded source; the default).

        Returns:
            This builder.
        """
        self._interval = None
        return self

    def set_file_enumerator(self, file_enumerator: Any) -> FileSourceBuilder:
        """Only the non-splitting enumerator (files are read whole); see `file_options`."""
        from fluvial.datastream.connectors.file_options import check_enumerator

        check_enumerator(file_enumerator)
        return self

    def set_split_assigner(self, split_assigner: Any) -> FileSourceBuilder:
        """The locality-aware assigner: on one machine every split is local (`file_options`)."""
        from fluvial.datastream.connectors.file_options import check_split_assigner

        check_split_assigner(split_assigner)
        return self

    def build(self) -> FileSource:
        """The FileSource.

        Returns:
            The source, for `env.from_source`.
        """
        return FileSource(self._format, self._paths, self._interval)


class FileSourceReader(SourceReader[Any]):
    """Reads its file splits one by one; with monitor splits, discovers new files between them."""

    def __init__(
        self,
        stream_format: StreamFormat,
        discovery_interval_ms: int | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._format = stream_format
        self._interval_s = None if discovery_interval_ms is None else discovery_interval_ms / 1000
        self._clock = clock
        self._next_discovery = clock()
        self._queue: list[FileSourceSplit] = []
        self._monitors: list[FileMonitorSplit] = []
        self._active: FileSourceSplit | None = None
        self._reader: FormatReader | None = None

    def add_splits(self, splits: list[Any]) -> None:
        for split in splits:
            if isinstance(split, FileMonitorSplit):
                self._monitors.append(split)
            elif isinstance(split, FileSourceSplit):
                self._queue.append(split)
            else:
                raise TypeError(f"FileSourceReader cannot read a {type(split).__name__}; splits got mixed up")

    def poll(self, max_records: int) -> list | None:
        while True:
            if self._reader is None:
                if not self._queue and not self._discover():
                    return None if self._interval_s is None else []
                self._active = self._queue.pop(0)
                self._reader = self._format.open_reader(self._active.path, self._active.offset)
            batch = self._reader.read(max_records)
            if batch is not None:
                return batch
            self._close_active()

    def current_split_id(self) -> str | None:
        """The file the last `poll` read from (files are read one after another)."""
        return None if self._active is None else self._active.split_id

    def _discover(self) -> bool:
        """Queue owned files not seen before, at most once per interval; True when some were queued."""
        if self._interval_s is None or not self._monitors or self._clock() < self._next_discovery:
            return False
        self._next_discovery = self._clock() + self._interval_s
        listing = None
        for i, monitor in enumerate(self._monitors):
            if listing is None or monitor.paths != self._monitors[i - 1].paths:
                listing = _list_all(monitor.paths)
            new = [f for f in listing if f not in monitor.seen and monitor.owns(f)]
            if new:
                self._monitors[i] = replace(monitor, seen=monitor.seen.union(new))
                self._queue.extend(FileSourceSplit(f, f, 0) for f in new)
        return bool(self._queue)

    def _close_active(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self._reader, self._active = None, None

    def snapshot_state(self) -> list[Any]:
        state: list[Any] = list(self._monitors)
        if self._active is not None and self._reader is not None:
            state.append(replace(self._active, offset=self._reader.offset))
        state.extend(self._queue)
        return state

    def close(self) -> None:
        self._close_active()
