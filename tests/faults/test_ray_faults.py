"""Ray under real faults and limits, on the session's two-node Ray cluster (`tests/conftest.py`): a TaskManager
actor's process SIGKILLed mid-job (failover onto a new actor, FileSink output exactly once), the same without a
restart strategy (the job fails naming the TaskManager and Ray's account of its death), a job that needs more
CPUs than Ray has (the clear error, within the placement timeout), storage no other node could read (refused at
submission), and no connection of any process of the cluster leaving the loopback range while a job runs."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import pytest

from fluvial.common import Configuration
from fluvial.common.errors import ConfigurationError, JobExecutionException, ResourceError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from tests.conftest import CPUS_PER_NODE
from tests.faults.test_process_kill import assert_exactly_once, committed_records
from tests.faults.test_taskmanager_processes import checkpointed_job as processes_checkpointed_job
from tests.faults.test_taskmanager_processes import kill_a_task_manager_after_checkpoints

pytestmark = pytest.mark.usefixtures("ray_cluster")


def ray_environment(**keys: str) -> StreamExecutionEnvironment:
    configuration = Configuration().set_string("execution.target", "ray")
    for key, value in keys.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    return env


def checkpointed_job(tmp_path: Path, n: int, restarts: bool) -> StreamExecutionEnvironment:
    """The process fault tests' job on Ray. Both nodes are this machine: its local paths are one filesystem every
    node sees."""
    env = ray_environment(**{"ray.shared-filesystem": "true"})
    return processes_checkpointed_job(tmp_path, n, "hashmap", restarts, env)


@pytest.mark.timeout(120)
def test_a_task_manager_actor_killed_mid_job_fails_over_onto_a_new_actor_and_the_output_is_exactly_once(tmp_path):
    n = 40_000
    client = checkpointed_job(tmp_path, n, restarts=True).execute_async("kill a TaskManager actor")
    victim = kill_a_task_manager_after_checkpoints(client, tmp_path / "chk")  # both nodes are this machine
    client.get_job_execution_result().result(timeout=100)
    assert client._job_master.restarts == 1
    assert victim not in client.cluster.processes.pids  # a new actor took its place
    records, _ = committed_records(tmp_path / "out")
    assert_exactly_once(records, n)


@pytest.mark.timeout(60)
def test_without_a_restart_strategy_the_job_fails_naming_the_task_manager_and_rays_account(tmp_path):
    client = checkpointed_job(tmp_path, 10_000_000, restarts=False).execute_async("no restarts")
    kill_a_task_manager_after_checkpoints(client, tmp_path / "chk", at_least=1)
    with pytest.raises(JobExecutionException) as info:
        client.get_job_execution_result().result(timeout=40)
    message = str(info.value)
    assert "TaskManager 1 was lost" in message and "actor died" in message, message


@pytest.mark.timeout(60)
def test_a_job_needing_more_cpus_than_ray_has_fails_within_the_placement_timeout_naming_both():
    env = ray_environment(**{"ray.placement-timeout": "1 s"})
    env.set_parallelism(2 * CPUS_PER_NODE + 1)
    env.from_collection([1, 2, 3]).map(lambda v: v).print()
    with pytest.raises(ResourceError) as info:  # within the test's timeout: it never waits for the job
        env.execute("too big")
    message = str(info.value)
    assert f"needs {2 * CPUS_PER_NODE + 1} task slots" in message and "within 1 s" in message
    assert f"{2 * CPUS_PER_NODE} CPUs" in message and "raise ray.placement-timeout" in message


def test_local_checkpoint_storage_on_several_nodes_is_refused_at_submission(tmp_path):
    env = ray_environment()
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{tmp_path}"))
    env.from_collection([1]).print()
    with pytest.raises(ConfigurationError, match="is a local path, and the Ray cluster has 2 nodes"):
        env.execute("local storage")


# -- no connection leaves the loopback range ----------------------------------------------------------------------


def _descendants(roots: list[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, stack = set(), list(roots)
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, []))
    return found


def _socket_inodes(pids: set[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue  # the process ended meanwhile
    return inodes


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    host = bytes.fromhex(hex_address.split(":")[0])
    if len(host) == 4:
        return ipaddress.IPv4Address(host[::-1])
    words = b"".join(host[i : i + 4][::-1] for i in range(0, 16, 4))  # /proc prints each 32-bit word host-order
    address = ipaddress.IPv6Address(words)
    return address.ipv4_mapped or address


def remote_peers(pids: set[int]) -> set[tuple[str, str]]:
    """(local, remote) addresses of the TCP sockets of `pids` that have a peer (not listening, not unconnected)."""
    inodes = _socket_inodes(pids)
    peers = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                local, remote, inode = fields[1], fields[2], fields[9]
                if inode in inodes and not _address(remote).is_unspecified:
                    peers.add((str(_address(local)), str(_address(remote))))
    return peers


@pytest.mark.timeout(60)
def test_no_connection_of_the_cluster_or_the_client_leaves_the_loopback_range_while_a_job_runs(ray_cluster):
    env = ray_environment()
    env.from_source(NumberSequenceSource(1, 300_000)).map(lambda v: (v % 7, v)).key_by(lambda r: r[0]).reduce(
        lambda a, b: (a[0], a[1] + b[1])
    ).add_sink(lambda value: None)
    client = env.execute_async("loopback only")
    seen: set[tuple[str, str]] = set()
    samples = 0
    while not client.get_job_execution_result().done():
        seen |= remote_peers(_descendants([os.getpid(), *ray_cluster.pids]))
        samples += 1
    client.get_job_execution_result().result(timeout=30)
    assert samples >= 1 and seen, "no connection was seen: the sampling looked at the wrong processes"
    outside = {pair for pair in seen if not ipaddress.ip_address(pair[1]).is_loopback}
    assert not outside, f"connections left the loopback range: {sorted(outside)}"
