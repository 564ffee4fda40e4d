"""A Listener cannot be starved or stopped by its peers: handshakes are bounded in number and in time, the
accept loop outlives any error, and close() releases the port at once."""

from __future__ import annotations

import socket
import threading

import pytest

from fluvial.runtime.network import connection as connection_module
from fluvial.runtime.network.auth import new_secret
from fluvial.runtime.network.connection import Listener, connect
from fluvial.testing import wait_until

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def listening():
    """listen(**options) -> (listener, the connections it handed over); every listener is closed afterwards."""
    made: list[Listener] = []
    secret = new_secret()

    def listen(**options) -> tuple[Listener, list]:
        accepted: list = []
        listener = Listener(secret, accepted.append, "test", **options)
        made.append(listener)
        return listener, accepted

    listen.secret = secret
    yield listen
    for listener in made:
        listener.close()


def silent_peers(address, count: int) -> list[socket.socket]:
    return [socket.create_connection(address) for _ in range(count)]


def test_slow_peers_never_keep_a_cluster_process_out(listening):
    listener, accepted = listening(max_handshakes=4)
    peers = silent_peers(listener.address, 40)
    try:
        wait_until(lambda: listener.handshakes_in_progress == 4, what="the handshake pool to fill")
        threads_before = threading.active_count()
        connect(listener.address, listening.secret, timeout=5).close()
        wait_until(lambda: len(accepted) == 1, what="the cluster process's connection")
        assert listener.handshakes_in_progress <= 4
        assert threading.active_count() <= threads_before + 2  # no thread per slow peer
    finally:
        for peer in peers:
            peer.close()


def test_a_handshake_has_a_deadline_however_slowly_the_peer_answers(listening):
    listener, _ = listening(handshake_deadline=0.6)
    [peer] = silent_peers(listener.address, 1)
    peer.settimeout(5)
    try:
        wait_until(lambda: listener.handshakes_in_progress == 1, what="the handshake")
        peer.recv(64)  # the challenge
        for _ in range(60):  # a byte every 0.1 s: each read is quick, the whole handshake is not
            try:
                peer.sendall(b"x")
            except OSError:
                break
            if listener.handshakes_in_progress == 0:
                break
            threading.Event().wait(0.1)
        assert listener.handshakes_in_progress == 0, "the dripping peer kept its handshake"
    finally:
        peer.close()


def test_the_accept_loop_survives_a_thread_that_cannot_start(listening, monkeypatch):
    listener, accepted = listening()
    real_thread = threading.Thread
    failures = iter([RuntimeError("can't start new thread")])

    class Flaky(real_thread):
        def start(self) -> None:
            failure = next(failures, None)
            if failure is not None and self.name.endswith("-handshake"):
                raise failure
            super().start()

    monkeypatch.setattr(connection_module.threading, "Thread", Flaky)
    with pytest.raises(Exception):
        connect(listener.address, listening.secret, timeout=2)
    connect(listener.address, listening.secret, timeout=5).close()
    wait_until(lambda: len(accepted) == 1, what="the connection after the failure")


def test_close_releases_the_port_at_once(listening):
    listener, _ = listening()
    address = listener.address
    listener.close()
    assert not listener._thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(address, timeout=2).close()
