"""The Receiver API in running jobs (issue 5): custom receivers storing records (with metadata, one by one and
reliably), a crashing on_start reported and restarted, restart() after its delay, stop() ending the stream
with everything stored before it, and the bad input the issue names — something that is not a Receiver, a
refused connection, the write-ahead log without a checkpoint directory."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from fluvial.common.configuration import Configuration
from fluvial.common.errors import (
    ConfigurationError,
    InvalidJobError,
    JobExecutionException,
)
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.receiver import ReceiverStoppedError
from fluvial.receiver import Receiver
from fluvial.testing import EventLog, ExecutionMode, wait_until
from services.server import refusing_port

pytestmark = pytest.mark.timeout(60)


def environment(mode: ExecutionMode | None = None, **settings: str) -> StreamExecutionEnvironment:
    """Parallelism 1, in execution `mode` (None: the default, auto, which is threads at parallelism 1)."""
    conf = Configuration().set_string("receiver.block-interval", "20 ms")
    if mode is not None:
        conf.set_string("local.taskmanager.mode", mode.value)
    for key, value in settings.items():
        conf.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    return env


class MetadataReceiver(Receiver):
    """Stores records one by one, every third with metadata (an offset), from a thread of its own that
    on_start starts (the callback style); then a reliable batch with metadata; then stop()."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def name(self) -> str:
        return "metadata-receiver"

    def on_start(self) -> None:
        threading.Thread(target=self._produce, name="metadata-producer", daemon=True).start()

    def _produce(self) -> None:
        for i in range(self.n):
            if i % 3 == 0:
                self.store(("single", i), {"offset": i})
            else:
                self.store(("single", i))
        self.store([("batch", i) for i in range(100)], {"batch": 1})
        self.stop("produced everything")

    def on_stop(self) -> None:
        pass


def test_a_custom_receiver_storing_records_with_metadata_reaches_the_job_in_order(mode):
    env = environment(mode)
    output = list(env.add_receiver(MetadataReceiver(5_000), "metadata").execute_and_collect())
    singles = [i for kind, i in output if kind == "single"]
    batch = [i for kind, i in output if kind == "batch"]
    # single records keep their order; the reliable batch is one block, whole and in order
    assert singles == list(range(5_000))
    assert batch == list(range(100))
    assert len(output) == 5_100


