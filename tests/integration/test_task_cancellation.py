"""A task stuck in a user function is cancelled anyway (issue 13, defect 6; issue 21, defect 5 for processes).

- A user function looping in Python is interrupted (TaskInterrupted is raised into it) and the job is
  CANCELED long before `task.cancellation.timeout`.
- A user function blocked in a call Python cannot interrupt is given up after `task.cancellation.timeout`:
  the task is CANCELED with an ERROR log, its thread is abandoned, and the TaskManager runs later tasks on a
  new thread. Until then a WARNING at every `task.cancellation.interval`, and the ERROR, show where the thread
  is stuck (its stack, as Flink logs the method).
- A checkpoint timeout caused by such a function fails the job over, and the failover does not hang in
  RESTARTING: the stuck attempt is given up and the next attempt runs the job to its end.
- In process mode the TaskManager process of a task that outlives `task.cancellation.timeout` ends itself and
  is replaced, as Flink's does: no stuck thread is left behind per restart.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from fluvial.common import Configuration
from fluvial.common.errors import JobCancelledException
from fluvial.common.job_status import JobStatus
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import MapFunction
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import ExecutionMode, environment, wait_until

pytestmark = pytest.mark.timeout(60)

RELEASE = threading.Event()  # lets the threads the tests abandon finish once the test is done
STARTED = threading.Event()
RESULTS: list[int] = []


def keep(value: int) -> None:
    RESULTS.append(value)  # a module function: every subtask and attempt appends to the same list


@pytest.fixture(autouse=True)
def release_abandoned_threads():
    RELEASE.clear()
    STARTED.clear()
    RESULTS.clear()
    yield
    RELEASE.set()


class Spin(MapFunction):
    def map(self, value):
        STARTED.set()
        while True:  # pure Python: an interrupt ends it
            pass


class BlockOnFirstAttempt(MapFunction):
    """Blocks in a call Python cannot interrupt (a wait on an event) at record 100 of the first attempt."""

    def open(self, runtime_context):
        self.attempt = runtime_context.get_attempt_number()

    def map(self, value):
        if self.attempt == 0 and value == 100:
            STARTED.set()
            RELEASE.wait()
        return value


def cancellation(timeout: str) -> Configuration:
    return (
        Configuration()
        .set_string("task.cancellation.timeout", timeout)
        .set_string("task.cancellation.interval", "100 ms")
    )


def test_a_user_function_looping_in_python_is_interrupted_by_the_cancel():
    env = environment(ExecutionMode.THREADS, cancellation("60 s"))
    env.from_source(NumberSequenceSource(1, 10)).map(Spin()).print()
    client = env.execute_async("spins")
    assert STARTED.wait(10)
    client.cancel()
    with pytest.raises(JobCancelledException):  # well before the 60 s cancellation timeout: interrupted
        client.get_job_execution_result().result(timeout=30)


def test_a_user_function_blocked_in_a_call_is_given_up_after_the_cancellation_timeout(caplog):
    env = environment(ExecutionMode.THREADS, cancellation("300 ms"))
    env.from_source(NumberSequenceSource(1, 1000)).map(BlockOnFirstAttempt()).print()
    client = env.execute_async("blocks")
    assert STARTED.wait(10)
    with (
        caplog.at_level(logging.ERROR, logger="fluvial.cluster.task_manager"),
        caplog.at_level(logging.WARNING, logger="fluvial.cluster.task_canceler"),
    ):
        client.cancel()
        with pytest.raises(JobCancelledException):
            client.get_job_execution_result().result(timeout=30)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("did not cancel within 300 ms" in m and "abandoned" in m for m in errors), errors
    stuck = next(m for m in errors if "did not cancel" in m)
    assert "The thread is stuck in:" in stuck and "in map" in stuck and "RELEASE.wait()" in stuck, stuck
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("did not react to its cancel in 100 ms" in m and "RELEASE.wait()" in m for m in warnings), warnings
    task_manager = client.cluster.task_managers[0]
    assert task_manager._abandoned, "the stuck thread was not replaced"


def test_a_checkpoint_timeout_behind_a_stuck_function_does_not_leave_the_job_restarting():
    configuration = cancellation("300 ms")
    env = environment(ExecutionMode.THREADS, configuration)
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_timeout(200)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 10))
    env.from_source(NumberSequenceSource(1, 1000)).map(BlockOnFirstAttempt()).add_sink(keep)
    client = env.execute_async("a checkpoint times out behind a stuck function")
    assert STARTED.wait(10)
    wait_until(
        lambda: (
            client.get_job_status().result() is not JobStatus.RUNNING or client.get_job_details().result().restarts > 0
        ),
        what="the failover",
        timeout=20,
    )
    client.get_job_execution_result().result(timeout=30)
    details = client.get_job_details().result(timeout=5)
    assert details.status is JobStatus.FINISHED and details.restarts == 1
    assert "expired" in details.last_failure.message or "consecutive" in details.last_failure.message
    assert sorted(set(RESULTS)) == list(range(1, 1001))


class OneFailsOneBlocks(MapFunction):
    """First attempt: subtask 1 blocks in a call Python cannot interrupt; subtask 0 then fails, so the failover
    must cancel the blocked one."""

    def open(self, runtime_context):
        self.attempt = runtime_context.get_attempt_number()
        self.subtask = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        if self.attempt == 0 and self.subtask == 1:
            time.sleep(600)  # not interruptible: only ending the process ends it
        if self.attempt == 0 and self.subtask == 0:
            time.sleep(0.2)
            raise RuntimeError("fails while the other subtask is stuck")
        return value


def test_a_stuck_task_in_a_task_manager_process_gets_the_process_replaced(caplog):
    env = environment(ExecutionMode.PROCESSES, cancellation("300 ms"))
    env.set_parallelism(2)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 10))
    env.from_source(NumberSequenceSource(1, 100)).map(OneFailsOneBlocks()).add_sink(lambda value: None)
    client = env.execute_async("a stuck task in a process")
    wait_until(lambda: len(client.cluster.processes.pids) == 2, what="the TaskManager processes")
    before = set(client.cluster.processes.pids)
    with caplog.at_level(logging.ERROR, logger="fluvial.cluster.process.worker"):
        client.get_job_execution_result().result(timeout=40)
    assert client._job_master.restarts >= 1
    replaced = before - set(client.cluster.processes.pids)
    assert len(replaced) == 1, "the process with the stuck thread was not replaced"
    errors = [r.getMessage() for r in caplog.records if "did not cancel within 300 ms" in r.getMessage()]
    assert errors and "time.sleep(600)" in errors[0] and "this TaskManager process ends" in errors[0], errors
