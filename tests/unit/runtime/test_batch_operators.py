"""Operators as a BATCH job runs them (OperatorHarness(batch=True)): reduces emit one final result per key, and
timers of both clocks fire at the end of input only."""

from __future__ import annotations

from fluvial.common.time import MAX_WATERMARK
from fluvial.datastream import KeyedProcessFunction
from fluvial.testing import OperatorHarness


def add(a, b):
    return (a[0], a[1] + b[1])


def test_a_batch_reduce_emits_one_final_result_per_key_at_the_final_watermark():
    harness = OperatorHarness.of(lambda s: s.key_by(lambda v: v[0]).reduce(add), batch=True).open()
    harness.process_elements([("a", 1), ("b", 2), ("a", 3)], [5, 6, 7])
    harness.process_watermark(100).process_elements([("c", 1), ("a", 1)])
    assert harness.output() == [] and harness.watermarks() == [100]
    harness.process_final_watermark()
    assert [(r.value, r.timestamp) for r in harness.output()] == [
        (("a", 5), MAX_WATERMARK),
        (("b", 2), MAX_WATERMARK),
        (("c", 1), MAX_WATERMARK),
    ]
    assert harness.watermarks() == [100, MAX_WATERMARK]
    harness.end_input()
    assert len(harness.output()) == 3  # emitted once
    assert harness.keyed_state_entries() == {}


def test_a_batch_reduce_without_a_final_watermark_emits_at_finish():
    harness = OperatorHarness.of(lambda s: s.key_by(lambda v: v[0]).reduce(add), batch=True).open()
    harness.process_elements([("a", 1), ("a", 2)])
    harness.end_input()
    assert harness.values() == [("a", 3)]


def test_a_streaming_reduce_still_rolls():
    harness = OperatorHarness.of(lambda s: s.key_by(lambda v: v[0]).reduce(add)).open()
    harness.process_elements([("a", 1), ("a", 2)])
    assert harness.values() == [("a", 1), ("a", 3)]


class Timers(KeyedProcessFunction):
    """Registers an event-time timer at the record's value and a processing-time timer 10 ms from now; a
    processing-time timer re-registers itself relative to the clock (which must not loop at end of input)."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1])
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 10)

    def on_timer(self, timestamp, ctx):
        domain = ctx.time_domain().name
        if domain == "PROCESSING_TIME":
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 10)
        yield (ctx.get_current_key(), domain, timestamp)


def test_batch_timers_of_both_clocks_fire_at_the_end_of_input_only():
    harness = OperatorHarness.of(lambda s: s.key_by(lambda v: v[0]).process(Timers()), batch=True).open()
    harness.process_elements([("a", 5), ("b", 3)])
    harness.advance_processing_time(1_000)
    assert harness.values() == []  # processing time does not fire timers before the end
    harness.process_final_watermark()
    assert harness.values() == [
        ("b", "EVENT_TIME", 3),
        ("a", "EVENT_TIME", 5),
        ("a", "PROCESSING_TIME", 10),
        ("b", "PROCESSING_TIME", 10),
    ]
    assert harness.timer_count() == 2  # the re-registered ones, at the end of time + 10: never due


def test_streaming_processing_time_timers_still_fire_on_the_clock():
    harness = OperatorHarness.of(lambda s: s.key_by(lambda v: v[0]).process(Timers())).open()
    harness.process_elements([("a", 5)])
    harness.advance_processing_time(10)
    assert harness.values() == [("a", "PROCESSING_TIME", 10)]
