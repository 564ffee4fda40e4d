"""A Ray cluster on this machine that fluvial starts and stops: for a job that finds no cluster to connect to, for
the tests and for the benchmarks.

Safe and quiet, numbered:
1. Node addresses are loopback addresses other than 127.0.0.1 (127.0.0.2 for the head, 127.0.0.3, ... for more
   nodes): Ray rewrites 127.0.0.1 and localhost to the machine's primary interface, so a cluster "on localhost"
   would talk over the network interface; every other 127/8 address stays on the loopback device (Linux routes
   all of 127/8 there), and gives each node of a several-node cluster its own address.
2. Every Ray process starts with HOME pointing at a directory holding a stub `ray_bootstrap_config.yaml`
   (`provider: {type: local}`) and with RAY_USAGE_STATS_ENABLED=0: without the stub, Ray's dashboard asks
   cloud metadata services (169.254.169.254, metadata.google.internal) which cloud it runs in, whether usage
   stats are on or not. TaskManager actors get the real HOME back (`worker_environment`).
3. Every port Ray would take by default (GCS, dashboard, agents, client server) is one that is free now, so
   two clusters on one machine — two test runs — do not collide.
4. Each node is a `local_node.py` process holding `ray start --block` (see there): the node ends when `stop()`
   closes its pipe, or when this process ends however it ends. Only those processes are ever signalled —
   never `ray stop`, which ends every Ray on the machine.
5. Ray's own output goes to `ray.log` in the cluster's temporary directory, never to the console.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, cast

from fluvial.common.errors import ResourceError
from fluvial.common.processes import python_command

logger = logging.getLogger(__name__)

HEAD_IP = "127.0.0.2"
READY_LINE = "Ray runtime started."
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 40.0
BOOTSTRAP_STUB = "provider:\n  type: local\n"


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node: its loopback address, its CPUs (what Ray may reserve, not a limit on use), and custom
    resources (e.g. {"node2": 1} to pin actors in tests)."""

    ip: str
    cpus: int
    resources: dict[str, float] = field(default_factory=dict)


def _free_port() -> int:
    with socket.socket(socket.AF_INET6 if socket.has_dualstack_ipv6() else socket.AF_INET) as probe:
        probe.bind(("", 0))  # Ray listens on every address for some ports: free on all of them
        port: int = probe.getsockname()[1]  # (host, port[, flow, scope])
        return port


