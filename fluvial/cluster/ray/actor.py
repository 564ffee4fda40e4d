"""What runs in a TaskManager's Ray actor: the TaskManager of thread and process mode, started by one actor call
and then driven by actor calls.

1. `start(config)` connects back to the JobMaster's control address and authenticates with the job's secret
   (which arrives as this call's argument, never on a command line), sends print() output and logs over that
   connection (they reach the client's console in order with the job's reports, as in process mode), opens the
   data plane on this Ray node's address, registers, and answers (pid, node address).
2. `control(payload)`: one message of `cluster/messages.py` (or a directory update, or collect credit),
   cloudpickled by the JobMaster's side — the wire format of process mode, so the job's functions travel the
   same way — handed to the TaskManager as a TaskManagerGateway call. Ray runs one call at a time, in the order
   the JobMaster's side submitted them (`gateway.py`).
3. Everything TaskManager → JobMaster (task states, acknowledgements, declines, collected records, output, logs)
   goes back over the control connection, not through Ray: the JobMaster runs in the client, which is no actor.
4. The actor never restarts (max_restarts=0): when its process dies the JobMaster fails over onto a new actor,
   restoring from the latest checkpoint. The actor ends when the JobMaster kills it, or with its owner — the
   client that created it — however that ends.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from fluvial.cluster.process.protocol import loads_control


@dataclass(eq=False)
class RayTaskManagerConfig:
    """The arguments of `TaskManagerActor.start` (the secret among them)."""

    index: int
    number_of_slots: int
    control_address: tuple[str, int]
    secret: bytes
    log_level: int
    heartbeat_interval_ms: int


class TaskManagerActor:
    """A Ray actor class once wrapped by `actor_class()` (this module imports without Ray)."""

    def __init__(self) -> None:
        self._endpoint: Any = None

    def start(self, config: RayTaskManagerConfig) -> tuple[int, str]:
        import ray

        from fluvial.cluster.process.worker import start_task_manager
        from fluvial.runtime.network.connection import connect

        node_ip: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]  # Ray's is not annotated
        connection = connect(config.control_address, config.secret)
        self._endpoint = start_task_manager(
            config.index,
            config.number_of_slots,
            connection,
            config.secret,
            node_ip,
            config.log_level,
            config.heartbeat_interval_ms,
        )
        return os.getpid(), node_ip

    def control(self, payload: bytes) -> None:
        self._endpoint.dispatch(loads_control(payload))

    def ping(self) -> int:
        return os.getpid()


_actor_classes: dict[type, Any] = {}


def actor_class(cls: type) -> Any:
    """`cls` as a Ray actor class that Ray never restarts nor retries (fluvial replaces what dies), made once per
    process."""
    made = _actor_classes.get(cls)
    if made is None:
        import ray

        made = _actor_classes[cls] = ray.remote(max_restarts=0, max_task_retries=0)(cls)
    return made
