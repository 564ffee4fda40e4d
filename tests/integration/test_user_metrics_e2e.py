"""User metrics from every place a function gets a metric group: a RuntimeContext, a window trigger's context
and a watermark generator's context; all reported with their operator's metrics when the job ends."""

from __future__ import annotations

import pytest

from fluvial.common import Duration, WatermarkStrategy
from fluvial.common.watermark_strategy import TimestampAssigner, Watermark, WatermarkGenerator
from fluvial.datastream import MapFunction
from fluvial.datastream.window import EventTimeTrigger, TumblingEventTimeWindows
from fluvial.testing import environment, execution_modes

EVENTS = [(key, ts) for ts in range(0, 6000, 100) for key in ("a", "b")]


class CountingTrigger(EventTimeTrigger):
    def on_element(self, element, timestamp, window, ctx):
        ctx.get_metric_group().counter("trigger_elements").inc()
        return super().on_element(element, timestamp, window, ctx)


class CountingGenerator(WatermarkGenerator):
    def __init__(self, context):
        self.events = context.get_metric_group().counter("generator_events")
        self.max_ts = -(2**63)

    def on_event(self, event, event_timestamp, output):
        self.events.inc()
        self.max_ts = max(self.max_ts, event_timestamp)

    def on_periodic_emit(self, output):
        if self.max_ts > -(2**63):
            output.emit_watermark(Watermark(self.max_ts - 1))


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Tagging(MapFunction):
    def open(self, runtime_context):
        self.sizes = runtime_context.get_metrics_group().add_group("key", "all").distribution("ts")

    def map(self, value):
        self.sizes.update(value[1])
        return value


@pytest.mark.parametrize("mode", execution_modes(), ids=lambda mode: mode.value)
def test_metrics_of_functions_triggers_and_generators_are_reported(mode):
    env = environment(mode)
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_generator(CountingGenerator).with_timestamp_assigner(Second())
    env.from_collection(EVENTS).assign_timestamps_and_watermarks(strategy).name("stamp").map(Tagging()).name(
        "tag"
    ).key_by(lambda event: event[0]).window(TumblingEventTimeWindows.of(Duration.of_seconds(1))).trigger(
        CountingTrigger()
    ).reduce(lambda a, b: (a[0], max(a[1], b[1]))).name("window").print()
    client = env.execute_async("user metrics")
    client.get_job_execution_result().result(60)
    samples = {
        (task.operator_names[s.operator_id], s.identifier): (s.value, s.variables)
        for task in client.cluster.job_master.metrics.tasks()
        for s in task.user
    }
    assert samples[("stamp", "generator_events")] == (len(EVENTS), {})
    assert samples[("window", "trigger_elements")] == (len(EVENTS), {})
    assert samples[("tag", "key.all.ts_count")] == (len(EVENTS), {"<key>": "all"})
    assert samples[("tag", "key.all.ts_max")][0] == 5900
