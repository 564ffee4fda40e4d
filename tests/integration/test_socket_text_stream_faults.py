"""socket_text_stream against hostile or unlucky peers (issue 13, defect 12): invalid UTF-8 fails the job naming
the byte offset, a line without a delimiter is bounded, a reset reconnects while a clean close ends the stream —
each configurable; with the receiver in this process and in a TaskManager process. Peers are threads of the test
on 127.0.0.1."""

from __future__ import annotations

import socket
import struct
import threading
import time
from datetime import timedelta

import pytest

from fluvial.common.configuration import Configuration
from fluvial.common.errors import JobExecutionException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.socket import DisconnectAction, SocketTextReceiver
from fluvial.testing import ExecutionMode

pytestmark = pytest.mark.timeout(60)


def environment(mode: ExecutionMode) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("receiver.block-interval", "20 ms").set_string("local.taskmanager.mode", mode.value)
    )
    env.set_parallelism(1)
    return env


class Peer:
    """Accepts connections one after another; connection i gets `scripts[i]`: a list of byte chunks, then
    "close" (a clean FIN) or "reset" (an RST: SO_LINGER 0). Waits for `after` connections before it closes."""

    def __init__(self, *scripts: tuple[list[bytes], str]) -> None:
        self.scripts = list(scripts)
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._serve, name="peer", daemon=True).start()

    def _serve(self) -> None:
        with self._server:
            for chunks, ending in self.scripts:
                connection, _ = self._server.accept()
                self.connections += 1
                for chunk in chunks:
                    connection.sendall(chunk)
                    time.sleep(0.05)
                if ending == "reset":
                    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                connection.close()


def run(env, stream) -> list[str]:
    return list(stream.execute_and_collect())


def failure_of(env, stream) -> str:
    stream.add_sink(lambda value: None)
    with pytest.raises(JobExecutionException) as raised:
        env.execute("socket faults")
    return str(raised.value)


def test_invalid_utf8_fails_the_job_naming_the_byte_offset(mode):
    peer = Peer(([b"good line\n", b"caf\xc3\xa9 ok\nbad \xff byte\n"], "close"))
    env = environment(mode)
    message = failure_of(env, env.socket_text_stream("127.0.0.1", peer.port))
    # "good line\n" is 10 bytes, "café ok\n" 9: the line starts at 19, the 0xff is its 5th byte
    assert "the byte 0xff at offset 23 of the connection is not valid utf-8" in message, message
    assert f"127.0.0.1:{peer.port}" in message


def test_a_line_without_a_delimiter_is_bounded(mode):
    peer = Peer(([b"short\n", b"x" * 3000], "close"))
    env = environment(mode)
    message = failure_of(env, env.socket_text_stream("127.0.0.1", peer.port, max_record_size=1000))
    assert (
        "the record starting at byte offset 6 of the connection is longer than max_record_size (1000 bytes)" in message
    ), message


def test_a_reset_reconnects_and_a_clean_close_ends_the_stream(mode):
    peer = Peer(([b"one\ntwo\npart", b"ial"], "reset"), ([b"three\n", b"four"], "close"))
    env = environment(mode)
    assert run(env, env.socket_text_stream("127.0.0.1", peer.port)) == ["one", "two", "three", "four"]
    assert peer.connections == 2


def test_on_peer_reset_fail_fails_the_job(mode):
    peer = Peer(([b"one\n"], "reset"))
    env = environment(mode)
    stream = env.socket_text_stream("127.0.0.1", peer.port, on_peer_reset=DisconnectAction.FAIL)
    assert "socket_text_stream on_peer_reset=FAIL" in failure_of(env, stream)


def test_on_peer_close_reconnect_reads_the_next_connection_too(mode):
    peer = Peer(([b"one\n"], "close"), ([b"two\n"], "reset"))
    env = environment(mode)
    receiver = SocketTextReceiver(
        "127.0.0.1",
        peer.port,
        max_retries=0,
        on_peer_close=DisconnectAction.RECONNECT,
        on_peer_reset=DisconnectAction.END_STREAM,
    )
    receiver.restart_strategy = RestartStrategies.exponential_delay_restart(
        timedelta(milliseconds=10), timedelta(milliseconds=10), 1.0, timedelta(minutes=1), 0.0, 5
    )
    assert run(env, env.add_receiver(receiver, "reconnecting")) == ["one", "two"]


@pytest.mark.parametrize(
    "options, problem",
    [
        ({"encoding": "utf-16"}, "reads utf-8, ascii or latin-1"),
        ({"max_record_size": 0}, "max_record_size must be a positive number of bytes"),
        ({"on_peer_close": "reconnect"}, "on_peer_close must be a DisconnectAction"),
    ],
)
def test_bad_options_are_clear_errors(options, problem):
    with pytest.raises(ValueError, match=problem):
        SocketTextReceiver("127.0.0.1", 1, **options)
