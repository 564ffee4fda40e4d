"""TaskExecutor: the one thread that steps every task of a TaskManager in turn. Its tasks here are fakes that log
what the thread asks of them; time is a ManualClock, so timers fire exactly when a test moves it. The thread is
real, so the tests poll for what they wait on (wait_until), never sleep and hope."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from fluvial.runtime.executor import TaskExecutor, TaskProcessingTimeService
from fluvial.runtime.input_processor import StepResult
from fluvial.runtime.task_metrics import TaskTime
from fluvial.testing import ManualClock, wait_until

pytestmark = pytest.mark.timeout(30)


class State:
    def __init__(self) -> None:
        self.is_terminal = False


class FakeTask:
    """Steps through `work` items (PROGRESS for each), then IDLE until `more` arrives, then ends."""

    def __init__(self, name: str, log: list, work: int = 0) -> None:
        self.name = name
        self.log = log
        self.work = work
        self.finish_when_drained = True
        self.state = State()
        self.opened_on: str | None = None
        self.timers: list[tuple[int, str]] = []
        self.metrics = SimpleNamespace(time=TaskTime(time.perf_counter_ns()))  # the executor times each step

    def open(self) -> None:
        self.opened_on = threading.current_thread().name

    def step(self) -> StepResult:
        if self.state.is_terminal:
            return StepResult.END_OF_INPUT
        if self.work > 0:
            self.work -= 1
            self.log.append(self.name)
            return StepResult.PROGRESS
        if self.finish_when_drained:
            self.state.is_terminal = True
            return StepResult.END_OF_INPUT
        return StepResult.IDLE

    def run_timer(self, callback: Callable[[int], None], now: int, label: str) -> None:
        self.timers.append((now, label))
        callback(now)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000)


@pytest.fixture
def executor(clock):
    executor = TaskExecutor("test-executor", clock)
    yield executor
    executor.shutdown()


def test_tasks_are_opened_on_the_executor_thread(executor) -> None:
    task = FakeTask("a", [], work=1)
    executor.submit(task)
    wait_until(lambda: task.opened_on is not None, what="the task to open")
    assert task.opened_on == "test-executor"


def test_tasks_take_turns_one_bounded_step_each(executor) -> None:
    log: list[str] = []
    gate = threading.Event()
    blocker = FakeTask("blocker", log)
    blocker.finish_when_drained = False
    blocker.open = lambda: gate.wait(10)  # holds the thread, so both tasks below are admitted together
    executor.submit(blocker)
    first, second = FakeTask("a", log, work=3), FakeTask("b", log, work=3)
    executor.submit(first)
    executor.submit(second)
    gate.set()
    wait_until(lambda: len(log) == 6, what="six steps")
    assert log == ["a", "b", "a", "b", "a", "b"]


def test_finished_tasks_leave_the_executor(executor) -> None:
    tasks = [FakeTask(name, [], work=2) for name in "abc"]
    for task in tasks:
        executor.submit(task)
    wait_until(lambda: executor.task_count == 0, what="every task to finish and leave")
    assert all(task.state.is_terminal for task in tasks)


def test_timers_fire_when_the_clock_reaches_them_in_time_order(executor, clock) -> None:
    task = FakeTask("a", [])
    task.finish_when_drained = False
    executor.submit(task)
    fired: list[int] = []
    executor.schedule(1_200, task, lambda now: fired.append(1_200), "late")
    executor.schedule(1_100, task, lambda now: fired.append(1_100), "early")
    executor.schedule(1_100, task, lambda now: fired.append(-1_100), "early too")
    wait_until(lambda: clock.reads >= 2, what="the executor to look at the clock")
    assert fired == [], "nothing is due at 1000"
    clock.set(1_150)
    executor.wake()
    wait_until(lambda: len(fired) == 2, what="the timers due by 1150")
    assert fired == [1_100, -1_100], "due timers fire in timestamp order, ties in registration order"
    assert task.timers == [(1_150, "early"), (1_150, "early too")], "a callback gets the time it fired at"
    clock.set(5_000)
    executor.wake()
    wait_until(lambda: len(fired) == 3, what="the last timer")
    assert task.timers[-1] == (5_000, "late")


def test_scheduling_from_another_thread_wakes_the_executor(executor, clock) -> None:
    task = FakeTask("a", [])
    task.finish_when_drained = False
    executor.submit(task)
    wait_until(lambda: task.opened_on is not None, what="the task to open")
    fired = threading.Event()
    threading.Thread(target=executor.schedule, args=(999, task, lambda now: fired.set())).start()
    wait_until(fired.is_set, what="an already due timer scheduled from another thread")


def test_processing_time_service_reads_the_executor_clock_and_labels_its_timers(executor, clock) -> None:
    task = FakeTask("a", [])
    task.finish_when_drained = False
    executor.submit(task)
    service = TaskProcessingTimeService(executor, task, "Window")
    assert service.current_processing_time() == 1_000
    seen: list[int] = []
    service.register_timer(1_000, seen.append)
    wait_until(lambda: seen == [1_000], what="the timer of the service")
    assert task.timers == [(1_000, "Window")]


def test_shutdown_stops_the_thread(clock) -> None:
    executor = TaskExecutor("short-lived", clock)
    executor.shutdown()
    assert not executor._thread.is_alive()


class BlockingTask(FakeTask):
    """Each step sleeps `seconds` (a user function blocked in a call); records the threads it ran on."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(name, [], work=10**6)
        self.finish_when_drained = False
        self.seconds = seconds
        self.threads: set[str] = set()
        self.executor = None

    def step(self) -> StepResult:
        self.threads.add(threading.current_thread().name)
        time.sleep(self.seconds)
        return super().step()

    def move_to(self, executor) -> None:
        self.executor = executor


def test_a_task_whose_steps_block_moves_to_a_thread_of_its_own_with_its_timers(executor, clock) -> None:
    from fluvial.runtime import executor as executor_module

    busy = FakeTask("busy", [], work=10**9)
    busy.finish_when_drained = False
    blocked = BlockingTask("blocked", executor_module.BLOCKED_STEP_NS / 1e9 + 0.05)
    executor.submit(busy)
    executor.submit(blocked)
    fired: list[str] = []
    executor.schedule(5_000, blocked, lambda now: fired.append(threading.current_thread().name), "later")
    wait_until(lambda: blocked.executor is not None, what="the blocked task to move")
    solo = blocked.executor
    assert solo is not executor and solo.name == "test-executor-blocked"
    wait_until(lambda: len(blocked.threads) == 2, what="the blocked task to step on its own thread")
    steps = len(busy.log)
    wait_until(lambda: len(busy.log) > steps + 1000, what="the busy task to go on beside it")
    clock.advance(5_000)
    solo.wake()
    wait_until(lambda: fired == ["test-executor-blocked"], what="the moved timer, on the task's new thread")
    blocked.state.is_terminal = True
    wait_until(lambda: not solo._thread.is_alive(), what="the solo thread to end with its task")


def test_one_slow_step_is_no_reason_to_move(executor) -> None:
    from fluvial.runtime import executor as executor_module

    busy = FakeTask("busy", [], work=10**9)
    busy.finish_when_drained = False
    once = BlockingTask("once", executor_module.BLOCKING_STEP_NS / 1e9 + 0.05)
    once.work, once.finish_when_drained = 1, True
    executor.submit(busy)
    executor.submit(once)
    wait_until(lambda: once.state.is_terminal, what="the slow task to end")
    assert once.executor is None and executor._slow == {}
