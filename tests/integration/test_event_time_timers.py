"""Timers of a KeyedProcessFunction, run as real jobs: event-time timers fire in timestamp order per key,
once per (key, timestamp), never after deletion, with the right key, timestamp and time domain, when the
watermark passes them; processing-time timers fire on the wall clock; a non-keyed function that registers a
timer fails the job with an error that says timers need a keyed stream."""

from __future__ import annotations

from collections import defaultdict

import pytest

from fluvial.common.errors import FluvialError
from fluvial.common.time import MAX_WATERMARK, current_millis
from fluvial.common.watermark_strategy import (
    Watermark,
    WatermarkGenerator,
    WatermarkStrategy,
)
from fluvial.datastream import (
    KeyedProcessFunction,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader
from fluvial.datastream.timerservice import TimeDomain
from fluvial.testing import ExecutionMode, environment
from tests.integration.layouts import PARALLELISM_AND_MODE


class EmitTimestampMinusOne(WatermarkGenerator):
    def on_event(self, event, event_timestamp, output):
        output.emit_watermark(Watermark(event_timestamp - 1))

    def on_periodic_emit(self, output):
        pass


def env_with(parallelism: int, mode: ExecutionMode | None = None) -> StreamExecutionEnvironment:
    """An environment of `mode` (None: the default, auto)."""
    env = environment(mode)
    env.set_parallelism(parallelism)
    env.get_config().set_auto_watermark_interval(0)
    return env


def per_event_strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_generator(EmitTimestampMinusOne).with_timestamp_assigner(lambda e, _: e[1])


class TimerScript(KeyedProcessFunction):
    """Each record is (key, ts, register, delete): timestamps to register, then to delete. Emits what it saw
    on each record and on each timer."""

    def process_element(self, value, ctx):
        _, ts, register, delete = value
        for timestamp in register:
            ctx.timer_service().register_event_time_timer(timestamp)
        for timestamp in delete:
            ctx.timer_service().delete_event_time_timer(timestamp)
        yield "element", ctx.get_current_key(), ts, ctx.timer_service().current_watermark()

    def on_timer(self, timestamp, ctx):
        yield (
            "timer",
            ctx.get_current_key(),
            timestamp,
            ctx.time_domain(),
            ctx.timestamp(),
            ctx.timer_service().current_watermark(),
        )


class AttachTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield value, ctx.timestamp()


SCRIPT = [
    ("a", 10, [300, 100, 200, 100], []),  # 100 registered twice: fires once
    ("b", 20, [150, 50, 400], []),
    ("a", 30, [250], [200]),  # 200 deleted before it is due
    ("b", 40, [], [400, 999]),  # 400 deleted; deleting an unknown timer is harmless
    ("c", 50, [120], [120]),  # registered and deleted at once: never fires
    ("a", 60, [300], []),  # duplicate of a pending timer; clock 59: b@50 is due
    ("b", 160, [], []),  # clock 159: a@100, b@150 are due
    ("a", 260, [260], []),  # clock 259: a@250 fires; a@260 is not yet due
    ("c", 500, [700], []),  # clock 499: a@260, a@300 fire
]
EXPECTED_TIMERS = {"a": [100, 250, 260, 300], "b": [50, 150], "c": [700]}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_event_time_timers_fire_in_order_once_and_not_after_deletion(parallelism, mode):
    env = env_with(parallelism, mode)
    # one assigner, as the script is one ordered stream: at the job's parallelism the records would be
    # rebalanced over assigners, and a key's records (and the watermarks after them) would race each other
    stream = env.from_collection(SCRIPT).assign_timestamps_and_watermarks(per_event_strategy()).set_parallelism(1)
    out = list(stream.key_by(lambda e: e[0]).process(TimerScript()).process(AttachTimestamp()).execute_and_collect())
    timers = [(value, ts) for value, ts in out if value[0] == "timer"]
    fired: dict[str, list[int]] = defaultdict(list)
    for (_, key, timestamp, domain, ctx_ts, watermark), record_ts in timers:
        fired[key].append(timestamp)
        assert domain is TimeDomain.EVENT_TIME
        assert ctx_ts == timestamp  # ctx.timestamp() in on_timer is the timer's timestamp
        assert record_ts == timestamp  # and so is the timestamp of what it emits
        assert watermark >= timestamp  # it fired because the watermark passed it
    assert dict(fired) == EXPECTED_TIMERS
    # timers due before the end fired at the watermark that passed them, not at the final watermark
    assert {key: [t for (_, k, t, _, _, wm), _ in timers if k == key and wm != MAX_WATERMARK] for key in "abc"} == {
        "a": [100, 250, 260, 300],
        "b": [50, 150],
        "c": [],
    }
    elements = [value for value, _ in out if value[0] == "element"]
    assert len(elements) == len(SCRIPT)


@pytest.mark.timeout(60)
def test_timers_fire_between_the_records_that_move_the_watermark_past_them():
    env = env_with(1)
    stream = env.from_collection(SCRIPT).assign_timestamps_and_watermarks(per_event_strategy())
    out = list(stream.key_by(lambda e: e[0]).process(TimerScript()).execute_and_collect())
    sequence = [(kind, key, ts) for kind, key, ts, *_ in out]
    # a timer fires right after the record whose watermark passes it; due together, in timestamp order
    assert sequence == [
        ("element", "a", 10),
        ("element", "b", 20),
        ("element", "a", 30),
        ("element", "b", 40),
        ("element", "c", 50),
        ("element", "a", 60),
        ("timer", "b", 50),
        ("element", "b", 160),
        ("timer", "a", 100),
        ("timer", "b", 150),
        ("element", "a", 260),
        ("timer", "a", 250),
        ("element", "c", 500),
        ("timer", "a", 260),
        ("timer", "a", 300),
        ("timer", "c", 700),
    ]
    # each record sees the watermark left by the record before it
    element_watermarks = [item[3] for item in out if item[0] == "element"]
    assert element_watermarks[1:] == [10 - 1, 20 - 1, 30 - 1, 40 - 1, 50 - 1, 60 - 1, 160 - 1, 260 - 1]


# -- processing time ----------------------------------------------------------------------------------------------


class LingeringReader(SourceReader):
    """Emits its records, then keeps the job alive (returning []) until `linger_ms` passed, then ends."""

    def __init__(self, records, linger_ms: int) -> None:
        self._records = list(records)
        self._linger_ms = linger_ms
        self._done_at = None

    def add_splits(self, splits):
        pass

    def poll(self, max_records):
        if self._records:
            out, self._records = self._records, []
            self._done_at = current_millis()
            return out
        if current_millis() - self._done_at < self._linger_ms:
            return []
        return None

    def snapshot_state(self):
        return []


class LingeringSource(Source):
    def __init__(self, records, linger_ms: int) -> None:
        self.records = list(records)
        self.linger_ms = linger_ms

    def get_boundedness(self):
        return Boundedness.BOUNDED

    def create_splits(self, parallelism):
        return ["only"]

    def create_reader(self, task_info):
        return LingeringReader(self.records, self.linger_ms)

    def max_parallelism(self):
        return 1


class ProcessingTimeTimers(KeyedProcessFunction):
    def process_element(self, value, ctx):
        now = ctx.timer_service().current_processing_time()
        ctx.timer_service().register_processing_time_timer(now + 50)
        ctx.timer_service().register_processing_time_timer(now + 50)  # deduplicated
        ctx.timer_service().register_processing_time_timer(now + 60)
        ctx.timer_service().delete_processing_time_timer(now + 60)
        yield "registered", value, now + 50

    def on_timer(self, timestamp, ctx):
        yield (
            "fired",
            ctx.get_current_key(),
            timestamp,
            ctx.time_domain(),
            ctx.timer_service().current_processing_time(),
        )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_processing_time_timers_fire_on_the_wall_clock(parallelism, mode):
    env = env_with(parallelism, mode)
    keys = ["x", "y", "z"]
    stream = env.from_source(LingeringSource(keys, linger_ms=1500), None, "lingering")
    out = list(stream.key_by(lambda k: k).process(ProcessingTimeTimers()).execute_and_collect())
    registered = {value: due for kind, value, due in (o for o in out if o[0] == "registered")}
    fired = [o for o in out if o[0] == "fired"]
    assert sorted(key for _, key, *_ in fired) == keys  # once per key: duplicate and deleted timers not fired
    for _, key, timestamp, domain, now in fired:
        assert domain is TimeDomain.PROCESSING_TIME
        assert timestamp == registered[key]
        assert now >= timestamp


# -- timers need keys ---------------------------------------------------------------------------------------------


class UnkeyedTimer(ProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(1000)
        yield value


@pytest.mark.timeout(60)
def test_non_keyed_process_function_registering_a_timer_fails_the_job_naming_keyed():
    env = env_with(1)
    stream = env.from_collection([("a", 1, [], [])]).assign_timestamps_and_watermarks(per_event_strategy())
    with pytest.raises(FluvialError) as info:
        list(stream.process(UnkeyedTimer()).execute_and_collect())
    text = str(info.value) + " " + str(info.value.__cause__)
    assert "keyed" in text.lower()
    assert "key_by" in text


@pytest.mark.timeout(60)
def test_timer_with_a_non_int_timestamp_fails_the_job_clearly():
    class BadTimer(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer("soon")
            yield value

    env = env_with(1)
    with pytest.raises(FluvialError) as info:
        list(env.from_collection([1, 2]).key_by(lambda v: v).process(BadTimer()).execute_and_collect())
    text = str(info.value) + " " + str(info.value.__cause__)
    assert "'soon'" in text and "int" in text
