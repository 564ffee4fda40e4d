"""The socket text receiver behind `env.socket_text_stream(host, port, delimiter)`: connects (retrying a
refused connection a few times, then failing with the address in the message), stores each delimited line,
and ends the stream when the peer closes the connection. Bytes are decoded incrementally, so a character
split across two reads stays whole; with the delimiter "\n" a trailing "\r" is dropped (as Flink's
SocketTextStreamFunction does)."""

from __future__ import annotations

import codecs
import socket
import time

from fluvial.datastream.connectors.receiver import Receiver

CONNECT_RETRIES = 3
RETRY_DELAY_S = 0.5
READ_SIZE = 65536


class SocketTextReceiver(Receiver):
    def __init__(self, host: str, port: int, delimiter: str = "\n", max_retries: int = CONNECT_RETRIES,
                 encoding: str = "utf-8") -> None:
        super().__init__()
        if not delimiter:
            raise ValueError("socket_text_stream needs a non-empty delimiter, e.g. '\\n'")
        self.host, self.port, self.delimiter = host, port, delimiter
        self.max_retries = max_retries
        self.encoding = encoding
        self._socket: socket.socket | None = None

    def name(self) -> str:
        return f"Socket Stream {self.host}:{self.port}"

    def on_start(self) -> None:
        self._socket = self._connect()
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
        pending = ""
        while not self.is_stopped():
            try:
                chunk = self._socket.recv(READ_SIZE)
            except OSError:
                if self.is_stopped():
                    return
                raise
            if not chunk:
                pending += decoder.decode(b"", final=True)
                if pending:
                    self.store(self._strip_cr(pending))
                self.stop("the peer closed the connection")
                return
            pending += decoder.decode(chunk)
            *lines, pending = pending.split(self.delimiter)
            for line in lines:
                self.store(self._strip_cr(line))

    def _strip_cr(self, line: str) -> str:
        return line[:-1] if self.delimiter == "\n" and line.endswith("\r") else line

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
