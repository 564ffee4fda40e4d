"""Exactly-once through a push source that cannot replay (issue 5, DESIGN 2.5).

A line server (a thread of the test) sends each of N lines exactly once overall: it keeps a cursor, and a
client that connects after another one dropped continues from the cursor. Nothing upstream of the receiver
can replay, so every line the job outputs exactly once proves that the receiver path (BlockGenerator, the
write-ahead log, the ReceiverTracker and the receiver source's checkpointed block position) neither lost nor
duplicated anything across the failure.

Two failures:
1. A user function downstream of `socket_text_stream` raises once mid-stream, after at least two completed
   checkpoints. The job restarts from its latest checkpoint; the receiver outlives the failover (the server
   sees one connection), and the restored source replays the blocks after its checkpointed position.
2. The receiver's own thread crashes mid-stream (an exception escapes `on_start`); the supervisor restarts
   it. This receiver is reliable in Spark's sense: it asks the server for a batch, stores the batch with
   `store(list)` (which returns once the batch is in the WAL) and only then acknowledges it; the server
   advances its cursor only on the acknowledgement. The crash falls between reading a batch and storing it,
   so the server must send that batch again to the next connection.

The oracle reads the committed (visible) FileSink part files only: every line 0..N-1 exactly once.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter

import pytest

from fluvial.common import Encoder
from fluvial.common.configuration import Configuration
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    RollingPolicy,
)
from fluvial.receiver import Receiver
from fluvial.testing import ExecutionMode, environment

N = 20_000
CHUNK = 100  # lines per send (stream mode) or per batch (ack mode)
PAUSE_S = 0.01  # between chunks: ~2 s of stream, so checkpoints every 100 ms complete mid-stream


def line(i: int) -> str:
    return f"line-{i:06d}"


class LineServer:
    """Serves lines 0..n-1 on 127.0.0.1, each exactly once overall, to one client connection at a time.

    - mode "stream": pushes `chunk` delimited lines at a time with a pause between chunks; the cursor advances
      once a chunk was handed to the socket. After the last line it closes the connection and stops.
    - mode "ack": a request/response protocol. The client sends `NEXT\\n`; the server answers with the next
      `chunk` lines and `END\\n` (or just `EOF\\n` when every line was acknowledged). The client sends `ACK\\n`
      once it stored the batch; only then does the cursor advance. A connection that drops before its ACK gets
      the same batch again on the next connection.
    """

    def __init__(self, n: int, mode: str, chunk: int = CHUNK, pause_s: float = PAUSE_S) -> None:
        self.lines = [line(i) for i in range(n)]
        self.mode = mode
        self.chunk = chunk
        self.pause_s = pause_s
        self.cursor = 0
        self.connections = 0
        self.unacknowledged_drops = 0  # ack mode: connections that dropped holding a batch not acknowledged
        self.finished = threading.Event()
        self.hold_at: int | None = None  # ack mode: serve nothing past this line until `resume` is set
        self.resume = threading.Event()
        self.errors: list[BaseException] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"line-server-{mode}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        try:
            while not self._closing.is_set() and self.cursor < len(self.lines):
                try:
                    connection, _ = self._listener.accept()
                except TimeoutError:
                    continue
                self.connections += 1
                with connection:
                    connection.settimeout(None)
                    try:
                        (self._stream if self.mode == "stream" else self._answer)(connection)
                    except OSError:
                        pass  # the client dropped: the next connection continues from the cursor
        except BaseException as error:  # noqa: BLE001 - surfaced by the test
            self.errors.append(error)
        finally:
            if self.cursor >= len(self.lines):
                self.finished.set()

    def _stream(self, connection: socket.socket) -> None:
        while self.cursor < len(self.lines) and not self._closing.is_set():
            batch = self.lines[self.cursor : self.cursor + self.chunk]
            connection.sendall("".join(f"{text}\n" for text in batch).encode())
            self.cursor += len(batch)
            time.sleep(self.pause_s)
        if self.cursor >= len(self.lines):
            connection.shutdown(socket.SHUT_WR)  # the peer closes: the stream ends

    def _answer(self, connection: socket.socket) -> None:
        reader = connection.makefile("r", encoding="utf-8", newline="\n")
        while not self._closing.is_set():
            request = reader.readline()
            if not request:
                return
            if request != "NEXT\n":
                raise AssertionError(f"unexpected request {request!r}")
            if self.cursor >= len(self.lines):
                connection.sendall(b"EOF\n")
                return
            while self.hold_at is not None and self.cursor >= self.hold_at and not self.resume.is_set():
                if self._closing.wait(0.01):
                    return
            batch = self.lines[self.cursor : self.cursor + self.chunk]
            connection.sendall("".join(f"{text}\n" for text in batch).encode() + b"END\n")
            if reader.readline() != "ACK\n":
                self.unacknowledged_drops += 1
                return
            self.cursor += len(batch)
            time.sleep(self.pause_s)


class FailOnceMap(MapFunction):
    """Identity on lines. On the first attempt, once it heard of `fail_after` completed checkpoints, it raises
    once (the marker file is created atomically, so exactly one failure happens over all attempts). The next
    attempt logs the first line it sees, which shows where the restored source resumed."""

    def __init__(self, marker: str, first_seen_log: str, fail_after: int = 2) -> None:
        self.marker = marker
        self.first_seen_log = first_seen_log
        self.fail_after = fail_after

    def open(self, runtime_context):
        self.completed = 0
        self.seen = 0
        self.after_failure = os.path.exists(self.marker)

    def notify_checkpoint_complete(self, checkpoint_id):
        self.completed += 1

    def map(self, value):
        if self.seen == 0 and self.after_failure:
            with open(self.first_seen_log, "a") as log:
                log.write(f"{value}\n")
        self.seen += 1
        if not self.after_failure and self.completed >= self.fail_after:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.write(fd, f"{self.completed} {value}".encode())
            os.close(fd)
            raise RuntimeError(f"injected failure at {value} after {self.completed} checkpoints")
        return value


class BatchAckReceiver(Receiver):
    """A reliable receiver over LineServer's ack protocol: NEXT, read a batch, `store(list)` (returns once
    the batch is in the WAL), ACK. On its first start it crashes after `crash_after` batches, between reading
    a batch and storing it (the marker file makes it once over all starts)."""

    def __init__(self, port: int, marker: str, crash_after: int) -> None:
        super().__init__()
        self.port = port
        self.marker = marker
        self.crash_after = crash_after
        self._socket: socket.socket | None = None

    def name(self) -> str:
        return f"BatchAckReceiver 127.0.0.1:{self.port}"

    def on_start(self) -> None:
        self._socket = socket.create_connection(("127.0.0.1", self.port))
        # ACK then NEXT are two small writes in a row: without this, Nagle holds NEXT for the server's delayed
        # acknowledgement of ACK (~40 ms a round)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = self._socket.makefile("r", encoding="utf-8", newline="\n")
        batches = 0
        while not self.is_stopped():
            self._socket.sendall(b"NEXT\n")
            batch: list[str] = []
            for text in iter(reader.readline, ""):
                if text in ("END\n", "EOF\n"):
                    break
                batch.append(text.rstrip("\n"))
            else:
                raise ConnectionError("the server closed the connection mid-batch")
            if text == "EOF\n":
                self.stop("the server sent every line")
                return
            batches += 1
            if batches > self.crash_after and not os.path.exists(self.marker):
                with open(self.marker, "w") as handle:
                    handle.write(batch[0])
                raise RuntimeError(f"injected receiver crash holding the unstored batch from {batch[0]}")
            self.store(batch)  # reliable: the block is in the WAL when this returns
            self._socket.sendall(b"ACK\n")

    def on_stop(self) -> None:
        sock, self._socket = self._socket, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def committed_lines(base) -> tuple[list[str], list[str]]:
    """(lines of every visible part file, paths of hidden in-progress/pending files)."""
    lines, hidden = [], []
    for root, _, names in os.walk(base):
        for name in names:
            path = os.path.join(root, name)
            if name.startswith("."):
                hidden.append(path)
                continue
            with open(path, encoding="utf-8") as handle:
                lines.extend(handle.read().splitlines())
    return lines, hidden


def assert_every_line_exactly_once(lines: list[str], n: int) -> None:
    counts = Counter(lines)
    expected = {line(i) for i in range(n)}
    missing = sorted(expected - counts.keys())
    duplicated = sorted(text for text, count in counts.items() if count > 1)
    unexpected = sorted(counts.keys() - expected)
    assert not missing, f"{len(missing)} lines lost, first {missing[:5]}"
    assert not duplicated, f"{len(duplicated)} lines duplicated, first {duplicated[:5]}"
    assert not unexpected, f"lines the server never sent: {unexpected[:5]}"
    assert len(lines) == n


def reliable_env(tmp_path, mode: ExecutionMode, block_interval: str = "50 ms") -> StreamExecutionEnvironment:
    """`mode`: the receiver, its write-ahead log and the job's tasks in this process or a TaskManager process."""
    conf = (
        Configuration()
        .set_string("receiver.write-ahead-log.enable", "true")
        .set_string("receiver.block-interval", block_interval)
    )
    env = environment(mode, conf)
    env.set_parallelism(1)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{tmp_path / 'checkpoints'}")
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 100))
    return env


