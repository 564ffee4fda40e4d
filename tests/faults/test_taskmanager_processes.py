"""Process mode under real faults: a TaskManager process SIGKILLed mid-job (exactly once, both backends), the
same without a restart strategy (the job fails naming the TaskManager and how it died), a stopped process
found by its missing heartbeats, a consumer process that stops reading (its producers' memory stays bounded),
strangers at every listening port (nothing unpickled, output intact), and Ctrl-C of the client (no process
left behind)."""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fluvial.common import Configuration, Encoder
from fluvial.common.errors import JobExecutionException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
from fluvial.testing import wait_until
from tests.faults.checkpointed_job import KEYS, CountPerKey
from tests.faults.test_process_kill import assert_exactly_once, committed_records, completed_checkpoints
from tests.processes import alive, descendants


class Tag(MapFunction):
    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.seen % 10 == 0:
            time.sleep(0.001)
        return (self.subtask, value % KEYS), value


def process_environment(**keys: str) -> StreamExecutionEnvironment:
    configuration = Configuration().set_string("local.taskmanager.mode", "process")
    for key, value in keys.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    return env


def checkpointed_job(
    tmp_path: Path, n: int, backend: str, restarts: bool, env: StreamExecutionEnvironment | None = None
) -> StreamExecutionEnvironment:
    """The job on `env` (default: TaskManager processes; the Ray fault tests pass theirs)."""
    env = env or process_environment()
    env.set_state_backend(EmbeddedRocksDBStateBackend() if backend == "rocksdb" else HashMapStateBackend())
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}"))
    env.set_restart_strategy(
        RestartStrategies.fixed_delay_restart(3, 100) if restarts else RestartStrategies.no_restart()
    )
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(NumberSequenceSource(1, n), source_name="numbers")
        .uid("numbers")
        .map(Tag())
        .uid("tag")
        .key_by(lambda record: record[0])
        .process(CountPerKey())
        .uid("count")
        .sink_to(sink)
        .uid("sink")
    )
    return env


def kill_a_task_manager_after_checkpoints(client, checkpoints: Path, at_least: int = 2) -> int:
    wait_until(
        lambda: (
            max(completed_checkpoints(checkpoints), default=0) >= at_least or client.get_job_execution_result().done()
        ),
        timeout=60,
        what=f"checkpoint {at_least}",
    )
    assert not client.get_job_execution_result().done(), "the job ended before a TaskManager was killed"
    victim = client.cluster.processes.pids[1]
    os.kill(victim, signal.SIGKILL)
    return victim


@pytest.mark.timeout(180)
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_a_task_manager_killed_mid_job_fails_over_and_the_output_is_exactly_once(tmp_path, backend):
    n = 60_000
    client = checkpointed_job(tmp_path, n, backend, restarts=True).execute_async("kill a TaskManager")
    victim = kill_a_task_manager_after_checkpoints(client, tmp_path / "chk")
    client.get_job_execution_result().result(timeout=150)
    assert client._job_master.restarts == 1
    assert victim not in client.cluster.processes.pids  # a replacement took its place
    records, _ = committed_records(tmp_path / "out")
    assert_exactly_once(records, n)


@pytest.mark.timeout(120)
def test_without_a_restart_strategy_the_job_fails_naming_the_task_manager_and_how_it_died(tmp_path):
    client = checkpointed_job(tmp_path, 1_000_000, "hashmap", restarts=False).execute_async("no restarts")
    victim = kill_a_task_manager_after_checkpoints(client, tmp_path / "chk", at_least=1)
    with pytest.raises(JobExecutionException) as info:
        client.get_job_execution_result().result(timeout=60)
    message = str(info.value)
    assert "TaskManager 1 was lost" in message and f"pid {victim}" in message and "SIGKILL" in message


class SlowOnce(MapFunction):
    def open(self, runtime_context):
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.seen % 200 == 0:
            time.sleep(0.001)
        return value


@pytest.mark.timeout(120)
def test_a_stopped_task_manager_is_found_by_its_missing_heartbeats_and_replaced():
    env = process_environment(**{"heartbeat.interval": "100 ms", "heartbeat.timeout": "1 s"})
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 100))
    stream = (
        env.from_source(NumberSequenceSource(1, 200_000)).map(SlowOnce()).key_by(lambda v: v % 5).map(lambda v: v * 2)
    )
    with stream.execute_and_collect() as results:
        first = next(results)
        pids = results._client.cluster.processes.pids
        os.kill(pids[0], signal.SIGSTOP)  # alive, silent: no exit to notice, only missing heartbeats
        rest = list(results)
    assert results._client._job_master.restarts == 1
    assert pids[0] not in results._client.cluster.processes.pids
    got = sorted([first, *rest])
    assert set(got) == {2 * v for v in range(1, 200_001)}  # no checkpoints: at least once after the restart


class BlockSubtaskOne(MapFunction):
    """Subtask 1 stops reading until `release` exists; subtask 0 counts how far its source got."""

    def __init__(self, release: str) -> None:
        self.release = release

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        while self.index == 1 and not os.path.exists(self.release):
            time.sleep(0.01)
        return value


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


