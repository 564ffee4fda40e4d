"""The TaskManagerGateway of a TaskManager actor: the JobMaster's messages as Ray actor calls.

Rules, numbered:
1. Order: one thread per TaskManager submits its calls, in the order the messages were sent, and Ray runs the
   calls of one caller to a one-at-a-time actor in submission order — so a cancel never overtakes the deployment
   it cancels.
2. Bounded: Ray's actor call queues have no limit and no flow control, so at most CONTROL_WINDOW calls are in
   flight per TaskManager; the rest wait here, until Ray answered earlier ones.
3. Like the process mode's gateway, messages wait while the TaskManager has no registered actor (starting, or
   being replaced) and go out once it registers; what waited for a lost actor is dropped with it (its subtasks
   failed with it). The data-plane directory jumps the queue (`announce`): a deployment never reaches an actor
   before the addresses it needs.
4. A call that fails is reported to the listener with the message it carried: the actor died (Ray's
   ActorDiedError), or the message could not be handled there (e.g. a deployment whose functions import a
   module the actor cannot import).
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from fluvial.cluster.process.pool import RemoteTaskManagerGateway
from fluvial.cluster.process.protocol import dumps_control
from fluvial.cluster.ray.connection import ray_connected, require_connection

logger = logging.getLogger(__name__)

CONTROL_WINDOW = 16  # control calls in flight per TaskManager: many times what a checkpoint round needs


class ControlCallListener(Protocol):
    def control_call_failed(self, index: int, actor: Any, message: Any, error: BaseException) -> None:
        """A call to TaskManager `index`'s `actor` carrying `message` raised `error`. Called on a thread of Ray,
        which must not call Ray: hand the work to a thread of your own."""
        ...


class RayTaskManagerGateway(RemoteTaskManagerGateway):
    def __init__(
        self,
        index: int,
        listener: ControlCallListener,
        number_of_slots: int = 1,
        connected: Callable[[], bool] = ray_connected,
    ) -> None:
        """`connected`: whether this process may call Ray now (checked before every call)."""
        super().__init__(index, number_of_slots)
        self._listener = listener
        self._connected = connected
        self._changed = threading.Condition(self._lock)
        self._actor: Any = None
        self._attached = False
        self._queue: collections.deque[tuple[Any, bytes]] = collections.deque()
        self._in_flight = 0
        self._generation = 0  # one per actor: answers of a replaced actor's calls count no more
        self._closed = False
        threading.Thread(target=self._submit_calls, name=f"fluvial-ray-control-{index}", daemon=True).start()

    def bind(self, actor: Any) -> None:
        """A new actor for this TaskManager (messages wait until it registers)."""
        with self._changed:
            self._actor, self._attached, self._in_flight = actor, False, 0
            self._generation += 1

    def attach(self, connection: Any) -> None:
        """The actor registered (its control connection is up): messages go out (3)."""
        with self._changed:
            self._attached = True
            self._changed.notify_all()

    def detach(self) -> None:
        """The actor is lost: what waited for it goes with it (3)."""
        with self._changed:
            self._actor, self._attached = None, False
            self._queue.clear()
            self._generation += 1

    def announce(self, directory: Any) -> None:
        """The data-plane directory, ahead of every message waiting (3)."""
        with self._changed:
            self._queue.appendleft((directory, dumps_control(directory)))
            self._changed.notify_all()

    def submit_task(self, message: Any) -> None:
        """The DeployTask itself, not the process mode's envelope: an actor that cannot unpickle it fails the
        call, and the pool reports that subtask's failure with a hint for Ray (`ray.working-dir`)."""
        self.send(message)

    def send(self, message: Any) -> None:
        payload = dumps_control(message)
        with self._changed:
            if not self._closed:
                self._queue.append((message, payload))
                self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._queue.clear()
            self._changed.notify_all()

    def _submit_calls(self) -> None:
        """Rules 1 and 2, on this gateway's thread."""
        while True:
            with self._changed:
                while not self._closed and not (self._attached and self._queue and self._in_flight < CONTROL_WINDOW):
                    self._changed.wait()
                if self._closed:
                    return
                message, payload = self._queue.popleft()
                actor, generation = self._actor, self._generation
                self._in_flight += 1
            try:
                require_connection(f"{type(message).__name__} to TaskManager {self.index}", self._connected)
                future = actor.control.remote(payload).future()
            except Exception as error:  # noqa: BLE001 - Ray refused the call (shutting down): as if it failed
                self._answered(message, actor, generation, None, error)
                continue
            future.add_done_callback(functools.partial(self._answered, message, actor, generation))

    def _answered(
        self, message: Any, actor: Any, generation: int, future: Any, error: BaseException | None = None
    ) -> None:
        with self._changed:
            if generation == self._generation:
                self._in_flight -= 1
                self._changed.notify_all()
        if future is not None:
            error = future.exception()
        if error is not None:
            self._listener.control_call_failed(self.index, actor, message, error)
