"""A file-based write-ahead log in a local directory (Spark Streaming's FileBasedWriteAheadLog, on local files).

One directory holds one log, e.g. `<checkpoint dir>/receivedData/<receiver id>/` for a receiver's blocks or
`<checkpoint dir>/receivedBlockMetadata/` for the ReceiverTracker's events. One WriteAheadLog object writes a
directory at a time; any number of readers may read it.

Layout and contracts:
1. The log is a sequence of segment files `log-<sequence>-<start_ms>-<end_ms>`, read in sequence order. A
   segment is created by the first record written at `time_ms` with no open segment, and spans
   [start_ms, start_ms + rolling interval). A write rolls to a new segment when its `time_ms` reaches the
   segment's end or when the record would push the segment past `max_segment_bytes` (a record larger than
   that gets a segment of its own). So every record in a segment has `time_ms < end_ms`, which is what
   `clean` relies on. The name is never changed after creation, because handles point at it.
2. A record is framed as `length` (4 bytes, big endian) + `crc32` (4 bytes) + payload; the checksum covers the
   length bytes and the payload, so a zero-filled tail never passes as an empty record.
3. `write` returns only after the frame is written and `os.fsync`ed (and, for a new segment, the directory
   entry too): a record whose handle was returned survives a crash of the process or the machine. So a write
   that fails is retried (up to `max_write_attempts`, with a back-off), each time in a new segment — after a
   failed fsync the old file's state is unknown, so it is never written again — and then raises WalError
   naming the log. A log whose directory or open segment was deleted while it was in use recreates them: the
   open segment's bytes are still reachable through its file descriptor, so it is written back under its own
   name and every handle into it stays valid. A closed segment that was deleted cannot be brought back: the
   write raises WalError naming the segments, and so does every later write (the log has lost records).
4. A crash mid-write leaves a torn record at the tail of the LAST segment (a short header, a short payload or
   a bad checksum reaching the end of the file or followed only by zero bytes). Opening the log truncates the
   last segment past its last whole record, and `read_all` skips such a tail. Anything else that does not
   check out - in an earlier segment, or followed by more data - is corruption: WalCorruptionError naming
   the segment and the offset. A record that was never acknowledged is all a torn tail can hold.
5. Reopening a directory never appends to an existing segment; new writes go to a new segment numbered after
   the last one. Records are unpickled by their readers, so a directory that holds segments is opened only if
   no other user could have written it (fluvial.common.private_files); the log's directories are created 0700
   and its segments 0600.

Hazard: `clean(t)` trusts the `time_ms` the writers passed. A clock that jumps backwards can put a record
still needed into a segment that `clean` considers old; callers use one monotonic-enough clock per log.
"""

from __future__ import annotations

import logging
import os
import re
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

from fluvial.common.errors import FluvialError
from fluvial.common.private_files import check_trusted, fsync_directory, make_private_dirs, open_private

logger = logging.getLogger(__name__)

_HEADER = struct.Struct(">II")
_MAX_RECORD_LENGTH = 0xFFFF_FFFF
_SEGMENT_NAME = re.compile(r"^log-(\d+)-(\d+)-(\d+)$")

DEFAULT_ROLLING_INTERVAL_MS = 60_000
DEFAULT_MAX_SEGMENT_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_WRITE_ATTEMPTS = 3  # as Spark's spark.streaming.receiver.writeAheadLog.maxFailures
DEFAULT_RETRY_BACKOFF_S = 0.05  # doubled after each failed attempt
_SEGMENT_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
_COPY_CHUNK = 1 << 20


class WalError(FluvialError):
    """The write-ahead log cannot do what was asked (it is closed, a segment is gone, a write failed)."""


class WalDurabilityError(WalError):
    """Records the log acknowledged are no longer durable (a closed segment was deleted) or the log could not
    repair a failed write: it refuses every later write, since it can no longer promise what `write` promises."""


class WalCorruptionError(WalError):
    """A record in the middle of the log does not check out; the log cannot be trusted past it."""

    def __init__(self, message: str, segment: str, offset: int) -> None:
        super().__init__(message)
        self.segment = segment
        self.offset = offset