@pytest.mark.timeout(120)
def test_a_consumer_process_that_stops_reading_keeps_its_producers_memory_bounded(tmp_path):
    release = tmp_path / "release"
    env = process_environment()
    n = 3_000_000
    results = (
        env.from_source(NumberSequenceSource(1, n))
        .set_parallelism(1)
        .rebalance()
        .map(BlockSubtaskOne(str(release)))
        .map(lambda v: 1)
        .key_by(lambda v: 0)
        .reduce(lambda a, b: a + b)
    )
    with results.execute_and_collect() as counts:
        pids = counts._client.cluster.processes.pids
        time.sleep(1.0)  # let the producer run into the stopped consumer
        before = {pid: rss_kib(pid) for pid in pids}
        time.sleep(2.0)
        after = {pid: rss_kib(pid) for pid in pids}
        grown = {pid: after[pid] - before[pid] for pid in pids}
        assert all(growth < 20_000 for growth in grown.values()), f"RSS grew (KiB): {grown}"
        release.touch()
        last = None
        for last in counts:  # noqa: B007 - the last count is what the loop is for
            pass
    assert last == n


@pytest.mark.timeout(120)
def test_strangers_at_every_listening_port_unpickle_nothing_and_the_job_is_intact(tmp_path):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    env = process_environment()
    stream = (
        env.from_source(NumberSequenceSource(1, 300_000)).map(SlowOnce()).key_by(lambda v: v % 3).map(lambda v: v + 1)
    )
    with stream.execute_and_collect() as results:
        got = [next(results)]
        pool = results._client.cluster.processes
        ports = [pool._control.address] + [member.data_address for member in pool._members]
        for address in ports:
            for attack in (b"\x00garbage" * 50, pickle.dumps(Exploit()), b""):
                with socket.create_connection(address) as stranger:
                    stranger.settimeout(15)
                    try:  # the listener may drop (and reset) the connection before the stranger is done talking
                        stranger.sendall(attack)
                        stranger.shutdown(socket.SHUT_WR)
                        while stranger.recv(4096):
                            pass
                    except OSError:
                        pass
        got.extend(results)
    assert sorted(got) == list(range(2, 300_002))
    assert not marker.exists()


CLIENT = textwrap.dedent("""
    import signal, sys, time
    # Ctrl-C raises KeyboardInterrupt, as in a terminal, even when the tests run in the background: a shell
    # starts background commands with SIGINT ignored, and Python then installs no handler for it
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from fluvial.common import Configuration
    from fluvial.datastream import StreamExecutionEnvironment, MapFunction
    from fluvial.datastream.connectors.number_seq import NumberSequenceSource

    class Slow(MapFunction):
        def map(self, value):
            time.sleep(0.001)
            return value

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("local.taskmanager.mode", "process"))
    env.set_parallelism(2)
    env.from_source(NumberSequenceSource(1, 10**9)).map(Slow()).key_by(lambda v: v % 2).add_sink(lambda v: None)
    client = env.execute_async("runs until Ctrl-C")
    print("pids", *client.cluster.processes.pids, flush=True)
    client.get_job_execution_result().result()
""")


@pytest.fixture
def running_client(tmp_path):
    """A client process (a session of its own) running a process-mode job: (the process, its TaskManagers'
    pids, every process below it). Whatever of it is left is killed afterwards (only after a failure)."""
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    client = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=Path(__file__).parents[2],
    )
    family: set[int] = set()
    try:
        line = client.stdout.readline()
        assert line.startswith("pids"), client.stderr.read()
        task_managers = [int(pid) for pid in line.split()[1:]]
        family |= descendants(client.pid) | set(task_managers)
        assert task_managers and all(alive(pid) for pid in task_managers)
        yield client, task_managers, family
    finally:
        if client.poll() is None:
            os.killpg(client.pid, signal.SIGKILL)
        client.wait()
        for pid in family:
            if alive(pid):  # the test started them
                os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(120)
def test_ctrl_c_of_the_client_leaves_no_process_behind(running_client):
    client, _, family = running_client
    os.killpg(client.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
    client.wait(timeout=30)
    wait_until(
        lambda: not any(alive(pid) for pid in family),
        timeout=20,
        what=f"every process of the client to end ({sorted(family)})",
    )


@pytest.mark.timeout(60)
def test_stopped_task_managers_and_their_launcher_die_with_a_killed_client(running_client):
    client, _, family = running_client
    assert len(family) >= 3  # the launcher (zygote) and the TaskManagers forked from it
    for pid in family:
        os.kill(pid, signal.SIGSTOP)  # stopped: they read no closed pipe, notice no closed connection
    client.kill()
    client.wait(timeout=30)
    wait_until(
        lambda: not any(alive(pid) for pid in family),
        timeout=20,
        what=f"the stopped processes of the killed client to end ({sorted(family)})",
    )
