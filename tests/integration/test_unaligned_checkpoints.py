"""Unaligned checkpoints under back pressure (FLIP-76, issue 19): a paced map (500 records/s) behind a source that
could go far faster keeps its input channels full. Aligned, each barrier waits behind every queued buffer — on
this machine checkpoints then took 3 s, growing to 10 s and more against a 1 s interval (the counter-example,
measured by `python -m bench.backpressure`, not here: it would cost the suite a minute). Unaligned, the barrier
overtakes the queued buffers, which are persisted as in-flight data: every checkpoint completes in well under a
second, in thread and in process mode, while the queues stay full."""

from __future__ import annotations

import time

import pytest

from fluvial.common import Configuration, Types
from fluvial.common.watermark_strategy import WatermarkStrategy
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.functions import SinkFunction

CHECKPOINTS = 4


class Paced(MapFunction):
    """500 records per second: a slow call per record, as a rate-limited service would be."""

    def map(self, value):
        time.sleep(0.002)
        return value


class Discard(SinkFunction):
    def invoke(self, value, context):
        pass


def completed_checkpoints(client, count: int, timeout_s: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        history = client.get_job_details().result().checkpoints.history
        done = [entry for entry in history if entry["status"] == "COMPLETED"]
        if len(done) >= count:
            return done
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} checkpoints completed within {timeout_s} s: {history}")


def start_paced_job(mode: str, **config: str):
    """The paced job, checkpointing every 500 ms, in `mode` with `config`; its JobClient."""
    configuration = Configuration().set_string("local.taskmanager.mode", mode)
    for key, value in config.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(500)
    (
        env.from_source(NumberSequenceSource(0, 10**9), WatermarkStrategy.no_watermarks(), "numbers")
        .rebalance()
        .map(Paced(), output_type=Types.LONG())
        .add_sink(Discard())
    )
    return env.execute_async("paced")


@pytest.mark.timeout(90)
@pytest.mark.parametrize("mode", ["thread", "process"])
def test_unaligned_checkpoints_of_a_back_pressured_job_complete_in_under_a_second(mode):
    client = start_paced_job(mode, **{"execution.checkpointing.unaligned.enabled": "true"})
    try:
        done = completed_checkpoints(client, CHECKPOINTS)
    finally:
        client.cancel().result()
    assert all(entry["checkpoint_type"] == "UNALIGNED_CHECKPOINT" for entry in done), done
    assert all(entry["end_to_end_duration"] < 1000 for entry in done), [e["end_to_end_duration"] for e in done]
    # the paced task's input channel was full: its checkpoints carried the queued buffers as in-flight data
    assert sum(entry["persisted_data"] > 0 for entry in done) >= CHECKPOINTS - 1, done
