"""stop-with-savepoint with drain (Flink's `flink stop --drain`, PyFlink's
`stop_with_savepoint(advance_to_end_of_event_time=True)`): the sources send MAX_WATERMARK ahead of the
savepoint's barrier, so event-time windows that would otherwise stay open fire into the output the savepoint
commits, and end the input (the sink writers flush at end of input); without drain they stay open, their
contents in the savepoint, and nothing ends its input."""

from __future__ import annotations

import os
import time

import pytest

from fluvial.common import Duration, Encoder, Time, Types, WatermarkStrategy
from fluvial.common.watermark_strategy import TimestampAssigner
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.connectors.sink import Sink, SinkWriter
from fluvial.datastream.window import TumblingEventTimeWindows
from fluvial.testing import EventLog, ExecutionMode, environment
from fluvial.testing.oracle import committed_lines
from tests.integration.test_checkpoint_savepoint_rescale import SlowWithProgress

KEYS = 3
HOUR_MS = 3_600_000


class MillisecondsAreTheNumber(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value  # n ms: the job never reaches the end of its first one-hour window


class EndOfInputWriter(SinkWriter):
    def __init__(self, log: EventLog) -> None:
        self.log = log

    def write_batch(self, values: list) -> None:
        pass

    def flush(self, end_of_input: bool) -> None:
        if end_of_input:
            self.log.record("end of input")


class EndOfInputLog(Sink):
    """Records, in `log`, each writer's flush at end of input."""

    def __init__(self, log: EventLog) -> None:
        self.log = log

    def create_writer(self, task_info, restored_state=None) -> SinkWriter:
        return EndOfInputWriter(self.log)


def start(tmp_path, mode):
    env = environment(mode)
    env.set_parallelism(2)
    env.enable_checkpointing(HOUR_MS)  # savepoints need checkpointing; no periodic checkpoint interferes
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        MillisecondsAreTheNumber()
    )
    lines = (
        env.from_source(NumberSequenceSource(0, 10**9), source_name="numbers")
        .map(SlowWithProgress(str(tmp_path / "progress")), output_type=Types.LONG())
        .assign_timestamps_and_watermarks(strategy)
        .map(lambda n: (n % KEYS, 1))
        .key_by(lambda pair: pair[0])
        .window(TumblingEventTimeWindows.of(Time.hours(1)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda pair: f"{pair[0]}|{pair[1]}")
    )
    lines.sink_to(sink)
    lines.sink_to(EndOfInputLog(EventLog(tmp_path / "events")))
    client = env.execute_async("endless hour windows")
    deadline = time.monotonic() + 60
    while not (tmp_path / "progress").exists():
        assert not client.get_job_execution_result().done(), "the job ended before it made progress"
        assert time.monotonic() < deadline, "no progress within 60 s"
        time.sleep(0.005)
    return client


def stop_with_drain(tmp_path, mode) -> None:
    client = start(tmp_path, mode)
    path = client.stop_with_savepoint(True, str(tmp_path / "savepoints")).result(timeout=60)
    assert os.path.exists(path.removeprefix("file://"))
    client.get_job_execution_result().result(timeout=60)  # stopped: FINISHED after its savepoint, as in Flink
    assert client.get_job_status().result().name == "FINISHED"
    counts = dict(line.split("|") for line in committed_lines(tmp_path / "out")[0])
    assert set(counts) == {str(key) for key in range(KEYS)}, counts  # one hour window per key, fired once
    assert sum(int(count) for count in counts.values()) >= 500  # at least what the progress mark needed
    assert EventLog(tmp_path / "events").count("end of input") == 2  # each of the 2 sink subtasks, once


def stop_without_drain(tmp_path, mode) -> None:
    client = start(tmp_path, mode)
    client.stop_with_savepoint(False, str(tmp_path / "savepoints")).result(timeout=60)
    client.get_job_execution_result().result(timeout=60)
    assert client.get_job_status().result().name == "FINISHED"
    assert committed_lines(tmp_path / "out")[0] == []
    assert EventLog(tmp_path / "events").count("end of input") == 0


@pytest.mark.timeout(120)
def test_drain_fires_the_open_windows_into_the_savepoints_output(tmp_path, mode):
    stop_with_drain(tmp_path, mode)


@pytest.mark.timeout(120)
def test_without_drain_the_windows_stay_open_and_nothing_is_output(tmp_path, mode):
    stop_without_drain(tmp_path, mode)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("check", [stop_with_drain, stop_without_drain], ids=["drain", "no-drain"])
def test_on_ray_too(tmp_path, ray_cluster, check):
    """The drain flag travels in the trigger, through the Ray actor calls too."""
    check(tmp_path, ExecutionMode.RAY)
