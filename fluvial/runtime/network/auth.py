"""Mutual HMAC challenge-response on a fresh connection, before anything else is read from it.

Every connection of a cluster — control and data — starts with this handshake, so nothing is unpickled from a
peer that does not hold the cluster's secret. Steps, numbered (both sides run them, mirrored):
1. The accepting side sends MAGIC + a 32-byte random challenge.
2. The connecting side answers HMAC-SHA256(secret, "client" + challenge), then sends its own challenge.
3. The accepting side checks the answer (constant-time compare), answers HMAC-SHA256(secret, "server" +
   challenge) to the connecting side's challenge.
4. The connecting side checks that answer.
A wrong answer, a wrong magic, a short read or a silent peer (`timeout` seconds) raises AuthenticationError;
the caller drops the connection and logs it. Only fixed-size raw bytes are read during the handshake.
The labels "client"/"server" in the MACs keep an answer from being reflected back to its sender.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import socket
from collections.abc import Iterator

MAGIC = b"FLUVIAL1"
CHALLENGE_BYTES = 32
DIGEST_BYTES = hashlib.sha256().digest_size
MIN_SECRET_BYTES = 32
HANDSHAKE_TIMEOUT_S = 10.0


class AuthenticationError(ConnectionError):
    """The peer did not prove it holds the cluster's secret."""


def new_secret() -> bytes:
    """A fresh per-cluster secret. It reaches child processes through their start arguments (a pipe), never a
    command line."""
    return os.urandom(MIN_SECRET_BYTES)


def _digest(secret: bytes, label: bytes, challenge: bytes) -> bytes:
    return hmac.new(secret, label + challenge, hashlib.sha256).digest()


def _check_secret(secret: bytes) -> None:
    if not isinstance(secret, bytes) or len(secret) < MIN_SECRET_BYTES:
        raise ValueError(f"a cluster secret is at least {MIN_SECRET_BYTES} random bytes")


def read_exactly(sock: socket.socket, count: int) -> bytes:
    """`count` bytes from `sock`; ConnectionError if the peer closes first (a short read)."""
    chunks = bytearray()
    while len(chunks) < count:
        chunk = sock.recv(count - len(chunks))
        if not chunk:
            raise ConnectionError(f"the peer closed the connection after {len(chunks)} of {count} bytes")
        chunks += chunk
    return bytes(chunks)


def accept_handshake(sock: socket.socket, secret: bytes, timeout: float = HANDSHAKE_TIMEOUT_S) -> None:
    """The accepting side's steps 1 and 3. Raises AuthenticationError; the socket's timeout is restored."""
    with _handshake(sock, secret, timeout):
        challenge = os.urandom(CHALLENGE_BYTES)
        sock.sendall(MAGIC + challenge)
        answer = read_exactly(sock, DIGEST_BYTES)
        if not hmac.compare_digest(answer, _digest(secret, b"client", challenge)):
            raise AuthenticationError("the peer's answer to the challenge is wrong (not this cluster's secret)")
        theirs = read_exactly(sock, CHALLENGE_BYTES)
        sock.sendall(_digest(secret, b"server", theirs))


def connect_handshake(sock: socket.socket, secret: bytes, timeout: float = HANDSHAKE_TIMEOUT_S) -> None:
    """The connecting side's steps 2 and 4: answer, then make the accepting side prove itself too."""
    with _handshake(sock, secret, timeout):
        header = read_exactly(sock, len(MAGIC) + CHALLENGE_BYTES)
        if header[: len(MAGIC)] != MAGIC:
            raise AuthenticationError("the peer is not a fluvial endpoint (wrong magic bytes)")
        sock.sendall(_digest(secret, b"client", header[len(MAGIC) :]))
        challenge = os.urandom(CHALLENGE_BYTES)
        sock.sendall(challenge)
        answer = read_exactly(sock, DIGEST_BYTES)
        if not hmac.compare_digest(answer, _digest(secret, b"server", challenge)):
            raise AuthenticationError("the peer's answer to the challenge is wrong (not this cluster's secret)")


@contextlib.contextmanager
def _handshake(sock: socket.socket, secret: bytes, timeout: float) -> Iterator[None]:
    """One side's handshake under `timeout`: any socket failure becomes an AuthenticationError; the socket's own
    timeout is restored afterwards."""
    _check_secret(secret)
    previous = sock.gettimeout()
    sock.settimeout(timeout)
    try:
        yield
    except AuthenticationError:
        raise
    except (OSError, ConnectionError) as error:
        raise AuthenticationError(f"the handshake failed: {error}") from error
    finally:
        sock.settimeout(previous)