@dataclass(frozen=True, slots=True)
class WalRecordHandle:
    """Where one record lives: its segment file, the offset of its frame, the payload length, and the time it
    was written under (which tells a cleaner which `clean` threshold would delete it). Picklable."""

    path: str
    offset: int
    length: int
    time_ms: int


@dataclass(frozen=True, slots=True)
class WalSegment:
    path: str
    sequence: int
    start_ms: int
    end_ms: int
    """Exclusive: every record in the segment was written with `time_ms < end_ms`."""

    @staticmethod
    def parse(path: Path) -> WalSegment | None:
        """The segment a file name describes, or None for a file that is not a segment."""
        match = _SEGMENT_NAME.match(path.name)
        if match is None:
            return None
        sequence, start_ms, end_ms = (int(group) for group in match.groups())
        return WalSegment(str(path), sequence, start_ms, end_ms)


def _checksum(length_bytes: bytes, payload: bytes | bytearray | memoryview) -> int:
    return zlib.crc32(payload, zlib.crc32(length_bytes))


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """The bytes `write` appends for one payload (exposed so tests can forge torn and corrupt records)."""
    length = len(payload)
    if length > _MAX_RECORD_LENGTH:
        raise WalError(f"a write-ahead log record holds at most {_MAX_RECORD_LENGTH} bytes, got {length}")
    length_bytes = struct.pack(">I", length)
    return length_bytes + struct.pack(">I", _checksum(length_bytes, payload)) + bytes(payload)


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _list_segments(directory: Path) -> list[WalSegment]:
    segments = (WalSegment.parse(entry) for entry in directory.iterdir() if entry.is_file())
    return sorted((segment for segment in segments if segment is not None), key=lambda s: s.sequence)


@dataclass(frozen=True, slots=True)
class _BadFrame:
    problem: str
    reaches_end: bool
    """Nothing but the bad frame (or zero bytes) follows it: what an interrupted write leaves."""


def _read_frame(file: BinaryIO, offset: int, size: int) -> bytes | _BadFrame:
    file.seek(offset)
    header = file.read(min(_HEADER.size, size - offset))
    if len(header) < _HEADER.size:
        return _BadFrame(f"a short record header ({len(header)} of {_HEADER.size} bytes)", True)
    length, crc = _HEADER.unpack(header)
    end = offset + _HEADER.size + length
    if end > size:
        return _BadFrame(f"a record of {length} bytes running past the end of the segment ({size} bytes)", True)
    payload = file.read(length)
    if _checksum(header[:4], payload) == crc:
        return payload
    return _BadFrame("a record whose checksum does not match", end == size or _only_zeros(file, end, size))


def _scan(path: str, size: int, is_last: bool) -> Iterator[tuple[int, bytes]]:
    """Yield (offset, payload) for each whole record in the first `size` bytes of a segment. A torn tail of the
    last segment ends the scan quietly; any other bad frame raises WalCorruptionError."""
    with open(path, "rb") as file:
        offset = 0
        while offset < size:
            frame = _read_frame(file, offset, size)
            if isinstance(frame, bytes):
                yield offset, frame
                offset += _HEADER.size + len(frame)
                continue
            if is_last and frame.reaches_end:
                return  # torn tail: a crash interrupted the write of a record that was never acknowledged
            why = (
                "followed by more data, so this is not an interrupted write"
                if not frame.reaches_end
                else "but it is not the last segment, so this is not an interrupted write"
            )
            raise WalCorruptionError(
                f"write-ahead log segment {path} is corrupt at offset {offset}: {frame.problem}, {why}; the records "
                f"from there on cannot be trusted",
                path,
                offset,
            )


def _only_zeros(file: BinaryIO, start: int, stop: int) -> bool:
    file.seek(start)
    remaining = stop - start
    while remaining > 0:
        chunk = file.read(min(remaining, 1 << 16))
        if not chunk or chunk.count(0) != len(chunk):
            return False
        remaining -= len(chunk)
    return True


