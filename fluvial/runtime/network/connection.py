"""Authenticated, framed connections: what every control and data connection of a cluster is.

A Listener accepts on a loopback address unless told otherwise, runs the handshake of `auth` on each new
connection on a thread of its own (a silent or hostile peer never blocks the next accept), hands the
authenticated ones to its owner and drops the others with a WARNING naming the peer.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable

from fluvial.runtime.network.auth import AuthenticationError, accept_handshake, connect_handshake
from fluvial.runtime.network.framing import FrameKind, FrameReader, FrameWriter

logger = logging.getLogger(__name__)

Address = tuple[str, int]
DEFAULT_BIND_HOST = "127.0.0.1"


class Connection:
    """One authenticated connection: frames in (one reader thread), frames out (any thread)."""

    def __init__(self, sock: socket.socket, peer: str) -> None:
        self.sock = sock
        self.peer = peer
        self.reader = FrameReader(sock)
        self.writer = FrameWriter(sock)
        self._closed = threading.Event()

    def send(self, kind: FrameKind, payload: bytes = b"") -> None:
        self.writer.write(kind, payload)

    def read(self) -> tuple[FrameKind, bytes] | None:
        return self.reader.read()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def __repr__(self) -> str:
        return f"Connection({self.peer})"


def connect(address: Address, secret: bytes, timeout: float = 10.0) -> Connection:
    """A connection to `address`, authenticated both ways (AuthenticationError otherwise)."""
    sock = socket.create_connection(address, timeout=timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connect_handshake(sock, secret, timeout)
        sock.settimeout(None)
    except BaseException:
        sock.close()
        raise
    return Connection(sock, f"{address[0]}:{address[1]}")


class Listener:
    """Accepts authenticated connections on (host, port) — port 0: any free port — and hands each to
    `on_connection` (on the connection's handshake thread)."""

    def __init__(self, secret: bytes, on_connection: Callable[[Connection], None], name: str,
                 host: str = DEFAULT_BIND_HOST, port: int = 0) -> None:
        self._secret = secret
        self._on_connection = on_connection
        self.name = name
        self._server = socket.create_server((host, port), backlog=64)
        self.address: Address = self._server.getsockname()[:2]
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name=f"{name}-accept", daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                sock, peer = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._authenticate, args=(sock, peer), name=f"{self.name}-handshake",
                             daemon=True).start()

    def _authenticate(self, sock: socket.socket, peer: tuple) -> None:
        where = f"{peer[0]}:{peer[1]}"
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            accept_handshake(sock, self._secret)
            sock.settimeout(None)
        except AuthenticationError as error:
            logger.warning("%s dropped an unauthenticated connection from %s: %s", self.name, where, error)
            sock.close()
            return
        except OSError as error:
            logger.warning("%s dropped a connection from %s: %s", self.name, where, error)
            sock.close()
            return
        if self._stopped.is_set():
            sock.close()
            return
        self._on_connection(Connection(sock, where))

    def close(self) -> None:
        self._stopped.set()
        self._server.close()
