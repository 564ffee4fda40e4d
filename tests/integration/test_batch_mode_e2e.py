"""Jobs in BATCH execution mode, in every execution mode: one final result per key, event-time windows that
fire at the end of input with nothing late, timers at the end of input, and no checkpoints."""

from __future__ import annotations

import collections
import os

import pytest

from fluvial.common import Duration, WatermarkStrategy
from fluvial.common.watermark_strategy import Watermark, WatermarkGenerator
from fluvial.datastream import KeyedProcessFunction, OutputTag, RuntimeExecutionMode
from fluvial.datastream.window import ProcessWindowFunction, TumblingEventTimeWindows
from fluvial.testing import environment, execution_modes

LINES = ["to be or not to be", "that is the question", "to be is to do"]
LATE = OutputTag("late")


def batch_env(mode, parallelism: int = 2):
    env = environment(mode)
    env.set_parallelism(parallelism)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    return env


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_batch_word_count_emits_each_word_once(mode):
    env = batch_env(mode)
    counts = env.from_collection(LINES).flat_map(str.split).map(lambda w: (w, 1)).key_by(lambda pair: pair[0]).sum(1)
    expected = collections.Counter(word for line in LINES for word in line.split())
    assert sorted(counts.execute_and_collect()) == sorted(expected.items())


class Describe(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield (key, context.window().start, sorted(v for _, v, _ in elements))


class EveryEvent(WatermarkGenerator):
    """A watermark right behind the newest timestamp, after every event: anything older is late."""

    def __init__(self):
        self.newest = None

    def on_event(self, event, timestamp, output):
        self.newest = timestamp if self.newest is None else max(self.newest, timestamp)
        output.emit_watermark(Watermark(self.newest - 1))

    def on_periodic_emit(self, output):
        pass


def _windowed(env, events):
    strategy = WatermarkStrategy.for_generator(EveryEvent).with_timestamp_assigner(lambda event, previous: event[2])
    windows = (
        env.from_collection(events)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda event: event[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(100)))
        .side_output_late_data(LATE)
        .process(Describe())
    )
    windows.get_side_output(LATE).map(lambda event: ("late", event)).print()
    return windows


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_batch_event_time_windows_fire_at_the_end_with_nothing_late(mode, capsys):
    # far out of order: a stream sends most of these to the late side output; a batch job windows them all
    events = [("k", value, ts) for value, ts in enumerate([950, 10, 720, 30, 960, 150, 5, 310])]
    expected: dict = collections.defaultdict(list)
    for key, value, ts in events:
        expected[(key, ts - ts % 100)].append(value)
    results = list(_windowed(batch_env(mode, 1), events).execute_and_collect())
    assert sorted(results) == sorted((key, start, sorted(values)) for (key, start), values in expected.items())
    assert "late" not in capsys.readouterr().out
    streaming = environment(mode)
    streaming.set_parallelism(1)
    assert len(list(_windowed(streaming, events).execute_and_collect())) < len(expected)
    assert "late" in capsys.readouterr().out


class RemindInAnHour(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 3_600_000)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_batch_processing_time_timers_fire_at_the_end_of_input(mode):
    env = batch_env(mode)
    fired = env.from_collection(["a", "b", "a"]).key_by(lambda v: v).process(RemindInAnHour())
    assert sorted(fired.execute_and_collect()) == ["a", "b"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", execution_modes())
def test_a_batch_job_with_checkpointing_enabled_runs_without_checkpoints(mode, tmp_path):
    env = batch_env(mode)
    env.enable_checkpointing(10)
    env.get_checkpoint_config().set_checkpoint_storage_dir(tmp_path.as_uri())
    totals = env.from_collection(list(range(1000))).key_by(lambda v: v % 3).reduce(lambda a, b: a + b)
    assert sorted(totals.execute_and_collect()) == sorted(sum(v for v in range(1000) if v % 3 == k) for k in range(3))
    assert not any(files for _, _, files in os.walk(tmp_path))