class CrashingReceiver(Receiver):
    """First start: stores one record and raises. Second start: waits until the test looked at the
    supervisor, stores another record and stops."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[float] = []
        self.looked = threading.Event()

    def name(self) -> str:
        return "crashing-receiver"

    def on_start(self) -> None:
        self.starts.append(time.monotonic())
        if len(self.starts) == 1:
            self.store("before the crash")
            raise OSError("device unplugged")
        self.looked.wait(20)
        self.store("after the restart")
        self.stop("done")

    def on_stop(self) -> None:
        pass


def test_on_start_raising_is_reported_with_the_receivers_name_and_the_receiver_restarted():
    """Thread mode: the test holds the very receiver object the job runs, and looks at its supervisor on the
    TaskManager object (in process mode both live in the TaskManager process)."""
    env = environment(ExecutionMode.THREADS)
    receiver = CrashingReceiver()
    env.add_receiver(receiver, "crashing").map(lambda record: record.upper()).print()
    client = env.execute_async("crashing receiver")
    try:
        wait_until(lambda: len(receiver.starts) == 2, what="the receiver to be restarted")
        supervisor = _supervisor(client, 1)
        assert supervisor.restarts == 1
        message, error = supervisor.errors[0]
        assert "crashing-receiver" in message and "device unplugged" in message
        assert isinstance(error, OSError)
        assert receiver.starts[1] - receiver.starts[0] >= 0.09  # the crash restart delay (0.1 s)
    finally:
        receiver.looked.set()
    client.get_job_execution_result().result(timeout=30)  # the job itself never failed


def _supervisor(client, stream_id: int):
    """The supervisor of receiver stream `stream_id`, found on the TaskManager that runs it."""
    for task_manager in client.cluster.task_managers:
        for services in task_manager.receivers.services(str(client.get_job_id())):
            if stream_id in services.supervisors:
                return services.supervisors[stream_id]
    raise AssertionError(f"no TaskManager runs receiver stream {stream_id}")


class RestartingReceiver(Receiver):
    """Reports its starts (with the time) and stops to `events`, wherever it runs."""

    def __init__(self, delay: float, events: EventLog) -> None:
        super().__init__()
        self.delay = delay
        self.events = events
        self.started = 0

    def on_start(self) -> None:
        self.started += 1
        self.events.record("start", time.monotonic())
        if self.started == 1:
            self.store(1)
            self.restart("reconnecting", delay=self.delay)
            return
        self.store(2)
        self.stop("done")

    def on_stop(self) -> None:
        self.events.record("stop")


def test_restart_runs_on_stop_and_starts_again_after_the_delay(tmp_path, mode):
    env = environment(mode)
    events = EventLog(tmp_path / "events")
    output = list(env.add_receiver(RestartingReceiver(0.4, events), "restarting").execute_and_collect())
    assert output == [1, 2]
    starts = events.values("start")  # time.monotonic() is the machine's clock: comparable across processes
    assert len(starts) == 2
    assert starts[1] - starts[0] >= 0.4
    assert events.count("stop") == 2  # once for the restart, once for the final stop


class AckingReceiver(Receiver):
    """Stores one-record batches reliably and counts a record as acknowledged (an event) only when store
    returned; it ignores is_stopped() on purpose, so it keeps storing past a stop() that another thread calls."""

    def __init__(self, stop_after: int, limit: int, events: EventLog) -> None:
        super().__init__()
        self.stop_after, self.limit = stop_after, limit
        self.events = events

    def on_start(self) -> None:
        for i in range(self.limit):
            if i == self.stop_after:
                threading.Thread(target=self.stop, args=("enough",), daemon=True).start()
            if i == self.stop_after + 10:
                wait_until(self.is_stopped, what="stop() on the other thread")  # later stores follow stop
            try:
                self.store([i])
            except ReceiverStoppedError as error:
                self.events.record("refused", repr(error))
                return
            self.events.record("acknowledged", i)

    def on_stop(self) -> None:
        pass


def test_stop_ends_the_stream_with_everything_acknowledged_before_it_in_order(tmp_path, mode):
    env = environment(mode)
    events = EventLog(tmp_path / "events")
    output = list(env.add_receiver(AckingReceiver(300, 5_000, events), "acking").execute_and_collect())
    assert events.values("refused"), "store(list) after stop() must refuse, not pretend to store"
    acknowledged = events.values("acknowledged")
    assert len(acknowledged) < 5_000
    assert output == acknowledged  # acknowledged exactly when it reached the job


def test_add_receiver_rejects_what_is_not_a_receiver():
    env = environment()

    class LooksLikeOne:
        def on_start(self):
            pass

        def on_stop(self):
            pass

    with pytest.raises(InvalidJobError, match=r"add_receiver expects a fluvial.receiver.Receiver, got .*LooksLikeOne"):
        env.add_receiver(LooksLikeOne(), "impostor")


def test_a_refused_connection_fails_the_job_naming_host_and_port_after_the_retries(mode):
    with refusing_port() as port:
        env = environment(mode)
        env.socket_text_stream("127.0.0.1", port, max_retries=1).print()
        client = env.execute_async("nobody listens")
        with pytest.raises(JobExecutionException) as raised:
            client.get_job_execution_result().result(timeout=30)
    message = str(raised.value)
    assert f"127.0.0.1:{port}" in message
    assert "after 2 attempts" in message  # the first try and one retry
    causes = []
    error: BaseException | None = raised.value
    while error is not None:
        causes.append(error)
        error = error.__cause__
    assert any(isinstance(cause, ConnectionError) for cause in causes), causes


@pytest.mark.parametrize("checkpointing", ["off", "jobmanager-storage", "remote-dir"])
def test_the_write_ahead_log_without_a_local_checkpoint_directory_is_a_clear_error_at_submission(checkpointing):
    env = environment(**{"receiver.write-ahead-log.enable": "true"})
    if checkpointing != "off":
        env.enable_checkpointing(100)
    if checkpointing == "remote-dir":
        env.get_checkpoint_config().set_checkpoint_storage_dir("memory://receiver-wal-test")  # not a local path
    with refusing_port() as port:
        env.socket_text_stream("127.0.0.1", port, max_retries=0).print()
        with pytest.raises(
            ConfigurationError,
            match=r"receiver.write-ahead-log.enable is true but the job has no "
            r"checkpoint directory: set state.checkpoints.dir",
        ):
            env.execute_async("wal without a directory")


class CountingReceiver(Receiver):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def on_start(self) -> None:
        for start in range(0, self.n, 100):
            self.store(list(range(start, min(start + 100, self.n))))
        self.stop("done")

    def on_stop(self) -> None:
        pass


def test_the_write_ahead_log_under_state_checkpoints_dir_is_written(tmp_path, mode):
    directory = tmp_path / "checkpoints"
    env = environment(
        mode, **{"receiver.write-ahead-log.enable": "true", "state.checkpoints.dir": f"file://{directory}"}
    )
    output = list(env.add_receiver(CountingReceiver(1_000), "counting").execute_and_collect())
    assert output == list(range(1_000))
    data_logs = [root for root, _, names in os.walk(directory) if "receivedData" in root and names]
    tracker_logs = [root for root, _, names in os.walk(directory) if root.endswith("receivedBlockMetadata")]
    assert data_logs, f"no receiver data WAL under {directory}"
    assert tracker_logs, f"no tracker WAL under {directory}"


def serve_once(chunks: list[bytes]) -> int:
    """A one-connection server on 127.0.0.1 sending `chunks` with pauses between them (each its own read),
    then closing; returns its port."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with server:
            connection, _ = server.accept()
            with connection:
                for chunk in chunks:
                    connection.sendall(chunk)
                    time.sleep(0.1)

    threading.Thread(target=serve, name="serve-once", daemon=True).start()
    return server.getsockname()[1]


def test_socket_text_stream_keeps_characters_split_across_reads_whole_and_ends_when_the_peer_closes(mode):
    port = serve_once([b"caf\xc3", b"\xa9\nwindows line\r\n\xe2\x82", b"\xac 5\nno newline at the end"])
    env = environment(mode)
    output = list(env.socket_text_stream("127.0.0.1", port).execute_and_collect())
    assert output == ["café", "windows line", "€ 5", "no newline at the end"]


def test_socket_text_stream_with_a_custom_delimiter(mode):
    port = serve_once([b"a;b;", b"c\r;d"])
    env = environment(mode)
    output = list(env.socket_text_stream("127.0.0.1", port, delimiter=";").execute_and_collect())
    assert output == ["a", "b", "c\r", "d"]  # only the "\n" delimiter drops a trailing "\r" (as Flink)