def file_sink(out) -> FileSink:
    return (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )


def wal_segments(tmp_path) -> list[str]:
    return [name for _, _, names in os.walk(tmp_path / "checkpoints") for name in names if name.startswith("log-")]


@pytest.mark.timeout(120)
def test_user_function_failure_mid_stream_keeps_socket_lines_exactly_once(tmp_path, mode):
    server = LineServer(N, "stream")
    out, marker, first_seen = tmp_path / "out", tmp_path / "failed-once", tmp_path / "first-seen"
    try:
        env = reliable_env(tmp_path, mode)
        (
            env.socket_text_stream("127.0.0.1", server.port)
            .map(FailOnceMap(str(marker), str(first_seen)))
            .sink_to(file_sink(out))
        )
        client = env.execute_async("socket exactly-once")
        client.get_job_execution_result().result(timeout=100)
        assert server.finished.is_set() and not server.errors
    finally:
        server.close()

    completed, failed_at = marker.read_text().split()
    assert int(completed) >= 2, "the failure came before two checkpoints completed"
    assert failed_at != line(N - 1), "the failure did not happen mid-stream"
    assert client._job_master.restarts == 1
    # the restored source resumed after its checkpointed block, not from the first line
    resumed_at = first_seen.read_text().split()[0]
    assert resumed_at > line(0), "the restarted attempt replayed from the first line: no position was restored"
    # the receiver outlived the failover of the job's tasks: one connection for the whole job
    assert server.connections == 1
    assert wal_segments(tmp_path), "the write-ahead log was never written"
    lines, _hidden = committed_lines(out)  # a failed attempt's in-progress files stay hidden, as in Flink
    assert_every_line_exactly_once(lines, N)


