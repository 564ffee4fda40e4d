"""Frames on a byte stream: a 5-byte header (kind, payload length) and the payload.

A reader buffers what the socket gives and cuts whole frames out of it, so a frame split across reads, or many
frames in one read, come out the same. Anything that is not a well-formed frame — an unknown kind, a length
over MAX_FRAME_BYTES, a stream that ends inside a frame — raises BadFrameError or ConnectionError: the
connection is then dropped, never resynchronised. A clean close between frames reads as None.
"""

from __future__ import annotations

import enum
import socket
import struct
import threading

HEADER = struct.Struct(">BI")
MAX_FRAME_BYTES = 1 << 30
READ_CHUNK = 1 << 16


class FrameKind(enum.IntEnum):
    DATA = 1  # a data-plane item of one channel: (channel id, item)
    CREDIT = 2  # a consumer's credit grant: (channel id, count)
    CONTROL = 3  # a control-plane message (cloudpickled)
    OUTPUT = 4  # text a TaskManager process printed: (stream name, text)
    LOG = 5  # a log record a TaskManager process emitted
    HEARTBEAT = 6  # an empty sign of life
    COLLECT = 7  # records for a client's execute_and_collect: (collect id, values)
    CLOSE = 8  # the sender ends the connection on purpose
    BUFFER = 9  # a RecordBatch of one channel: its channel header, then the batch pickled (remote_channels)


class BadFrameError(ConnectionError):
    """The stream does not hold a well-formed frame where one must be."""


class FrameReader:
    """Whole frames from a socket, one `read()` at a time (one reader thread per connection)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()

    def _fill(self, needed: int) -> bool:
        """Read until the buffer holds `needed` bytes; False on a clean close with the buffer empty."""
        buffer = self._buffer
        while len(buffer) < needed:
            chunk = self._sock.recv(max(READ_CHUNK, needed - len(buffer)))
            if not chunk:
                if not buffer:
                    return False
                raise ConnectionError(
                    f"the peer closed the connection inside a frame ({len(buffer)} of {needed} bytes read)"
                )
            buffer += chunk
        return True

    def read(self) -> tuple[FrameKind, bytes] | None:
        """The next frame, or None when the peer closed the connection between frames."""
        if not self._fill(HEADER.size):
            return None
        kind, length = HEADER.unpack_from(self._buffer)
        try:
            frame_kind = FrameKind(kind)
        except ValueError:
            raise BadFrameError(f"unknown frame kind {kind}") from None
        if length > MAX_FRAME_BYTES:
            raise BadFrameError(f"a frame of {length} bytes is over the limit of {MAX_FRAME_BYTES}")
        end = HEADER.size + length
        self._fill(end)
        payload = bytes(self._buffer[HEADER.size : end])
        del self._buffer[:end]
        return frame_kind, payload


class FrameWriter:
    """Writes frames; thread-safe (a lock keeps frames from several threads whole)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()

    def write(self, kind: FrameKind, payload: bytes = b"", prefix: bytes = b"") -> None:
        """One frame whose payload is `prefix` then `payload` (joined here: one copy for both and the header)."""
        length = len(prefix) + len(payload)
        if length > MAX_FRAME_BYTES:
            raise BadFrameError(f"a frame of {length} bytes is over the limit of {MAX_FRAME_BYTES}")
        data = b"".join((HEADER.pack(kind, length), prefix, payload))
        with self._lock:
            self._sock.sendall(data)
