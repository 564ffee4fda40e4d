"""WatermarkStrategy and the generators it builds: the arithmetic, idleness timing, custom generators,
immutability, picklability and the errors a user sees."""

from __future__ import annotations

import dataclasses
import math
import pickle
from typing import Any

import cloudpickle
import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import Duration, ManualClock
from fluvial.common.watermark_strategy import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    TimestampAssigner,
    Watermark,
    WatermarkGenerator,
    WatermarkGeneratorContext,
    WatermarkOutput,
    WatermarkStrategy,
    WatermarksWithIdleness,
    checked_timestamp,
)


class RecordingOutput(WatermarkOutput):
    """Records every call in order: ("wm", ts), ("idle",), ("active",)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def emit_watermark(self, watermark: Watermark) -> None:
        self.calls.append(("wm", watermark.get_timestamp()))

    def mark_idle(self) -> None:
        self.calls.append(("idle",))

    def mark_active(self) -> None:
        self.calls.append(("active",))

    def watermarks(self) -> list[int]:
        return [call[1] for call in self.calls if call[0] == "wm"]


class PunctuatedGenerator(WatermarkGenerator):
    """Emits a watermark on every event whose value ends with '!' (a per-event generator)."""

    def on_event(self, event: Any, event_timestamp: int | None, output: WatermarkOutput) -> None:
        if str(event).endswith("!"):
            output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        pass


def feed(generator: WatermarkGenerator, output: WatermarkOutput, timestamps: list[int | None]) -> None:
    for ts in timestamps:
        generator.on_event(f"e{ts}", ts, output)


# ---------------------------------------------------------------------------------------------------------
# Built-in generators
# ---------------------------------------------------------------------------------------------------------


def test_bounded_out_of_orderness_emits_max_minus_bound_minus_one() -> None:
    generator = BoundedOutOfOrdernessWatermarks(5)
    output = RecordingOutput()
    feed(generator, output, [10, 30, 7])
    assert output.calls == [], "a periodic generator emits nothing on events"
    generator.on_periodic_emit(output)
    assert output.watermarks() == [30 - 5 - 1]
    feed(generator, output, [12])  # late, older than the max: the watermark does not move
    generator.on_periodic_emit(output)
    assert output.watermarks() == [24, 24]


def test_bounded_out_of_orderness_emits_nothing_before_the_first_event() -> None:
    generator = BoundedOutOfOrdernessWatermarks(1_000)
    output = RecordingOutput()
    generator.on_periodic_emit(output)
    generator.on_event("no timestamp", None, output)  # records without a timestamp do not move it
    generator.on_periodic_emit(output)
    assert output.calls == []


def test_a_record_exactly_bound_older_than_the_newest_is_not_late() -> None:
    bound, newest = 100, 5_000
    generator = BoundedOutOfOrdernessWatermarks(bound)
    output = RecordingOutput()
    generator.on_event("x", newest, output)
    generator.on_periodic_emit(output)
    (watermark,) = output.watermarks()
    assert newest - bound > watermark, "a watermark t declares records <= t late"
    assert newest - bound - 1 == watermark


def test_monotonous_timestamps_trail_the_newest_by_one() -> None:
    generator = AscendingTimestampsWatermarks()
    output = RecordingOutput()
    feed(generator, output, [1, 2, 40])
    generator.on_periodic_emit(output)
    assert output.watermarks() == [39]
    assert generator.max_out_of_orderness_ms == 0


def test_no_watermarks_generator_never_emits() -> None:
    generator = NoWatermarksGenerator()
    output = RecordingOutput()
    feed(generator, output, [1, 2, 3])
    generator.on_batch_max(99)
    generator.on_periodic_emit(output)
    assert output.calls == []


def test_batch_fast_path_equals_per_event_calls() -> None:
    per_event, batched = BoundedOutOfOrdernessWatermarks(3), BoundedOutOfOrdernessWatermarks(3)
    out_a, out_b = RecordingOutput(), RecordingOutput()
    timestamps = [5, 50, 8, 49]
    feed(per_event, out_a, timestamps)
    batched.on_batch_max(max(timestamps))
    batched.on_batch_max(None)  # a buffer without timestamps changes nothing
    per_event.on_periodic_emit(out_a)
    batched.on_periodic_emit(out_b)
    assert out_a.calls == out_b.calls == [("wm", 46)]


def test_a_subclass_overriding_on_event_loses_the_batch_fast_path() -> None:
    class Noisy(BoundedOutOfOrdernessWatermarks):
        def on_event(self, event: Any, event_timestamp: int | None, output: WatermarkOutput) -> None:
            super().on_event(event, event_timestamp, output)
            output.emit_watermark(Watermark(event_timestamp))

    assert getattr(Noisy(1), "on_batch_max", None) is None, "the runtime must call its on_event per record"
    assert getattr(BoundedOutOfOrdernessWatermarks(1), "on_batch_max", None) is not None
    assert getattr(PunctuatedGenerator(), "on_batch_max", None) is None


# ---------------------------------------------------------------------------------------------------------
# Idleness
# ---------------------------------------------------------------------------------------------------------


def test_idleness_marks_idle_once_after_the_timeout_and_active_on_the_next_event() -> None:
    clock = ManualClock(1_000)
    generator = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(0), 100, clock)
    output = RecordingOutput()

    generator.on_event("a", 500, output)
    generator.on_periodic_emit(output)  # activity since the last probe: emits, timer stays off
    assert output.calls == [("wm", 499)]

    generator.on_periodic_emit(output)  # first quiet probe at t=1000: the quiet period starts here
    clock.set(1_099)
    generator.on_periodic_emit(output)
    assert ("idle",) not in output.calls, "99 ms of quiet is below the 100 ms timeout"
    assert output.calls == [("wm", 499)] * 3

    clock.set(1_100)
    generator.on_periodic_emit(output)
    assert output.calls[-1] == ("idle",)
    assert generator.is_idle

    calls_when_idle = len(output.calls)
    clock.set(5_000)
    generator.on_periodic_emit(output)
    assert len(output.calls) == calls_when_idle, "idle is announced once and watermarks stop while idle"

    generator.on_event("b", 600, output)
    assert output.calls[-1] == ("active",), "an event reactivates the output at once"
    assert not generator.is_idle
    generator.on_periodic_emit(output)
    assert output.calls[-1] == ("wm", 599)


def test_idleness_without_any_event_goes_idle_after_the_timeout() -> None:
    clock = ManualClock(0)
    generator = WatermarksWithIdleness(NoWatermarksGenerator(), 50, clock)
    output = RecordingOutput()
    generator.on_periodic_emit(output)
    clock.set(49)
    generator.on_periodic_emit(output)
    assert output.calls == []
    clock.set(50)
    generator.on_periodic_emit(output)
    assert output.calls == [("idle",)]


def test_events_between_probes_keep_the_output_active() -> None:
    clock = ManualClock(0)
    generator = WatermarksWithIdleness(AscendingTimestampsWatermarks(), 10, clock)
    output = RecordingOutput()
    for step in range(20):
        clock.set(step * 7)
        generator.on_event("x", step, output)
        generator.on_periodic_emit(output)
    assert ("idle",) not in output.calls


def test_idleness_batch_path_reactivates_before_the_next_watermark() -> None:
    clock = ManualClock(0)
    generator = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(0), 10, clock)
    output = RecordingOutput()
    generator.on_periodic_emit(output)
    clock.set(10)
    generator.on_periodic_emit(output)
    assert output.calls == [("idle",)]

    batch_max = generator.on_batch_max
    assert batch_max is not None
    batch_max(42)  # no output at hand: the reactivation is owed
    generator.on_periodic_emit(output)
    assert output.calls == [("idle",), ("active",), ("wm", 41)]

    batch_max(50, output)  # with an output (not idle now): nothing to announce
    assert output.calls[-1] == ("wm", 41)


def test_idleness_offers_the_batch_path_only_if_the_wrapped_generator_does() -> None:
    assert WatermarksWithIdleness(PunctuatedGenerator(), 10).on_batch_max is None
    assert WatermarksWithIdleness(AscendingTimestampsWatermarks(), 10).on_batch_max is not None


@pytest.mark.parametrize("timeout", [0, -5])
def test_idleness_generator_rejects_a_non_positive_timeout(timeout: int) -> None:
    with pytest.raises(InvalidJobError, match=rf"idle timeout must be > 0 ms, got {timeout}"):
        WatermarksWithIdleness(NoWatermarksGenerator(), timeout)


# ---------------------------------------------------------------------------------------------------------
# The strategy
# ---------------------------------------------------------------------------------------------------------


def test_strategies_build_the_matching_generators() -> None:
    assert isinstance(WatermarkStrategy.no_watermarks().create_watermark_generator(), NoWatermarksGenerator)
    assert isinstance(
        WatermarkStrategy.for_monotonous_timestamps().create_watermark_generator(), AscendingTimestampsWatermarks
    )
    bounded = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2)).create_watermark_generator()
    assert type(bounded) is BoundedOutOfOrdernessWatermarks
    assert bounded.max_out_of_orderness_ms == 2_000


def test_each_call_builds_a_fresh_generator() -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    first, second = strategy.create_watermark_generator(), strategy.create_watermark_generator()
    assert first is not second
    first.on_event("a", 100, RecordingOutput())
    output = RecordingOutput()
    second.on_periodic_emit(output)
    assert output.calls == [], "generators of different splits share no state"


def test_with_methods_return_new_strategies_and_leave_the_original_alone() -> None:
    base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
    with_assigner = base.with_timestamp_assigner(lambda value, ts: value[1])
    with_both = with_assigner.with_idleness(Duration.of_seconds(30))
    assert base.timestamp_assigner is None and base.idle_timeout_ms is None
    assert base.create_timestamp_assigner() is None
    assert with_assigner.idle_timeout_ms is None
    assert with_both.idle_timeout_ms == 30_000
    assert with_both.timestamp_assigner is with_assigner.timestamp_assigner, "with_idleness keeps the assigner"
    assert with_both.generator_factory == base.generator_factory
    assert isinstance(base.create_watermark_generator(), BoundedOutOfOrdernessWatermarks)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.idle_timeout_ms = 5  # type: ignore[misc]


def test_with_idleness_wraps_the_generator_and_uses_the_context_clock() -> None:
    clock = ManualClock(0)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(20))
    generator = strategy.create_watermark_generator(WatermarkGeneratorContext(clock=clock))
    assert isinstance(generator, WatermarksWithIdleness)
    output = RecordingOutput()
    generator.on_periodic_emit(output)
    clock.set(20)
    generator.on_periodic_emit(output)
    assert output.calls == [("idle",)], "the idle timer ran on the context's clock"


def test_for_generator_accepts_a_context_factory_a_class_and_a_supplier_object() -> None:
    seen: list[Any] = []

    def with_context(context: WatermarkGeneratorContext) -> WatermarkGenerator:
        seen.append(context)
        return PunctuatedGenerator()

    class Supplier:
        def create_watermark_generator(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
            seen.append(context)
            return PunctuatedGenerator()

    context = WatermarkGeneratorContext(metric_group="metrics")
    for factory in (with_context, PunctuatedGenerator, lambda: PunctuatedGenerator(), Supplier()):
        generator = WatermarkStrategy.for_generator(factory).create_watermark_generator(context)
        assert isinstance(generator, PunctuatedGenerator), factory
    assert seen == [context, context]
    assert seen[0].get_metric_group() == "metrics"


def test_custom_generator_emits_per_event() -> None:
    strategy = WatermarkStrategy.for_generator(lambda context: PunctuatedGenerator())
    generator = strategy.create_watermark_generator()
    output = RecordingOutput()
    for value, ts in [("a", 1), ("b!", 5), ("c", 9), ("d!", 12)]:
        generator.on_event(value, ts, output)
    generator.on_periodic_emit(output)
    assert output.watermarks() == [5, 12]


def test_for_generator_rejects_what_cannot_make_a_generator() -> None:
    with pytest.raises(InvalidJobError, match="for_generator\\(\\) needs a callable"):
        WatermarkStrategy.for_generator(42)
    with pytest.raises(InvalidJobError, match="must take no argument or one"):
        WatermarkStrategy.for_generator(lambda a, b: PunctuatedGenerator())
    strategy = WatermarkStrategy.for_generator(lambda context: "not a generator")
    with pytest.raises(InvalidJobError, match="is not a WatermarkGenerator"):
        strategy.create_watermark_generator()


@pytest.mark.parametrize("bound", [Duration.of_millis(-1), -5])
def test_negative_out_of_orderness_is_rejected(bound: Any) -> None:
    with pytest.raises(InvalidJobError, match="max out-of-orderness must be >= 0"):
        WatermarkStrategy.for_bounded_out_of_orderness(bound)


def test_zero_out_of_orderness_is_allowed() -> None:
    generator = WatermarkStrategy.for_bounded_out_of_orderness(Duration.zero()).create_watermark_generator()
    output = RecordingOutput()
    generator.on_event("x", 10, output)
    generator.on_periodic_emit(output)
    assert output.watermarks() == [9]


@pytest.mark.parametrize("timeout", [Duration.zero(), Duration.of_seconds(-1), 0])
def test_non_positive_idle_timeout_is_rejected_naming_the_value_and_the_fix(timeout: Any) -> None:
    with pytest.raises(InvalidJobError) as error:
        WatermarkStrategy.for_monotonous_timestamps().with_idleness(timeout)
    message = str(error.value)
    millis = timeout.millis if isinstance(timeout, Duration) else timeout
    assert f"got {millis} ms" in message
    assert "Duration.of_seconds(30)" in message


def test_a_duration_of_the_wrong_type_is_a_job_error() -> None:
    with pytest.raises(InvalidJobError, match="must be a Duration"):
        WatermarkStrategy.for_bounded_out_of_orderness("5s")
    with pytest.raises(InvalidJobError, match="must be a Duration"):
        WatermarkStrategy.no_watermarks().with_idleness(None)


# ---------------------------------------------------------------------------------------------------------
# Timestamp assigners
# ---------------------------------------------------------------------------------------------------------


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int | None) -> int:
        return value[1]


def test_timestamp_assigner_object_and_function() -> None:
    by_object = WatermarkStrategy.no_watermarks().with_timestamp_assigner(SecondField())
    by_function = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda value, ts: value[1] * 10)
    keep_old = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda value, ts: ts + 1)
    assert by_object.create_timestamp_assigner()(("a", 7), None) == 7
    assert by_function.create_timestamp_assigner()(("a", 7), None) == 70
    assert keep_old.create_timestamp_assigner()("a", 41) == 42, "the record's own timestamp is passed in"


def test_timestamp_assigner_with_the_wrong_shape_is_rejected() -> None:
    with pytest.raises(InvalidJobError, match=r"must accept two arguments \(value, record_timestamp\)"):
        WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda value: value[1])
    with pytest.raises(InvalidJobError, match="needs a TimestampAssigner or a function"):
        WatermarkStrategy.no_watermarks().with_timestamp_assigner("field 1")


def test_checked_timestamp_accepts_numbers() -> None:
    assert checked_timestamp("r", 17) == 17
    assert checked_timestamp("r", 1_700_000_000_123.9) == 1_700_000_000_123
    assert type(checked_timestamp("r", 3.0)) is int


@pytest.mark.parametrize("bad", ["abc", None, True, math.nan, math.inf, [1], b"12"])
def test_checked_timestamp_rejects_non_numbers_with_a_clear_message(bad: Any) -> None:
    with pytest.raises(InvalidJobError) as error:
        checked_timestamp(("k", 1), bad)
    message = str(error.value)
    assert message.startswith(f"timestamp assigner returned {bad!r} ({type(bad).__name__}) for record ('k', 1)")
    assert "return an int of milliseconds" in message


def test_checked_timestamp_message_for_a_string() -> None:
    with pytest.raises(
        InvalidJobError,
        match=r"^timestamp assigner returned 'abc' \(str\) for record 'row-1'; "
        r"return an int of milliseconds",
    ):
        checked_timestamp("row-1", "abc")


def test_checked_timestamp_shortens_huge_records() -> None:
    with pytest.raises(InvalidJobError) as error:
        checked_timestamp("x" * 10_000, "abc")
    assert len(str(error.value)) < 400


# ---------------------------------------------------------------------------------------------------------
# Shipping strategies to TaskManagers
# ---------------------------------------------------------------------------------------------------------


def test_built_in_strategies_pickle_with_plain_pickle() -> None:
    strategies = [
        WatermarkStrategy.no_watermarks(),
        WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_seconds(3)),
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)).with_timestamp_assigner(SecondField()),
        WatermarkStrategy.for_generator(PunctuatedGenerator),
    ]
    for strategy in strategies:
        copy = pickle.loads(pickle.dumps(strategy, protocol=5))
        assert type(copy.create_watermark_generator()) is type(strategy.create_watermark_generator())
        assert copy.idle_timeout_ms == strategy.idle_timeout_ms
    assert pickle.loads(pickle.dumps(strategies[1])) == strategies[1]


def test_lambda_strategies_ship_with_cloudpickle() -> None:
    strategy = WatermarkStrategy.for_generator(lambda context: PunctuatedGenerator()).with_timestamp_assigner(
        lambda value, ts: value[1]
    )
    copy = cloudpickle.loads(cloudpickle.dumps(strategy))
    assert isinstance(copy.create_watermark_generator(), PunctuatedGenerator)
    assert copy.create_timestamp_assigner()(("a", 5), None) == 5


def test_common_watermark() -> None:
    assert Watermark(12).get_timestamp() == 12
    assert Watermark(12) == Watermark(12)
