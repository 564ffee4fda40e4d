"""Authenticated, framed connections: what every control and data connection of a cluster is.

A Listener accepts on a loopback address unless told otherwise, runs the handshake of `auth` on each new
connection on a thread of its own (a silent or hostile peer never blocks the next accept), hands the
authenticated ones to its owner and drops the others with a WARNING naming the peer.

Peers cannot starve it: at most MAX_HANDSHAKES handshakes run at once (a new connection when all are taken
ends the oldest, so slow peers make room for a cluster process, whose handshake takes milliseconds), each has
HANDSHAKE_DEADLINE_S in all however slowly its peer drips bytes, and the accept loop survives any error (out of
file descriptors, a thread that cannot start) — only `close()` ends it. `close()` shuts the listening socket
down, so the accept thread returns and the port is released at once (a socket closed under a blocked accept
stays in LISTEN until the accept returns).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from fluvial.runtime.network.auth import AuthenticationError, accept_handshake, connect_handshake
from fluvial.runtime.network.framing import FrameKind, FrameReader, FrameWriter

logger = logging.getLogger(__name__)

Address = tuple[str, int]
DEFAULT_BIND_HOST = "127.0.0.1"
MAX_HANDSHAKES = 32
HANDSHAKE_DEADLINE_S = 10.0
REAP_INTERVAL_S = 0.5  # how often the accept loop ends handshakes past their deadline
ERROR_PAUSE_S = 0.05  # after a failed accept (e.g. no file descriptors left), before the next


class Connection:
    """One authenticated connection: frames in (one reader thread), frames out (any thread)."""

    def __init__(self, sock: socket.socket, peer: str) -> None:
        self.sock = sock
        self.peer = peer
        self.reader = FrameReader(sock)
        self.writer = FrameWriter(sock)
        self._closed = threading.Event()

    def send(self, kind: FrameKind, payload: bytes = b"", prefix: bytes = b"") -> None:
        self.writer.write(kind, payload, prefix)

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

    def __init__(
        self,
        secret: bytes,
        on_connection: Callable[[Connection], None],
        name: str,
        host: str = DEFAULT_BIND_HOST,
        port: int = 0,
        max_handshakes: int = MAX_HANDSHAKES,
        handshake_deadline: float = HANDSHAKE_DEADLINE_S,
    ) -> None:
        self._secret = secret
        self._on_connection = on_connection
        self.name = name
        self._max_handshakes = max_handshakes
        self._deadline = handshake_deadline
        self._server = socket.create_server((host, port), backlog=64)
        self._server.settimeout(REAP_INTERVAL_S)
        self.address: Address = self._server.getsockname()[:2]
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._handshaking: dict[socket.socket, float] = {}  # in progress -> when it started; oldest first
        self._thread = threading.Thread(target=self._accept_loop, name=f"{name}-accept", daemon=True)
        self._thread.start()

    @property
    def handshakes_in_progress(self) -> int:
        with self._lock:
            return len(self._handshaking)

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                self._end_late_handshakes()
                try:
                    sock, peer = self._server.accept()
                except TimeoutError:
                    continue
                self._start_handshake(sock, peer)
            except Exception as error:  # noqa: BLE001 - the loop must outlive any one connection
                if self._stopped.is_set():
                    return
                logger.warning("%s could not take a connection: %s", self.name, error)
                time.sleep(ERROR_PAUSE_S)

    def _start_handshake(self, sock: socket.socket, peer: tuple[Any, ...]) -> None:
        evicted = None
        with self._lock:
            if len(self._handshaking) >= self._max_handshakes:
                evicted = next(iter(self._handshaking))
                del self._handshaking[evicted]
            self._handshaking[sock] = time.monotonic()
        if evicted is not None:
            _shut(evicted)  # its thread sees the socket fail and drops it
        try:
            sock.settimeout(self._deadline)
            threading.Thread(
                target=self._authenticate, args=(sock, peer), name=f"{self.name}-handshake", daemon=True
            ).start()
        except BaseException:
            with self._lock:
                self._handshaking.pop(sock, None)
            sock.close()
            raise

    def _end_late_handshakes(self) -> None:
        now = time.monotonic()
        with self._lock:
            late = [sock for sock, started in self._handshaking.items() if now - started > self._deadline]
            for sock in late:
                del self._handshaking[sock]
        for sock in late:
            _shut(sock)

    def _authenticate(self, sock: socket.socket, peer: tuple[Any, ...]) -> None:
        where = f"{peer[0]}:{peer[1]}"
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            accept_handshake(sock, self._secret, self._deadline)
            sock.settimeout(None)
        except AuthenticationError as error:
            logger.warning("%s dropped an unauthenticated connection from %s: %s", self.name, where, error)
            self._drop(sock)
            return
        except OSError as error:
            logger.warning("%s dropped a connection from %s: %s", self.name, where, error)
            self._drop(sock)
            return
        with self._lock:
            current = self._handshaking.pop(sock, None) is not None
        if self._stopped.is_set() or not current:  # closed, or ended for its deadline just as it finished
            sock.close()
            return
        self._on_connection(Connection(sock, where))

    def _drop(self, sock: socket.socket) -> None:
        with self._lock:
            self._handshaking.pop(sock, None)
        sock.close()

    def close(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        _shut(self._server)
        self._server.close()
        with self._lock:
            pending, self._handshaking = list(self._handshaking), {}
        for sock in pending:
            _shut(sock)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
