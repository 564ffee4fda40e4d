"""The handshake every cluster connection starts with: both ends prove the secret; anything else is refused
before a byte is unpickled."""

from __future__ import annotations

import socket
import threading

import pytest

from fluvial.runtime.network.auth import (
    CHALLENGE_BYTES,
    MAGIC,
    AuthenticationError,
    accept_handshake,
    connect_handshake,
    new_secret,
)

pytestmark = pytest.mark.timeout(20)


def handshake(server_secret: bytes, client_secret: bytes) -> tuple[BaseException | None, BaseException | None]:
    server_end, client_end = socket.socketpair()
    outcome: dict[str, BaseException | None] = {}

    def serve() -> None:
        try:
            accept_handshake(server_end, server_secret, timeout=5)
            outcome["server"] = None
        except BaseException as error:  # noqa: BLE001
            outcome["server"] = error
        finally:
            server_end.close()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        connect_handshake(client_end, client_secret, timeout=5)
        client_error = None
    except BaseException as error:  # noqa: BLE001
        client_error = error
    finally:
        client_end.close()
    thread.join(10)
    return outcome["server"], client_error


def test_the_same_secret_authenticates_both_ways():
    secret = new_secret()
    assert handshake(secret, secret) == (None, None)


def test_a_wrong_secret_is_refused_by_the_accepting_side():
    server_error, client_error = handshake(new_secret(), new_secret())
    assert isinstance(server_error, AuthenticationError)
    assert "wrong" in str(server_error)
    assert isinstance(client_error, AuthenticationError)  # the server hung up instead of answering


def test_a_peer_that_is_not_fluvial_is_refused_by_the_connecting_side():
    server_end, client_end = socket.socketpair()
    server_end.sendall(b"HTTP/1.1" + b"\0" * CHALLENGE_BYTES)
    with pytest.raises(AuthenticationError, match="magic"):
        connect_handshake(client_end, new_secret(), timeout=2)
    server_end.close()
    client_end.close()


def test_a_short_answer_then_close_is_refused():
    server_end, client_end = socket.socketpair()
    result: list[BaseException] = []
    thread = threading.Thread(target=lambda: _capture(result, accept_handshake, server_end, new_secret(), 2))
    thread.start()
    assert client_end.recv(len(MAGIC) + CHALLENGE_BYTES)
    client_end.sendall(b"short")
    client_end.close()
    thread.join(10)
    assert isinstance(result[0], AuthenticationError) and "closed" in str(result[0])


def test_a_silent_peer_times_out():
    server_end, client_end = socket.socketpair()
    with pytest.raises(AuthenticationError):
        accept_handshake(server_end, new_secret(), timeout=0.2)
    server_end.close()
    client_end.close()


def test_a_reflected_answer_does_not_authenticate():
    """A server that only echoes the client's own challenge back cannot pass as knowing the secret."""
    secret = new_secret()
    server_end, client_end = socket.socketpair()
    errors: list[BaseException] = []

    def reflecting_server() -> None:
        challenge = b"x" * CHALLENGE_BYTES
        server_end.sendall(MAGIC + challenge)
        server_end.recv(32)  # the client's answer
        theirs = server_end.recv(CHALLENGE_BYTES)
        server_end.sendall(theirs.ljust(32, b"\0"))  # not a MAC of it

    thread = threading.Thread(target=reflecting_server)
    thread.start()
    try:
        connect_handshake(client_end, secret, timeout=2)
    except AuthenticationError as error:
        errors.append(error)
    thread.join(5)
    assert errors and "wrong" in str(errors[0])
    server_end.close()
    client_end.close()


def test_a_short_secret_is_rejected():
    server_end, client_end = socket.socketpair()
    with pytest.raises(ValueError, match="32"):
        accept_handshake(server_end, b"too short")
    server_end.close()
    client_end.close()


def _capture(into: list, function, *args) -> None:
    try:
        function(*args)
    except BaseException as error:  # noqa: BLE001
        into.append(error)