@pytest.mark.timeout(120)
def test_receiver_thread_crash_mid_stream_keeps_lines_exactly_once(tmp_path, mode):
    server = LineServer(N, "ack")
    out, marker = tmp_path / "out", tmp_path / "crashed-once"
    try:
        # each reliable store(list) returns once its block is cut and in the WAL: a short block interval keeps
        # the 200 request/store/acknowledge rounds quick
        env = reliable_env(tmp_path, mode, block_interval="10 ms")
        receiver = BatchAckReceiver(server.port, str(marker), crash_after=N // CHUNK // 3)
        env.add_receiver(receiver, "acked lines").sink_to(file_sink(out))
        client = env.execute_async("receiver crash exactly-once")
        client.get_job_execution_result().result(timeout=100)
        assert server.finished.is_set() and not server.errors
    finally:
        server.close()

    crashed_on = marker.read_text()
    assert line(0) < crashed_on < line(N - 1), f"the crash was not mid-stream (batch from {crashed_on})"
    # the supervisor restarted the crashed receiver: a second connection, which got the unstored batch again
    assert server.connections == 2
    assert server.unacknowledged_drops == 1
    assert client._job_master.restarts == 0, "the receiver's crash must not fail the job's tasks"
    lines, _hidden = committed_lines(out)  # a failed attempt's in-progress files stay hidden, as in Flink
    assert_every_line_exactly_once(lines, N)
