"""A job that keeps failing is never silent (issue 13, defect 5).

- Every failure and every restart is logged at WARNING with its cause and the attempt; giving up at ERROR.
- `JobClient.get_job_details()` shows the restart count and the latest failure, while the job runs too: a job
  restarting in a loop no longer looks merely RUNNING.
- State that cannot be unpickled at restore (here: a value whose class cannot be rebuilt) fails the job at once
  naming the state file, however many restarts its strategy allows.
"""

from __future__ import annotations

import logging

import pytest

from fluvial.common import Types
from fluvial.common.errors import JobExecutionException, UnreadableStateError, is_non_recoverable
from fluvial.common.job_status import JobStatus
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import KeyedProcessFunction, KeySelector, MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.testing import Crash, Pause, ScriptedSource, wait_until

pytestmark = pytest.mark.timeout(60)


class AlwaysFails(MapFunction):
    def map(self, value):
        raise ValueError(f"bad record {value}")


def test_every_failure_and_restart_is_logged_at_warning_with_its_cause_and_attempt(caplog):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 10))
    env.from_collection([7]).map(AlwaysFails()).print()
    client = env.execute_async("fails every time")
    with caplog.at_level(logging.WARNING, logger="fluvial"), pytest.raises(JobExecutionException):
        client.get_job_execution_result().result(timeout=30)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for restart in (1, 2):
        assert any(
            "ValueError: bad record 7" in m and f"restarting (restart {restart})" in m and "(attempt" in m
            for m in warnings
        ), warnings
        assert any(
            f"restart {restart}: redeploying every subtask after ValueError: bad record 7" in m for m in warnings
        ), warnings
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("bad record 7" in m and "allows no more restarts after 2" in m for m in errors), errors
    details = client.get_job_details().result(timeout=5)
    assert (details.status, details.restarts, details.failures) == (JobStatus.FAILED, 2, 3)
    assert details.last_failure.exception == "ValueError" and details.last_failure.message == "bad record 7"
    assert "Map" in details.last_failure.location and "attempt 2" in details.last_failure.location
    assert "raise ValueError" in details.last_failure.traceback


def test_job_details_show_restarts_and_the_last_failure_while_the_job_runs(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(50)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 10))
    script = [1, 2, Crash(str(tmp_path / "crashed"), "scripted crash"), 3]
    env.from_source(ScriptedSource(script, unbounded=True)).print()
    client = env.execute_async("fails once, then runs")
    try:
        wait_until(lambda: client.get_job_details().result(timeout=5).restarts == 1, what="one restart")
        wait_until(lambda: client.get_job_status().result() is JobStatus.RUNNING, what="the job running again")
        details = client.get_job_details().result(timeout=5)
        assert details.status is JobStatus.RUNNING and details.failures == 1
        assert details.last_failure.summary().startswith("ScriptCrash: scripted crash (in operator 'Source")
        assert details.last_failure.restartable
    finally:
        client.cancel()
    with pytest.raises(JobExecutionException):
        client.get_job_execution_result().result(timeout=30)


def _cannot_rebuild(value):
    raise RuntimeError("this class was removed from the program")


class Fragile:
    """A state value whose pickle cannot be loaded back: what a value of a renamed or removed class is."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __deepcopy__(self, memo):
        return Fragile(self.value)  # a checkpoint's copy works; only loading the pickle back fails

    def __reduce__(self):
        return (_cannot_rebuild, (self.value,))


class Keep(KeyedProcessFunction):
    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("fragile", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        self.state.update(Fragile(value))
        yield value


def test_state_that_cannot_be_unpickled_fails_the_job_at_once_naming_the_file(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(30)
    env.get_checkpoint_config().set_checkpoint_storage(
        FileSystemCheckpointStorage(f"file://{tmp_path / 'checkpoints'}", file_state_size_threshold=0)
    )
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(100, 10))
    marker = tmp_path / "crashed"
    script = list(range(20)) + [Pause(str(tmp_path / "go")), Crash(str(marker)), 99]
    (env.from_source(ScriptedSource(script)).uid("script").key_by(lambda v: v % 3).process(Keep()).uid("keep").print())
    client = env.execute_async("unpicklable state")
    store = client._job_master.checkpointing.store
    wait_until(lambda: store.latest() is not None and store.latest().checkpoint_id >= 2, what="two checkpoints")
    (tmp_path / "go").touch()  # now the source crashes, and the restore meets the state
    with pytest.raises(JobExecutionException) as info:
        client.get_job_execution_result().result(timeout=30)
    cause = info.value.__cause__
    assert isinstance(cause, UnreadableStateError) and is_non_recoverable(cause)
    assert "operator 'KeyedProcess' cannot restore its keyed state of checkpoint" in str(cause)
    assert "state file file://" in str(cause) and "this class was removed from the program" in str(cause)
    assert client.get_job_details().result(timeout=5).restarts == 1


def test_a_failing_key_selector_is_named_as_the_key_by(mode):
    from fluvial.testing import environment

    def broken_key(value):
        return value["missing"]  # the values are ints

    env = environment(mode)
    env.set_parallelism(2)
    env.from_collection([1, 2, 3], type_info=Types.INT()).map(lambda v: v + 1, output_type=Types.INT()).key_by(
        broken_key
    ).reduce(lambda a, b: a + b).print()
    with pytest.raises(JobExecutionException) as raised:
        env.execute("a broken key selector")
    message = str(raised.value)
    assert "operator 'key_by(test_a_failing_key_selector_is_named_as_the_key_by.<locals>.broken_key)'" in message, (
        message
    )
    assert "TypeError" in message and "operator 'Map'" not in message


class Echo(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


class FieldKey(KeySelector):
    def get_key(self, value):
        return value["missing"]  # the values are ints


# where the keyed operator computes the key itself (parallelism 1: the key_by edge is forward): a fused run of a
# running reduce and a map, a keyed process function (a KeySelector object), a window of a keyed stream
KEYED_CONSUMERS = {
    "reduce": lambda keyed: keyed.reduce(lambda a, b: a + b).map(lambda v: v, output_type=Types.INT()),
    "process": lambda keyed: keyed.process(Echo(), output_type=Types.INT()),
    "window": lambda keyed: keyed.count_window(2).reduce(lambda a, b: a + b),
}


@pytest.mark.parametrize("consumer", sorted(KEYED_CONSUMERS))
def test_a_failing_key_selector_is_named_as_the_key_by_where_the_keyed_operator_computes_the_key(mode, consumer):
    from fluvial.testing import environment

    def broken_key(value):
        return value["missing"]  # the values are ints

    selector = FieldKey() if consumer == "process" else broken_key
    env = environment(mode)
    env.set_parallelism(1)
    keyed = (
        env.from_collection([1, 2, 3], type_info=Types.INT())
        .map(lambda v: v + 1, output_type=Types.INT())
        .key_by(selector, key_type=Types.INT())
    )
    KEYED_CONSUMERS[consumer](keyed).print()
    with pytest.raises(JobExecutionException) as raised:
        env.execute("a broken key selector at parallelism 1")
    message = str(raised.value)
    named = (
        "FieldKey"
        if consumer == "process"
        else "test_a_failing_key_selector_is_named_as_the_key_by_where_the_keyed_operator_computes_the_key.<locals>."
        "broken_key"
    )
    assert f"operator 'key_by({named})'" in message, message
    assert "TypeError" in message
