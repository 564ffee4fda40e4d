"""A job's TaskManagers as Ray actors, seen from the JobMaster's side: created in the job's placement group,
registered, watched, replaced, killed.

The process mode's TaskManagerProcesses with Ray doing what the zygote did, numbered:
1. TaskManager i is an actor in bundle i of the job's placement group (`placement.py`), with the job's runtime
   environment (`runtime_environment.py`). Its `start` call hands it the control address (this process's, on its Ray
   node's address) and the job's secret; it connects back, authenticates and registers, as a process does.
   Once all have, every actor learns every data-plane address, and only then does the job deploy.
2. Messages to TaskManagers are actor calls (`gateway.py`); what they send comes back over their control
   connections and is routed by TaskManagerProcesses unchanged.
3. A lost actor is noticed when its control connection closes (a killed process: at once) — then a ping tells
   how it ended, in Ray's words — when a call to it fails with Ray's ActorDiedError, or when its heartbeats stop
   (a hung process, a vanished node). The listener hears `task_manager_lost(index, error)` and a new actor
   starts in the same bundle; the JobMaster fails over onto it from the latest checkpoint. A deployment the
   actor could not take (its functions import a module the actor cannot import) fails that subtask, with the
   actor's error, as any task failure.
4. `shutdown()` ends every actor once it has handled the calls it was sent, and removes the placement group:
   nothing stays reserved.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any, cast

from fluvial.cluster.messages import DeployTask, TaskExecutionState
from fluvial.cluster.process.pool import (
    RemoteTaskManagerGateway,
    TaskManagerPoolListener,
    TaskManagerProcesses,
    _Member,
)
from fluvial.cluster.process.protocol import RegisterTaskManager, TaskManagerDirectory
from fluvial.cluster.ray.actor import RayTaskManagerConfig, TaskManagerActor, actor_class
from fluvial.cluster.ray.connection import RayDisconnected, require_connection
from fluvial.cluster.ray.gateway import RayTaskManagerGateway
from fluvial.cluster.ray.placement import TaskManagerLayout
from fluvial.common.errors import ResourceError
from fluvial.common.executors import SingleThreadExecutor
from fluvial.common.logs import ENGINE_LOGGER
from fluvial.runtime.deployment import TaskFailure
from fluvial.runtime.execution_state import ExecutionState
from fluvial.runtime.network.connection import Connection

logger = logging.getLogger(__name__)

PING_TIMEOUT_S = 10.0  # how long a ping may take before an actor whose connection closed counts as hung
_IMPORT_HINT = (
    " — a module the job's functions use is not importable on that Ray node: modules imported from the "
    "job file's directory are shipped by themselves; ship others with ray.working-dir, or install them "
    "on every node (docs/ray.md, Shipping code)"
)


class RayTaskManagers(TaskManagerProcesses):
    def __init__(
        self,
        layout: TaskManagerLayout,
        placement_group: Any,
        listener: TaskManagerPoolListener,
        *,
        node_ip: str,
        runtime_env: dict[str, Any],
        heartbeat_interval_ms: int,
        heartbeat_timeout_ms: int,
    ) -> None:
        super().__init__(
            layout.count,
            layout.slots_each,
            listener,
            bind_host=node_ip,
            heartbeat_interval_ms=heartbeat_interval_ms,
            heartbeat_timeout_ms=heartbeat_timeout_ms,
        )
        self._ray_gateways = [RayTaskManagerGateway(index, self, layout.slots_each) for index in range(layout.count)]
        # the same list: the pool reads its gateways as RemoteTaskManagerGateways and never puts one in
        self.gateways = cast(list[RemoteTaskManagerGateway], self._ray_gateways)
        self._group = placement_group
        self._runtime_env = runtime_env
        self._actors: list[Any] = [None] * layout.count
        self.nodes: list[str | None] = [None] * layout.count  # the node address of each current actor
        # Ray answers calls on its own threads, which must not call Ray (a call there waits on the thread that
        # would answer it): what an answer causes runs here
        self._answers = SingleThreadExecutor("fluvial-ray-answers", self._answer_failed)

    # -- step 1 -------------------------------------------------------------------------------------------------

    def _spawn(self, member: _Member) -> None:
        import ray
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        previous = self._actors[member.index]
        # forgotten first: the calls the kill fails answer late, and must be taken for the old actor's, not for
        # the member's new one (a second loss that would kill the replacement while it starts)
        self._actors[member.index] = None
        if previous is not None:
            ray.kill(previous, no_restart=True)  # whatever is left of it frees its bundle
        member.connection, member.data_address, member.ended, member.lost = None, None, None, False
        member.last_seen, member.pid = time.monotonic(), 0
        self.nodes[member.index] = None
        actor = (
            actor_class(TaskManagerActor)
            .options(
                num_cpus=self.slots_each,
                runtime_env=self._runtime_env or None,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    self._group, placement_group_bundle_index=member.index
                ),
            )
            .remote()
        )
        self._actors[member.index] = actor
        self._ray_gateways[member.index].bind(actor)
        config = RayTaskManagerConfig(
            member.index,
            self.slots_each,
            self._control.address,
            self._secret,
            logging.getLogger(ENGINE_LOGGER).getEffectiveLevel(),
            self._heartbeat_interval_ms,
        )
        actor.start.remote(config).future().add_done_callback(
            lambda answer: self._answers.execute(functools.partial(self._start_answered, member, actor, answer))
        )

    def _answer_failed(self, error: BaseException) -> None:
        logger.error("handling a Ray actor's answer failed", exc_info=error)

    def _start_answered(self, member: _Member, actor: Any, answer: Any) -> None:
        error = answer.exception()
        if error is not None:
            self._actor_ended(member, actor, f"its Ray actor could not start: {_reason(error)}")
        elif self._actors[member.index] is actor:
            self.nodes[member.index] = answer.result()[1]

    def _await_registration(self, timeout: float) -> None:
        try:
            super()._await_registration(timeout)
        except ResourceError:
            failed = next((m for m in self._members if m.ended is not None and m.connection is None), None)
            if failed is None:
                raise
            raise ResourceError(f"TaskManager {failed.index} did not register: {failed.ended}") from None

    def _register(self, member: _Member, connection: Connection, registration: RegisterTaskManager) -> None:
        member.pid = registration.pid
        super()._register(member, connection, registration)

    def _announce(self, directory: TaskManagerDirectory) -> None:
        for gateway in self._ray_gateways:
            gateway.announce(directory)

    def ready(self) -> bool:
        """Under the registration lock: ready only once the directory is announced to every gateway."""
        with self._registered:
            return super().ready()

    @property
    def actors(self) -> list[Any]:
        return list(self._actors)

    # -- step 3 -------------------------------------------------------------------------------------------------

    def _connection_closed(self, member: _Member, pid: int) -> None:
        if member.pid != pid or self._stopping.is_set():
            return  # replaced already, or shutting down
        actor = self._actors[member.index]
        how = self._ping(actor)
        if how is None:  # it answers, but cut its connection: it cannot serve the job
            self._kill_member(member)
            how = f"its actor (pid {pid}) closed its control connection and was killed"
        if member.pid == pid:
            self._actor_ended(member, actor, how)

    def _ping(self, actor: Any) -> str | None:
        """None when the actor answers; else how it ended."""
        import ray

        try:
            require_connection("pinging a TaskManager actor")
            ray.get(actor.ping.remote(), timeout=PING_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            return f"its actor did not answer within {PING_TIMEOUT_S:.0f} s after its control connection closed"
        except ray.exceptions.RayActorError as error:
            return f"its actor died: {_reason(error)}"
        except RayDisconnected as error:
            return str(error)
        return None

    def control_call_failed(self, index: int, actor: Any, message: Any, error: BaseException) -> None:
        """ControlCallListener (on a Ray thread: handled on this pool's own)."""
        self._answers.execute(functools.partial(self._control_call_failed, index, actor, message, error))

    def _control_call_failed(self, index: int, actor: Any, message: Any, error: BaseException) -> None:
        import ray

        member = self._members[index]
        if isinstance(error, ray.exceptions.RayActorError):
            self._actor_ended(member, actor, f"its actor died: {_reason(error)}")
        elif isinstance(message, DeployTask):
            self._deployment_failed(index, message, error)
        elif not self._stopping.is_set():
            logger.error("TaskManager %d could not handle %s: %s", index, type(message).__name__, error)

    def _deployment_failed(self, index: int, message: DeployTask, error: BaseException) -> None:
        import ray

        spec = message.spec
        cause = error.cause if isinstance(error, ray.exceptions.RayTaskError) else error  # the actor's exception
        task_name = f"{spec.vertex.name} ({spec.subtask_index + 1}/{spec.vertex.parallelism})"
        logger.warning(
            "TaskManager %d could not deploy %s: %s: %s%s",
            index,
            task_name,
            type(cause).__name__,
            cause,
            _IMPORT_HINT if isinstance(cause, ImportError) else "",
        )
        job_master = self._listener.job_master_gateway(spec.job_id)
        if job_master is not None:
            failure = TaskFailure(cause, spec.vertex.name, task_name, str(error))
            job_master.update_task_execution_state(TaskExecutionState(spec.attempt_id, ExecutionState.FAILED, failure))

    def _actor_ended(self, member: _Member, actor: Any, how: str) -> None:
        if self._actors[member.index] is not actor:
            return  # an actor already replaced
        node = self.nodes[member.index]
        member.ended = f"{how}{f' (on {node})' if node else ''}"
        with self._registered:
            self._registered.notify_all()
        self._lost(member, member.ended)

    def _kill_member(self, member: _Member) -> None:
        import ray

        actor = self._actors[member.index]
        if actor is not None:
            ray.kill(actor, no_restart=True)

    # -- step 4 -------------------------------------------------------------------------------------------------

    def shutdown(self, timeout: float = 5.0) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._control.close()
        self._answers.shutdown()
        for gateway in self._ray_gateways:
            gateway.close()
        try:
            self._end_actors(timeout)
        except Exception as error:  # noqa: BLE001 - Ray already shut down (at exit): its actors went with it
            logger.debug("Ray cleanup after the job: %s", error)
        for member in self._members:
            if member.connection is not None:
                member.connection.close()

    def _end_actors(self, timeout: float) -> None:
        """Each actor ends after the calls it was sent (Ray's graceful `__ray_terminate__`: killing one in the
        middle of a call makes Ray print a crash report); what has not ended within `timeout` is killed, and the
        placement group is removed, its CPUs free again."""
        import ray
        from ray.util.placement_group import remove_placement_group

        actors = [actor for actor in self._actors if actor is not None]
        ending = [actor.__ray_terminate__.remote() for actor in actors]
        ended, _ = ray.wait(ending, num_returns=len(ending), timeout=timeout)
        for actor, answer in zip(actors, ending):
            if answer not in ended:
                ray.kill(actor, no_restart=True)
        remove_placement_group(self._group)


def _reason(error: BaseException) -> str:
    """Ray's explanation of an actor error, without its advice paragraphs."""
    text = str(error)
    start = text.find("The actor is dead because")
    reason = text[start:] if start >= 0 else text.splitlines()[0] if text else type(error).__name__
    for cut in (" Some common causes", "\n"):
        reason = reason.split(cut, 1)[0]
    return reason.strip()
