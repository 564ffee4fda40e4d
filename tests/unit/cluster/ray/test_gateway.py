"""RayTaskManagerGateway without Ray: a fake actor whose calls answer when the test says. Order, the window of
calls in flight, messages waiting for registration, the directory first, what a lost actor takes with it, and
failures reported with the message they carried."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from fluvial.cluster.messages import CancelTask, DeployTask
from fluvial.cluster.process.protocol import TaskManagerDirectory, loads_control
from fluvial.cluster.ray.gateway import CONTROL_WINDOW, RayTaskManagerGateway
from fluvial.runtime.deployment import ExecutionAttemptId
from fluvial.testing import wait_until

pytestmark = pytest.mark.timeout(30)


class FakeActor:
    """`actor.control.remote(payload).future()`, answered by the test."""

    def __init__(self) -> None:
        self.control = self
        self.calls: list[tuple[object, Future]] = []
        self._lock = threading.Lock()

    def remote(self, payload: bytes) -> FakeActor:
        future: Future = Future()
        with self._lock:
            self.calls.append((loads_control(payload), future))
        self._last = future
        return self

    def future(self) -> Future:
        return self._last

    def messages(self) -> list[object]:
        with self._lock:
            return [message for message, _ in self.calls]

    def answer(self, count: int, error: BaseException | None = None) -> None:
        with self._lock:
            pending = [future for _, future in self.calls if not future.done()][:count]
        for future in pending:
            future.set_exception(error) if error is not None else future.set_result(None)


class Failures:
    def __init__(self) -> None:
        self.seen: list[tuple[int, object, object, BaseException]] = []

    def control_call_failed(self, index, actor, message, error) -> None:
        self.seen.append((index, actor, message, error))


def cancel(n: int) -> CancelTask:
    return CancelTask(ExecutionAttemptId("job", n, 0, 0))


def numbers(messages) -> list[int]:
    return [m.attempt_id.vertex_id for m in messages if isinstance(m, CancelTask)]


@pytest.fixture
def gateway():
    failures = Failures()
    gateway = RayTaskManagerGateway(3, failures, connected=lambda: True)
    gateway.failures = failures
    yield gateway
    gateway.close()


def test_messages_wait_for_registration_then_go_out_in_order(gateway):
    actor = FakeActor()
    gateway.bind(actor)
    for n in range(5):
        gateway.cancel_task(cancel(n))
    assert actor.messages() == []  # bound, not registered
    gateway.attach(None)
    wait_until(lambda: len(actor.messages()) == 5, what="the waiting messages")
    assert numbers(actor.messages()) == [0, 1, 2, 3, 4]


def registered_actor_with_a_full_window(gateway, messages: int) -> FakeActor:
    """A new registered actor sent `messages` cancels (numbered from 0): a window of them goes out, the rest wait
    here, not in Ray's unbounded queue."""
    actor = FakeActor()
    gateway.bind(actor)
    gateway.attach(None)
    for n in range(messages):
        gateway.cancel_task(cancel(n))
    wait_until(lambda: len(actor.calls) == CONTROL_WINDOW, what="a full window")
    threading.Event().wait(0.05)
    assert len(actor.calls) == CONTROL_WINDOW
    return actor


def test_at_most_a_window_of_calls_is_in_flight(gateway):
    actor = registered_actor_with_a_full_window(gateway, CONTROL_WINDOW + 10)
    actor.answer(4)
    wait_until(lambda: len(actor.calls) == CONTROL_WINDOW + 4, what="four more calls")
    actor.answer(100)
    wait_until(lambda: len(actor.calls) == CONTROL_WINDOW + 10, what="every call")
    assert numbers(actor.messages()) == list(range(CONTROL_WINDOW + 10))


def test_the_directory_goes_ahead_of_every_waiting_message(gateway):
    actor = FakeActor()
    gateway.bind(actor)
    gateway.cancel_task(cancel(1))
    gateway.announce(TaskManagerDirectory({0: ("127.0.0.2", 1), 1: ("127.0.0.3", 2)}))
    gateway.attach(None)
    wait_until(lambda: len(actor.calls) == 2, what="both messages")
    first, second = actor.messages()
    assert isinstance(first, TaskManagerDirectory) and first.addresses[1] == ("127.0.0.3", 2)
    assert numbers([second]) == [1]


def test_a_lost_actor_takes_what_waited_for_it_and_its_calls_no_longer_count(gateway):
    lost = registered_actor_with_a_full_window(gateway, CONTROL_WINDOW + 3)
    gateway.detach()
    gateway.cancel_task(cancel(100))  # sent while no actor is registered: waits for the replacement
    replacement = FakeActor()
    gateway.bind(replacement)
    gateway.attach(None)
    wait_until(lambda: len(replacement.calls) == 1, what="the message sent after the loss")
    assert numbers(replacement.messages()) == [100]  # the 3 that waited for the lost actor went with it
    lost.answer(100)  # late answers of the lost actor's calls do not open the new actor's window
    for n in range(CONTROL_WINDOW + 1):
        gateway.cancel_task(cancel(200 + n))
    wait_until(lambda: len(replacement.calls) == CONTROL_WINDOW, what="the new actor's full window")
    threading.Event().wait(0.05)
    assert len(replacement.calls) == CONTROL_WINDOW


def test_a_failed_call_is_reported_with_the_message_it_carried(gateway):
    actor = FakeActor()
    gateway.bind(actor)
    gateway.attach(None)
    deploy = DeployTask(spec=None, slot_index=0)  # type: ignore[arg-type] - only carried, never run
    gateway.submit_task(deploy)
    wait_until(lambda: len(actor.calls) == 1, what="the call")
    error = ModuleNotFoundError("No module named 'helpers'")
    actor.answer(1, error)
    wait_until(lambda: gateway.failures.seen, what="the failure")
    index, failed_actor, message, reported = gateway.failures.seen[0]
    assert (index, failed_actor, reported) == (3, actor, error)
    assert isinstance(message, DeployTask) and message.slot_index == 0


def test_after_close_nothing_more_goes_out(gateway):
    actor = FakeActor()
    gateway.bind(actor)
    gateway.cancel_task(cancel(1))
    gateway.close()
    gateway.attach(None)
    gateway.cancel_task(cancel(2))
    threading.Event().wait(0.05)
    assert actor.calls == []


def test_without_a_ray_connection_a_call_fails_and_never_reaches_ray():
    """After ray.shutdown() a Ray call would make Ray start a local instance of its own: the gateway checks first
    and reports the message as failed."""
    from fluvial.cluster.ray.connection import RayDisconnected

    failures = Failures()
    gateway = RayTaskManagerGateway(0, failures, connected=lambda: False)
    try:
        actor = FakeActor()
        gateway.bind(actor)
        gateway.attach(None)
        gateway.cancel_task(cancel(7))
        wait_until(lambda: failures.seen, what="the failure")
        _, _, message, error = failures.seen[0]
        assert numbers([message]) == [7] and isinstance(error, RayDisconnected)
        assert "no longer connected to Ray" in str(error) and actor.calls == []
    finally:
        gateway.close()
