"""The socket text receiver behind `env.socket_text_stream(host, port, delimiter)`.

It connects (retrying a refused connection `max_retries` times, then failing with the address in the message)
and stores each delimited record. With the delimiter "\\n" a trailing "\\r" is dropped (as Flink's
SocketTextStreamFunction does). Contract, numbered:

1. Bytes are strict UTF-8 (or ASCII / Latin-1 when `encoding` says so): an invalid byte stops the receiver with
   an error naming its byte offset in the connection, which fails the job — nothing is silently replaced. A
   character split across two reads stays whole: records are cut on the delimiter's bytes, then decoded.
2. A record is at most `max_record_size` bytes (default 1 MiB, delimiter excluded). A longer one — typically a
   peer that never sends the delimiter — stops the receiver with an error naming the limit and the offset where
   the record started, instead of buffering without bound.
3. How the connection ends decides what the stream does (`DisconnectAction`):
   - a clean close (the peer's FIN, recv returns nothing): `on_peer_close`, default END_STREAM — the rest of
     the buffer is the last record and the stream ends, so a bounded job finishes;
   - a reset or any other error of the connection: `on_peer_reset`, default RECONNECT — the receiver restarts
     through its supervisor (back-off and bound of its `restart_strategy`) and connects again. Bytes of an
     incomplete record at the reset are dropped, with a warning naming how many: the peer never finished it.
   FAIL stops the receiver with an error, which fails the job.
"""

from __future__ import annotations

import codecs
import enum
import logging
import socket
import time

from fluvial.datastream.connectors.receiver import Receiver

logger = logging.getLogger(__name__)

CONNECT_RETRIES = 3
RETRY_DELAY_S = 0.5
READ_SIZE = 65536
DEFAULT_MAX_RECORD_SIZE = 1024 * 1024
# Records are cut on the delimiter's bytes before decoding: right for encodings where no character's bytes can
# contain another character's (UTF-8 is self-synchronizing; ASCII and Latin-1 have one byte per character).
_CUTTABLE_ENCODINGS = frozenset({"utf-8", "ascii", "latin-1"})


class DisconnectAction(enum.Enum):
    """What a socket text stream does when its connection ends (contract 3)."""

    END_STREAM = "end the stream"
    RECONNECT = "reconnect"
    FAIL = "fail the job"