class LocalRayCluster:
    """`start()` the nodes (the first is the head), `address` to connect to, `stop()` them."""

    def __init__(
        self,
        nodes: Sequence[NodeSpec] = (NodeSpec(HEAD_IP, os.cpu_count() or 1),),
        object_store_bytes: int = 80_000_000,
    ) -> None:
        if not nodes:
            raise ValueError("a Ray cluster needs at least one node")
        for node in nodes:
            if not node.ip.startswith("127.") or node.ip == "127.0.0.1":
                raise ValueError(
                    f"node address {node.ip} is not a loopback address other than 127.0.0.1 (Ray "
                    "rewrites 127.0.0.1 to the network interface): use 127.0.0.2, 127.0.0.3, ..."
                )
        self.nodes = list(nodes)
        self._object_store_bytes = object_store_bytes
        self.directory = ""  # made by start(): Ray's temporary directory, the stub HOME and the log
        self._port = _free_port()
        self._launchers: list[subprocess.Popen[bytes]] = []
        self._log: IO[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{self.nodes[0].ip}:{self._port}"

    @property
    def log_path(self) -> str:
        return os.path.join(self.directory, "ray.log")

    @property
    def pids(self) -> list[int]:
        """The node processes this cluster started (what `stop()` signals)."""
        return [launcher.pid for launcher in self._launchers]

    @property
    def worker_environment(self) -> dict[str, str]:
        """Environment for actors of this cluster: the real HOME, not the stub of step 2."""
        return {"HOME": os.environ.get("HOME", os.path.expanduser("~"))}

    @property
    def _home(self) -> str:
        return os.path.join(self.directory, "home")

    def start(self, timeout: float = START_TIMEOUT_S) -> LocalRayCluster:
        self.directory = tempfile.mkdtemp(prefix="fluvial-ray-")
        os.makedirs(self._home)
        with open(os.path.join(self._home, "ray_bootstrap_config.yaml"), "w") as stub:
            stub.write(BOOTSTRAP_STUB)
        self._log = open(self.log_path, "ab")
        started = time.monotonic()
        try:
            self._start_node(self.nodes[0], head=True)
            self._await_ready(1, started + timeout)
            for node in self.nodes[1:]:
                self._start_node(node, head=False)
            self._await_ready(len(self.nodes), started + timeout)
        except BaseException:
            self.stop()
            raise
        logger.info(
            "started a local Ray cluster at %s: %d node(s), %s CPUs, in %.1f s (logs: %s)",
            self.address,
            len(self.nodes),
            "+".join(str(n.cpus) for n in self.nodes),
            time.monotonic() - started,
            self.log_path,
        )
        return self

    def _start_node(self, node: NodeSpec, head: bool) -> None:
        arguments = [
            f"--node-ip-address={node.ip}",
            f"--num-cpus={node.cpus}",
            "--num-gpus=0",
            f"--object-store-memory={self._object_store_bytes}",
            "--disable-usage-stats",
            f"--dashboard-agent-listen-port={_free_port()}",
            f"--resources={json.dumps(node.resources)}",
        ]
        if head:
            arguments += [
                "--head",
                f"--port={self._port}",
                "--include-dashboard=false",
                f"--dashboard-port={_free_port()}",
                f"--temp-dir={self.directory}",
            ]
            if _has_ray_client():
                arguments.append(f"--ray-client-server-port={_free_port()}")
        else:
            arguments.append(f"--address={self.address}")
        environment = dict(os.environ, HOME=self._home, RAY_USAGE_STATS_ENABLED="0")
        environment.pop("RAY_ADDRESS", None)
        self._launchers.append(
            subprocess.Popen(
                python_command("-m", "fluvial.cluster.ray.local_node", *arguments),
                stdin=subprocess.PIPE,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=environment,
                close_fds=True,
            )
        )

    def _await_ready(self, count: int, deadline: float) -> None:
        """Until `count` nodes printed that they started; a node that ended is an error with the log's tail."""
        while True:
            for launcher in self._launchers:
                if launcher.poll() is not None:
                    raise ResourceError(
                        f"a local Ray node failed to start (exit {launcher.returncode}); the end of "
                        f"{self.log_path}:\n{self._log_tail()}"
                    )
            with open(self.log_path, "rb") as log:
                if log.read().decode(errors="replace").count(READY_LINE) >= count:
                    return
            if time.monotonic() > deadline:
                raise ResourceError(
                    f"the local Ray cluster did not start within {START_TIMEOUT_S:.0f} s; the end "
                    f"of {self.log_path}:\n{self._log_tail()}"
                )
            time.sleep(0.05)

    def _log_tail(self, lines: int = 30) -> str:
        with open(self.log_path, "rb") as log:
            return "\n".join(log.read().decode(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Step 4: close each node's pipe (it stops its node), wait, then SIGKILL a node process still there."""
        for launcher in reversed(self._launchers):
            try:
                cast(IO[bytes], launcher.stdin).close()  # a pipe (stdin=PIPE in start): never None
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for launcher in self._launchers:
            try:
                launcher.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.warning(
                    "local Ray node process %d did not stop within %.0f s; killing it", launcher.pid, timeout
                )
                launcher.kill()  # its `ray start` gets SIGTERM as it dies (PR_SET_PDEATHSIG)
                launcher.wait()
        self._launchers.clear()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
            if os.path.exists(self.directory):  # a last Ray process wrote a log line as it went: once more
                time.sleep(0.5)
                shutil.rmtree(self.directory, ignore_errors=True)


def _has_ray_client() -> bool:
    """Whether `ray start --head` would start Ray's client server (its extra is installed), on port 10001."""
    from ray._private.utils import get_ray_client_dependency_error

    return get_ray_client_dependency_error() is None
