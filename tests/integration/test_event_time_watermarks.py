"""Watermark propagation end to end (DESIGN 2.4, seed 003), run as real jobs.

- A union (one input, two channels) and a two-input operator (two inputs) take the minimum: with a fast
  source racing ahead and a slow one trailing, no record downstream ever finds the clock at or past its own
  timestamp, the clock never goes back, and it does advance.
- An idle input (`with_idleness`) stops holding the clock back: windows of the other input fire while the
  idle source is still running, also when it never emitted a single record; without idleness they wait.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fluvial.common import Duration
from fluvial.common.time import MIN_WATERMARK, current_millis
from fluvial.common.watermark_strategy import (
    Watermark,
    WatermarkGenerator,
    WatermarkStrategy,
)
from fluvial.datastream import (
    CoProcessFunction,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from fluvial.datastream.connectors.collection import CollectionSource
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader
from fluvial.datastream.window import ProcessWindowFunction, TumblingEventTimeWindows
from fluvial.testing import ExecutionMode, environment
from tests.integration.layouts import PARALLELISM_AND_MODE


class EmitTimestampMinusOne(WatermarkGenerator):
    def on_event(self, event, event_timestamp, output):
        output.emit_watermark(Watermark(event_timestamp - 1))

    def on_periodic_emit(self, output):
        pass


def per_event() -> WatermarkStrategy:
    return WatermarkStrategy.for_generator(EmitTimestampMinusOne).with_timestamp_assigner(lambda e, _: e[1])


class ScriptedReader(SourceReader):
    """Emits `records` one per `interval_ms` of wall time (polled, never blocking), then returns [] until
    `linger_ms` passed since it opened, then ends; `linger_ms=None` never ends."""

    def __init__(self, records, interval_ms: int, linger_ms: int | None) -> None:
        self._records = list(records)
        self._interval = interval_ms
        self._linger = linger_ms
        self._opened = current_millis()
        self._next_due = self._opened

    def add_splits(self, splits):
        pass

    def poll(self, max_records):
        now = current_millis()
        if self._records:
            if now < self._next_due:
                return []
            self._next_due = now + self._interval
            return [self._records.pop(0)] if self._interval else self._pop_all()
        if self._linger is None or now - self._opened < self._linger:
            return []
        return None

    def _pop_all(self):
        out, self._records = self._records, []
        return out

    def snapshot_state(self):
        return []


class ScriptedSource(Source):
    def __init__(self, records=(), interval_ms: int = 0, linger_ms: int | None = 0) -> None:
        self.records = list(records)
        self.interval_ms = interval_ms
        self.linger_ms = linger_ms

    def get_boundedness(self):
        return Boundedness.BOUNDED if self.linger_ms is not None else Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism):
        return ["only"]

    def create_reader(self, task_info):
        return ScriptedReader(self.records, self.interval_ms, self.linger_ms)

    def max_parallelism(self):
        return 1


FAST = [("fast", ts) for ts in range(0, 10_000, 10)]
SLOW = [("slow", ts) for ts in range(0, 2_000, 20)]


class ObserveClock(ProcessFunction):
    def process_element(self, value, ctx):
        yield value[0], ctx.timestamp(), ctx.timer_service().current_watermark()


class ObserveClock2(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield value[0], ctx.timestamp(), ctx.timer_service().current_watermark()

    def process_element2(self, value, ctx):
        yield value[0], ctx.timestamp(), ctx.timer_service().current_watermark()


def check_clock_is_the_minimum(observed) -> None:
    assert Counter(source for source, _, _ in observed) == {"fast": len(FAST), "slow": len(SLOW)}
    for source, ts, watermark in observed:
        assert watermark < ts, f"{source} record at {ts} found the clock already at {watermark}"
    clock = [watermark for _, _, watermark in observed]
    assert clock == sorted(clock)  # never goes back
    assert max(clock) > MIN_WATERMARK  # and does advance, held by the slow source
    assert max(clock) < SLOW[-1][1]


def two_sources(env):
    fast = env.from_source(CollectionSource(FAST), per_event(), "fast")
    slow = env.from_source(ScriptedSource(SLOW, interval_ms=3), per_event(), "slow")
    return fast, slow


@pytest.mark.timeout(60)
def test_union_clock_is_the_minimum_of_a_fast_and_a_slow_source():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    fast, slow = two_sources(env)
    check_clock_is_the_minimum(list(fast.union(slow).process(ObserveClock()).execute_and_collect()))


@pytest.mark.timeout(60)
def test_two_input_operator_clock_is_the_minimum_of_its_inputs():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    fast, slow = two_sources(env)
    check_clock_is_the_minimum(list(fast.connect(slow).process(ObserveClock2()).execute_and_collect()))


class CountPerWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        yield key, window.start, len(list(elements)), context.current_processing_time()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_windows_over_a_union_with_a_slow_source_lose_nothing(parallelism, mode):
    env = environment(mode)
    env.set_parallelism(parallelism)
    fast, slow = two_sources(env)
    results = list(
        fast.union(slow)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(1000))
        .process(CountPerWindow())
        .execute_and_collect()
    )
    expected = Counter((key, ts // 1000 * 1000) for key, ts in FAST + SLOW)
    assert Counter({(key, start): count for key, start, count, _ in results}) == expected
    assert len(results) == len(expected)


# -- idleness -----------------------------------------------------------------------------------------------------

BOUNDED = [("a", ts) for ts in range(0, 5000, 7)]
BOUNDED_WINDOWS = Counter((key, ts // 1000 * 1000) for key, ts in BOUNDED)


def idle_job(
    idle_source: ScriptedSource, idleness: bool, parallelism: int = 1, mode: ExecutionMode = ExecutionMode.THREADS
):
    env = environment(mode)
    env.set_parallelism(parallelism)
    env.get_config().set_auto_watermark_interval(10)
    active = env.from_source(CollectionSource(BOUNDED), per_event(), "bounded")
    quiet_strategy = per_event().with_idleness(Duration.of_millis(50)) if idleness else per_event()
    quiet = env.from_source(idle_source, quiet_strategy, "quiet")
    return (
        active.union(quiet).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(1000)).process(CountPerWindow())
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_a_source_that_never_emits_does_not_hold_back_windows_when_idle(parallelism, mode):
    job = idle_job(ScriptedSource(linger_ms=None), idleness=True, parallelism=parallelism, mode=mode)
    results = job.execute_and_collect(limit=len(BOUNDED_WINDOWS))
    assert Counter({(key, start): count for key, start, count, _ in results}) == BOUNDED_WINDOWS


@pytest.mark.timeout(60)
def test_a_source_that_went_quiet_does_not_hold_back_windows_when_idle():
    quiet = ScriptedSource([("q", 10), ("q", 20)], interval_ms=0, linger_ms=None)
    results = idle_job(quiet, idleness=True).execute_and_collect(limit=len(BOUNDED_WINDOWS) + 1)
    expected = BOUNDED_WINDOWS + Counter({("q", 0): 2})
    assert Counter({(key, start): count for key, start, count, _ in results}) == expected


@pytest.mark.timeout(60)
def test_without_idleness_a_quiet_source_holds_windows_back_until_it_ends():
    started = current_millis()
    linger = 1500
    results = list(idle_job(ScriptedSource(linger_ms=linger), idleness=False).execute_and_collect())
    assert Counter({(key, start): count for key, start, count, _ in results}) == BOUNDED_WINDOWS
    # nothing fired before the quiet source ended and released the clock with its final watermark
    assert min(fired_at for _, _, _, fired_at in results) >= started + linger