class SocketTextReceiver(Receiver):
    def __init__(
        self,
        host: str,
        port: int,
        delimiter: str = "\n",
        max_retries: int = CONNECT_RETRIES,
        encoding: str = "utf-8",
        *,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        on_peer_close: DisconnectAction = DisconnectAction.END_STREAM,
        on_peer_reset: DisconnectAction = DisconnectAction.RECONNECT,
    ) -> None:
        super().__init__()
        if not isinstance(delimiter, str) or not delimiter:
            raise ValueError("socket_text_stream needs a non-empty delimiter, e.g. '\\n'")
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            codec = None
        name = {"iso8859-1": "latin-1"}.get(codec, codec)
        if name not in _CUTTABLE_ENCODINGS:
            raise ValueError(
                f"socket_text_stream reads utf-8, ascii or latin-1, got encoding {encoding!r}; "
                "convert the stream to UTF-8 at the sender"
            )
        if isinstance(max_record_size, bool) or not isinstance(max_record_size, int) or max_record_size < 1:
            raise ValueError(
                f"socket_text_stream max_record_size must be a positive number of bytes, got {max_record_size!r}"
            )
        for option, action in (("on_peer_close", on_peer_close), ("on_peer_reset", on_peer_reset)):
            if not isinstance(action, DisconnectAction):
                raise ValueError(
                    f"socket_text_stream {option} must be a DisconnectAction (END_STREAM, RECONNECT "
                    f"or FAIL from fluvial.datastream.connectors.socket), got {action!r}"
                )
        self.host, self.port, self.delimiter = host, port, delimiter
        self.max_retries = max_retries
        self.encoding = name
        self.max_record_size = max_record_size
        self.on_peer_close = on_peer_close
        self.on_peer_reset = on_peer_reset
        self._socket: socket.socket | None = None

    def name(self) -> str:
        return f"Socket Stream {self.host}:{self.port}"

    def on_start(self) -> None:
        self._socket = self._connect()
        reader = _RecordReader(self.delimiter, self.encoding, self.max_record_size)
        while not self.is_stopped():
            try:
                chunk = self._socket.recv(READ_SIZE)
            except OSError as error:
                if self.is_stopped():
                    return
                self._disconnected(self.on_peer_reset, f"was reset ({type(error).__name__}: {error})", reader, error)
                return
            if not chunk:
                self._disconnected(self.on_peer_close, "was closed by the peer", reader, None)
                return
            try:
                lines = reader.feed(chunk)
            except ValueError as error:
                self.stop(f"{self.name()}: {error}", error)
                return
            for line in lines:
                self._store(line)

    def _store(self, line: str) -> None:
        self.store(line[:-1] if self.delimiter == "\n" and line.endswith("\r") else line)

    def _disconnected(
        self, action: DisconnectAction, how: str, reader: _RecordReader, error: BaseException | None
    ) -> None:
        where = f"the connection to {self.host}:{self.port} {how}"
        if action is DisconnectAction.RECONNECT:
            if reader.pending:
                logger.warning(
                    "%s: dropped the %d byte(s) of an incomplete record at offset %d",
                    where,
                    reader.pending,
                    reader.record_offset,
                )
            self.restart(f"{where}; reconnecting", error, delay=0)
            return
        if action is DisconnectAction.FAIL:
            option = "on_peer_reset" if error is not None else "on_peer_close"
            self.stop(f"{where} (socket_text_stream {option}=FAIL)", error or ConnectionError(where))
            return
        try:
            tail = reader.finish()
        except ValueError as invalid:
            self.stop(f"{self.name()}: {invalid}", invalid)
            return
        if tail is not None:
            self._store(tail)
        self.stop(f"{where}; the stream ends")

    def _connect(self) -> socket.socket:
        last_error: OSError | None = None
        for attempt in range(self.max_retries + 1):
            try:
                return socket.create_connection((self.host, self.port), timeout=None)
            except OSError as error:
                last_error = error
                if attempt < self.max_retries:
                    time.sleep(RETRY_DELAY_S)
        error = ConnectionError(
            f"socket_text_stream could not connect to {self.host}:{self.port} after {self.max_retries + 1} "
            f"attempts ({last_error}): start the server first or check the address"
        )
        self.stop(str(error), error)
        raise error

    def on_stop(self) -> None:
        sock, self._socket = self._socket, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class _RecordReader:
    """Cuts a connection's bytes into decoded records on the delimiter, strictly, holding at most `max_size`
    bytes of one record. `record_offset` is the offset in the connection of the first byte not yet returned."""

    def __init__(self, delimiter: str, encoding: str, max_size: int) -> None:
        self._delimiter = delimiter
        self._delimiter_bytes = delimiter.encode(encoding)
        self._encoding = encoding
        self._max_size = max_size
        self._buffer = bytearray()
        self._searched = 0  # leading bytes of the buffer known to start no delimiter
        self.record_offset = 0

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list[str]:
        """The records `chunk` completes. ValueError naming the byte offset for an invalid byte or a record
        longer than the maximum. One decode and one split per chunk: the fast path is all C."""
        buffer, delimiter = self._buffer, self._delimiter_bytes
        buffer += chunk
        cut = buffer.rfind(delimiter, self._searched)
        if cut < 0:
            self._searched = max(0, len(buffer) - len(delimiter) + 1)
            self._check_size(len(buffer), self.record_offset)
            return []
        complete = bytes(buffer[:cut])
        if len(complete) > self._max_size:
            self._check_each_size(complete)
        text = self._decode(complete)
        del buffer[: cut + len(delimiter)]
        self.record_offset += cut + len(delimiter)
        self._searched = max(0, len(buffer) - len(delimiter) + 1)
        self._check_size(len(buffer), self.record_offset)
        return text.split(self._delimiter)

    def finish(self) -> str | None:
        """At a clean close: the bytes after the last delimiter, decoded (the last record), or None."""
        tail, self._buffer = bytes(self._buffer), bytearray()
        return self._decode(tail) if tail else None

    def _decode(self, data: bytes) -> str:
        try:
            return data.decode(self._encoding)
        except UnicodeDecodeError as error:
            raise ValueError(
                f"the byte {data[error.start]:#04x} at offset {self.record_offset + error.start} of the connection "
                f"is not valid {self._encoding} ({error.reason}); the stream is strict {self._encoding}: fix the "
                "sender"
            ) from None

    def _check_each_size(self, complete: bytes) -> None:
        offset = self.record_offset
        for part in complete.split(self._delimiter_bytes):
            self._check_size(len(part), offset)
            offset += len(part) + len(self._delimiter_bytes)

    def _check_size(self, size: int, offset: int) -> None:
        if size > self._max_size:
            raise ValueError(
                f"the record starting at byte offset {offset} of the connection is longer than max_record_size "
                f"({self._max_size} bytes) without a delimiter {self._delimiter!r}; check the delimiter, or raise "
                "socket_text_stream(..., max_record_size=...)"
            )
