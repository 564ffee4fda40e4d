"""Async I/O in real jobs, in every execution mode (PyFlink's test_async_function behaviours, and more): results
of ordered and unordered waits, watermarks that keep event-time order, the user's timeout, failures that name
the cause, and records in flight at a checkpoint issued again after a failover, exactly once."""

from __future__ import annotations

import asyncio
import os
import random

import pytest

from fluvial.common import Encoder, Types, WatermarkStrategy
from fluvial.common.errors import JobExecutionException
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.common.watermark_strategy import Watermark, WatermarkGenerator
from fluvial.datastream import AsyncDataStream, AsyncFunction, MapFunction
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.testing import environment, execution_modes

PAIRS = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
ROW = Types.ROW_NAMED(["v1", "v2"], [Types.INT(), Types.INT()])


def env_of(mode, parallelism: int = 1):
    env = environment(mode)
    env.set_parallelism(parallelism)
    return env


class SumLater(AsyncFunction):
    """Sums a row's fields after a random pause (so calls complete out of order)."""

    async def async_invoke(self, value):
        await asyncio.sleep(random.uniform(0, 0.05))
        return [value[0] + value[1]]

    def timeout(self, value):
        return [value[0] - value[1]]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
@pytest.mark.parametrize("ordered", [True, False])
def test_async_results_over_rows(mode, ordered):
    ds = env_of(mode).from_collection(PAIRS, type_info=ROW)
    wait = AsyncDataStream.ordered_wait if ordered else AsyncDataStream.unordered_wait
    results = list(wait(ds, SumLater(), 5_000, 2, Types.INT()).execute_and_collect())
    assert (results if ordered else sorted(results)) == [2, 4, 6, 8, 10]


class EveryRecord(WatermarkGenerator):
    def on_event(self, event, timestamp, output):
        output.emit_watermark(Watermark(timestamp))

    def on_periodic_emit(self, output):
        pass


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_unordered_wait_keeps_event_time_order_across_watermarks(mode):
    strategy = WatermarkStrategy.for_generator(EveryRecord).with_timestamp_assigner(lambda v, ts: v[1])
    ds = env_of(mode).from_collection(PAIRS, type_info=ROW).assign_timestamps_and_watermarks(strategy)
    results = list(AsyncDataStream.unordered_wait(ds, SumLater(), 5_000, 2, Types.INT()).execute_and_collect())
    assert results == [2, 4, 6, 8, 10]  # a watermark after every record: no result may overtake another


class Sleepy(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(30)
        return [value[0] + value[1]]

    def timeout(self, value):
        return [value[0] - value[1]]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_calls_past_the_timeout_take_the_timeout_results(mode):
    ds = env_of(mode).from_collection(PAIRS, type_info=ROW)
    results = list(AsyncDataStream.unordered_wait(ds, Sleepy(), 200, 5, Types.INT()).execute_and_collect())
    assert results == [0, 0, 0, 0, 0]


class Broken(AsyncFunction):
    def __init__(self, where: str) -> None:
        self.where = where

    async def async_invoke(self, value):
        if self.where == "invoke":
            raise ValueError("encountered an exception")
        if self.where == "result":
            return value[0]
        await asyncio.sleep(30)
        return [value[0]]

    def timeout(self, value):
        raise ValueError("encountered an exception in timeout")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
@pytest.mark.parametrize(
    "where, message",
    [
        ("invoke", "encountered an exception"),
        ("timeout", "encountered an exception in timeout"),
        ("result", "The result of AsyncFunction should be of list type"),
    ],
)
def test_failures_fail_the_job_naming_the_cause(mode, where, message):
    env = env_of(mode)
    AsyncDataStream.unordered_wait(env.from_collection(PAIRS, type_info=ROW), Broken(where), 200, 2).print()
    with pytest.raises(JobExecutionException) as failure:
        env.execute()
    text = f"{failure.value} {failure.value.__cause__}"
    assert message in text and "async wait operator" in str(failure.value)


N = 6_000


class Echo(AsyncFunction):
    """Returns its input after up to 4 ms: with capacity 40 there are always calls in flight at a barrier."""

    async def async_invoke(self, value):
        await asyncio.sleep(random.uniform(0, 0.004))
        return [value]


class FailOnce(MapFunction):
    """Raises once, on the first attempt, after two checkpoints completed (a marker file makes it once)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def open(self, runtime_context):
        self.completed = 0
        self.after_failure = os.path.exists(self.marker)

    def notify_checkpoint_complete(self, checkpoint_id):
        self.completed += 1

    def map(self, value):
        if not self.after_failure and self.completed >= 2:
            self.after_failure = True
            open(self.marker, "w").close()
            raise RuntimeError(f"injected failure at {value}")
        return str(value)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", execution_modes())
def test_records_in_flight_at_a_checkpoint_are_issued_again_after_a_failover_exactly_once(mode, tmp_path):
    env = env_of(mode, 2)
    env.enable_checkpointing(50)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 50))
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    numbers = env.from_source(NumberSequenceSource(1, N)).uid("numbers")
    echoed = AsyncDataStream.ordered_wait(numbers, Echo(), 10_000, 40).uid("echo")
    echoed.map(FailOnce(str(tmp_path / "failed"))).uid("fail").sink_to(sink).uid("sink")
    env.execute("async exactly once")
    assert (tmp_path / "failed").exists(), "the injected failure never ran"
    committed = []
    for root, _, names in os.walk(tmp_path / "out"):
        for name in names:
            if not name.startswith("."):
                with open(os.path.join(root, name), encoding="utf-8") as handle:
                    committed.extend(int(line) for line in handle.read().splitlines())
    assert sorted(committed) == list(range(1, N + 1))
