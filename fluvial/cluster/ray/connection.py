"""Which Ray cluster a job runs on, numbered as tried:
1. `ray.address` when set: host:port of the head; `auto` (Ray's: RAY_ADDRESS, else the one cluster running on
   this machine); or `local` (a local cluster of this process, see 4, whatever else runs). When `ray` is already
   initialised, it must be that cluster (else a clear error: one process talks to one Ray cluster);
2. else the cluster `ray` is already initialised with (the program called `ray.init` itself);
3. else `ray.init(address="auto")`;
4. else a local cluster started for this process (`local_cluster.py`: loopback only, no cloud probes, quiet),
   reused by its later jobs and stopped when the process exits, however it exits.

fluvial initialises `ray` with Ray's logging at WARNING, so a job's console shows the job, not Ray's start-up.
Without the `ray` package, a clear error names the extra that installs it.

fluvial's own threads that call Ray (control calls, pings, a detached job's waits) first check that this
process is still connected (`require_connection`): a Ray call after `ray.shutdown()` would otherwise make Ray
start a new local instance of its own — processes nobody stops.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fluvial.common.errors import ConfigurationError

logger = logging.getLogger(__name__)

LOCAL = "local"  # ray.address: a local cluster of this process's own
_lock = threading.Lock()
_local_cluster: Any = None  # the LocalRayCluster this process started (step 4), if any


@dataclass(frozen=True, slots=True)
class RayConnection:
    """The Ray cluster this process is connected to, as fluvial needs it."""

    node_ip: str  # this process's node address: where TaskManager actors connect back to
    worker_environment: dict[str, str] = field(default_factory=dict)  # env vars every TaskManager actor gets


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(
            "execution.target 'ray' needs the 'ray' package, which is not installed: pip install "
            "'fluvial[ray]' (or run the job with execution.target: local)"
        ) from None
    return ray


class RayDisconnected(RuntimeError):
    """This process's Ray connection was shut down while fluvial still had calls to make."""


def ray_connected() -> bool:
    """Whether this process is connected to a Ray cluster now."""
    import ray

    return ray.is_initialized()


def require_connection(what: str, connected: Callable[[], bool] | None = None) -> None:
    """Raise RayDisconnected (naming `what`) unless this process is connected to Ray (`connected`, by default
    `ray_connected`, says whether it is)."""
    if not (connected or ray_connected)():
        raise RayDisconnected(f"{what}: this process is no longer connected to Ray (ray.shutdown() was called)")


def connect(address: str | None, detached: bool = False) -> RayConnection:
    """Connect this process to its Ray cluster (see the module docstring); idempotent. For a `detached` job, a
    local cluster of this process (1 with `local`, or 4) is refused: it ends with this process, and the job with
    it, while the user was told the job runs on."""
    ray = import_ray()
    with _lock:
        if ray.is_initialized():
            _check_same_cluster(ray, address)  # 1, 2
            if detached and _local_cluster is not None and address in (None, "auto", LOCAL):
                _refuse_detached_on_local_cluster()
        elif address == LOCAL:
            if detached:
                _refuse_detached_on_local_cluster()
            _start_local_cluster(ray)  # 1
        elif address is not None:
            _init(ray, address)  # 1
        elif not _init_auto(ray):  # 3
            if detached:
                _refuse_detached_on_local_cluster()
            _start_local_cluster(ray)  # 4
        environment = _local_cluster.worker_environment if _local_cluster is not None else {}
    return RayConnection(ray.util.get_node_ip_address(), environment)


def _refuse_detached_on_local_cluster() -> None:
    raise ConfigurationError(
        "a detached job (execution.attached: false, fluvial run -d) runs on after this program ends, but no Ray "
        "cluster is running to hold it: the local Ray instance this program would start ends with it, and the job "
        "with it. Start a Ray cluster first (ray start --head) and run again (or set ray.address to its head), or "
        "drop -d to run the job attached on a local Ray instance"
    )


def _init(ray: Any, address: str) -> None:
    host = address.rpartition(":")[0]
    options: dict[str, Any] = {}
    if host.startswith("127.") and host != "127.0.0.1":  # a local cluster on its own loopback address
        options["_node_ip_address"] = host
    ray.init(address=address, logging_level=logging.WARNING, **options)
    logger.info("connected to the Ray cluster at %s", ray.get_runtime_context().gcs_address)


def _init_auto(ray: Any) -> bool:
    try:
        _init(ray, "auto")
    except ConnectionError as error:  # none running, or several
        logger.info("ray.init(address='auto') found no cluster to connect to: %s", error)
        return False
    return True


def _check_same_cluster(ray: Any, address: str | None) -> None:
    if address is None or address == "auto":
        return
    connected = ray.get_runtime_context().gcs_address
    expected = _local_cluster.address if address == LOCAL and _local_cluster is not None else address
    if connected != expected:
        raise ConfigurationError(
            f"ray.address is {address}, but this process is connected to the Ray cluster at {connected} (one "
            "process talks to one Ray cluster): remove ray.address, or call ray.shutdown() before the job"
        )


def _start_local_cluster(ray: Any) -> None:
    global _local_cluster
    from fluvial.cluster.ray.local_cluster import LocalRayCluster

    logger.info("starting a local Ray cluster for this process")
    cluster = LocalRayCluster().start()
    atexit.register(cluster.stop)  # before ray.init, so Ray's own exit handler (ray.shutdown) runs first
    _local_cluster = cluster
    _init(ray, cluster.address)