def _valid_length(path: str, size: int) -> int:
    valid = 0
    for offset, payload in _scan(path, size, is_last=True):
        valid = offset + _HEADER.size + len(payload)
    return valid


class WriteAheadLog:
    """Appends records durably to rolling segment files in one directory; reads them back by handle or all in
    order; deletes segments older than a threshold. `write` and `clean` are thread-safe (one lock; writes are
    serialized, which also keeps the log in the order handles were returned). Reads take no lock."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        rolling_interval_ms: int = DEFAULT_ROLLING_INTERVAL_MS,
        max_segment_bytes: int = DEFAULT_MAX_SEGMENT_BYTES,
        max_write_attempts: int = DEFAULT_MAX_WRITE_ATTEMPTS,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rolling_interval_ms <= 0:
            raise ValueError(f"the write-ahead log rolling interval must be > 0 ms, got {rolling_interval_ms}")
        if max_segment_bytes <= 0:
            raise ValueError(f"the write-ahead log segment size must be > 0 bytes, got {max_segment_bytes}")
        if isinstance(max_write_attempts, bool) or not isinstance(max_write_attempts, int) or max_write_attempts < 1:
            raise ValueError(f"the write-ahead log needs max_write_attempts >= 1, got {max_write_attempts!r}")
        if not retry_backoff_s >= 0:
            raise ValueError(f"the write-ahead log retry back-off must be >= 0 s, got {retry_backoff_s!r}")
        self._directory = Path(directory).absolute()
        self._directory_path = str(self._directory)
        self._rolling_interval_ms = rolling_interval_ms
        self._max_segment_bytes = max_segment_bytes
        self._max_write_attempts = max_write_attempts
        self._retry_backoff_s = retry_backoff_s
        self._sleep = sleep
        self._lock = threading.Lock()
        self._active: WalSegment | None = None
        self._active_fd: int | None = None
        self._active_size = 0
        self._closed = False
        self._failure: BaseException | None = None
        make_private_dirs(self._directory)
        existing = _list_segments(self._directory)
        if existing:
            check_trusted(self._directory, f"the write-ahead log {self._directory}")
        self._next_sequence = existing[-1].sequence + 1 if existing else 0
        self._on_disk: dict[str, WalSegment] = {segment.path: segment for segment in existing}
        if existing:
            self._repair_tail(existing[-1])

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def closed(self) -> bool:
        return self._closed

    def segments(self) -> list[WalSegment]:
        """The segments on disk, in log order."""
        return _list_segments(self._directory)

    def write(self, data: bytes | bytearray | memoryview, time_ms: int) -> WalRecordHandle:
        """Append one record written under `time_ms`; durable (fsynced, and its segment on disk) when this
        returns. A failed attempt is retried in a new segment; WalError naming the log when none succeeds."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"the write-ahead log stores bytes, got {type(data).__name__}; serialize first")
        if time_ms < 0:
            raise ValueError(f"a write-ahead log record time must be >= 0 ms, got {time_ms}")
        frame = encode_frame(data)
        with self._lock:
            attempt = 1
            while True:
                self._check_writable()
                try:
                    return self._append(frame, time_ms)
                except OSError as error:
                    if attempt >= self._max_write_attempts:
                        raise WalError(
                            f"writing a record to the write-ahead log in {self._directory} failed {attempt} "
                            f"time(s), the last with {type(error).__name__}: {error}; the record is not durable. "
                            f"Check the disk under {self._directory} (space, permissions, errors)"
                        ) from error
                    delay = self._retry_backoff_s * 2 ** (attempt - 1)
                    logger.warning(
                        "write-ahead log %s: write attempt %d of %d failed (%s: %s); retrying in a new "
                        "segment in %.3f s",
                        self._directory,
                        attempt,
                        self._max_write_attempts,
                        type(error).__name__,
                        error,
                        delay,
                    )
                    self._sleep(delay)
                    attempt += 1

    def read(self, handle: WalRecordHandle) -> bytes:
        """The payload `handle` points at, its checksum verified."""
        try:
            with open(handle.path, "rb") as file:
                file.seek(handle.offset)
                header = file.read(_HEADER.size)
                payload = file.read(handle.length)
        except FileNotFoundError:
            raise WalError(
                f"write-ahead log segment {handle.path} no longer exists (was it cleaned?); cannot read the record "
                f"at offset {handle.offset}"
            ) from None
        if len(header) < _HEADER.size or len(payload) < handle.length:
            raise WalCorruptionError(
                f"write-ahead log segment {handle.path} ends before the record at offset {handle.offset} "
                f"({handle.length} bytes) does",
                handle.path,
                handle.offset,
            )
        length, crc = _HEADER.unpack(header)
        if length != handle.length or _checksum(header[:4], payload) != crc:
            raise WalCorruptionError(
                f"write-ahead log segment {handle.path} is corrupt at offset {handle.offset}: the record there "
                f"does not match its checksum or its handle",
                handle.path,
                handle.offset,
            )
        return payload

    def read_all(self) -> Iterator[bytes]:
        """Every record, in log order. The segments and their lengths are fixed when iteration starts, so
        records written meanwhile may or may not appear; a segment cleaned meanwhile is skipped (its records
        were obsolete)."""
        with self._lock:
            snapshot = [(segment.path, self._segment_size(segment)) for segment in self.segments()]
        return self._read_snapshot(snapshot)

    def _append(self, frame: bytes, time_ms: int) -> WalRecordHandle:
        """One attempt (lock held). An OSError leaves no partial record behind and no open segment."""
        self._check_segments()
        segment, fd = self._segment_for(time_ms, len(frame))
        offset = self._active_size
        try:
            _write_all(fd, frame)
            os.fsync(fd)
        except OSError as error:
            self._undo_partial_write(fd, offset, error)
            self._close_active()  # after a failed write or fsync, never trust that file again
            raise
        self._active_size = offset + len(frame)
        self._check_segments()  # deleted meanwhile: restored, so what this returns is durable
        return WalRecordHandle(segment.path, offset, len(frame) - _HEADER.size, time_ms)

    def clean(self, threshold_time_ms: int) -> list[str]:
        """Delete every segment whose records are all older than `threshold_time_ms` (its end is at or before
        the threshold), including the open one, after which the next write starts a new segment. Returns the
        deleted paths."""
        with self._lock:
            if self._closed:
                raise WalError(f"the write-ahead log in {self._directory} is closed; cannot clean it")
            deleted = []
            for segment in self.segments():
                if segment.end_ms > threshold_time_ms:
                    continue
                if segment == self._active:
                    self._close_active()
                self._on_disk.pop(segment.path, None)
                try:
                    os.remove(segment.path)
                except FileNotFoundError:
                    continue
                deleted.append(segment.path)
            if deleted:
                fsync_directory(self._directory)
            return deleted

    def close(self) -> None:
        """Close the open segment. Idempotent; `write` and `clean` raise afterwards, reads still work."""
        with self._lock:
            self._closed = True
            self._close_active()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"WriteAheadLog({str(self._directory)!r})"

    # -- internals (called with the lock held, except the readers) --

    def _check_writable(self) -> None:
        if self._closed:
            raise WalError(f"the write-ahead log in {self._directory} is closed; cannot write to it")
        if self._failure is not None:
            raise WalDurabilityError(
                f"the write-ahead log in {self._directory} failed earlier and takes no more records: {self._failure}"
            )

    def _check_segments(self) -> None:
        """Every segment this log holds must still be on disk (see contract 3 of the module docstring)."""
        if not os.path.isdir(self._directory_path):
            make_private_dirs(self._directory)
            fsync_directory(self._directory.parent)
            logger.warning("write-ahead log directory %s was deleted while in use; recreated it", self._directory)
        if self._active_fd is not None and os.fstat(self._active_fd).st_nlink == 0:
            self._restore_active()
        exists = os.path.exists
        lost = sorted(path for path in self._on_disk if not exists(path))
        if lost:
            self._failure = WalDurabilityError(
                f"segment(s) {', '.join(os.path.basename(p) for p in lost)} of the write-ahead log in "
                f"{self._directory} were deleted while the log was in use, so records it acknowledged are no "
                "longer durable; only the open segment can be restored. Keep other processes (tmp cleaners, "
                "scripts) away from the checkpoint directory"
            )
            logger.error("%s", self._failure)
            raise self._failure

    def _restore_active(self) -> None:
        """The open segment was unlinked; its bytes live on behind the open descriptor. Write them back under
        the segment's own name (so every handle into it stays valid) and continue in the new file."""
        assert self._active is not None and self._active_fd is not None
        path, old_fd, size = self._active.path, self._active_fd, self._active_size
        try:
            new_fd = open_private(path, _SEGMENT_FLAGS)
            try:
                copied = 0
                while copied < size:
                    chunk = os.pread(old_fd, min(_COPY_CHUNK, size - copied), copied)
                    if not chunk:
                        raise OSError(f"the deleted segment ended after {copied} of {size} bytes")
                    _write_all(new_fd, chunk)
                    copied += len(chunk)
                os.fsync(new_fd)
                fsync_directory(self._directory)
            except BaseException:
                os.close(new_fd)
                raise
        except OSError as error:  # its records are on no disk now: the log cannot keep its promise
            self._close_active()
            self._failure = WalDurabilityError(
                f"write-ahead log segment {path} was deleted while open and could not be restored ({error}); the "
                "records in it are no longer durable"
            )
            logger.error("%s", self._failure)
            raise self._failure from error
        os.close(old_fd)
        self._active_fd = new_fd
        logger.warning(
            "write-ahead log segment %s was deleted while open; restored its %d bytes from the open file", path, size
        )

    def _segment_for(self, time_ms: int, frame_length: int) -> tuple[WalSegment, int]:
        active = self._active
        if active is not None and (
            time_ms >= active.end_ms
            or (self._active_size > 0 and self._active_size + frame_length > self._max_segment_bytes)
        ):
            self._close_active()
        if self._active is None or self._active_fd is None:
            name = f"log-{self._next_sequence:08d}-{time_ms}-{time_ms + self._rolling_interval_ms}"
            path = self._directory / name
            fd = open_private(path, _SEGMENT_FLAGS)
            try:
                fsync_directory(self._directory)
            except OSError:
                os.close(fd)
                os.remove(path)
                raise
            segment = WalSegment(str(path), self._next_sequence, time_ms, time_ms + self._rolling_interval_ms)
            self._next_sequence += 1
            self._on_disk[segment.path] = self._active = segment
            self._active_fd = fd
            self._active_size = 0
        return self._active, self._active_fd

    def _close_active(self) -> None:
        if self._active_fd is not None:
            os.close(self._active_fd)
        self._active = None
        self._active_fd = None
        self._active_size = 0

    def _undo_partial_write(self, fd: int, offset: int, error: OSError) -> None:
        try:
            os.ftruncate(fd, offset)
            os.fsync(fd)
        except OSError as undo_error:
            self._failure = WalDurabilityError(
                f"writing to a segment of the write-ahead log in {self._directory} failed ({error}) and the partial "
                f"record could not be removed ({undo_error}); reopen the log to recover"
            )
            self._close_active()
            raise self._failure from error

    def _segment_size(self, segment: WalSegment) -> int:
        if segment == self._active:
            return self._active_size
        try:
            return os.stat(segment.path).st_size
        except FileNotFoundError:
            return 0

    def _repair_tail(self, last: WalSegment) -> None:
        size = os.stat(last.path).st_size
        valid = _valid_length(last.path, size)
        if valid < size:
            with open(last.path, "r+b") as file:
                file.truncate(valid)
                file.flush()
                os.fsync(file.fileno())

    @staticmethod
    def _read_snapshot(snapshot: list[tuple[str, int]]) -> Iterator[bytes]:
        for index, (path, size) in enumerate(snapshot):
            try:
                for _offset, payload in _scan(path, size, is_last=index == len(snapshot) - 1):
                    yield payload
            except FileNotFoundError:
                continue
