"""The event-time clock of a task (DESIGN 2.4, seed 003): the minimum over input channels, idleness, rejoining
channels, and the two-input minimum."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fluvial.common.time import MIN_WATERMARK
from fluvial.runtime.records import WatermarkStatus
from fluvial.runtime.watermarks import MultiInputWatermark, ValveOutput, WatermarkValve

IDLE, ACTIVE = WatermarkStatus(idle=True), WatermarkStatus(idle=False)


def test_seed_worked_example() -> None:
    """Seed 003: four upstream partitions at 2, 4, 3, 6 → the clock is 2; the first partition moves to 4 →
    3; the second moves to 7 → still 3, nothing sent; the third (the one at 3) gets 6 → 4."""
    valve = WatermarkValve(4)
    assert valve.input_watermark(0, 2) is None
    assert valve.input_watermark(1, 4) is None
    assert valve.input_watermark(2, 3) is None, "channel 3 has not reported: its watermark is still the minimum"
    assert valve.current_watermark == MIN_WATERMARK
    assert valve.input_watermark(3, 6) == 2, "all four reported: the clock is the smallest"
    assert valve.input_watermark(0, 4) == 3
    assert valve.input_watermark(1, 7) is None, "the minimum is still 3: nothing to broadcast"
    assert valve.current_watermark == 3
    assert valve.input_watermark(2, 6) == 4
    assert valve.current_watermark == 4


def test_a_channel_never_goes_back() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 10)
    assert valve.input_watermark(1, 10) == 10
    assert valve.input_watermark(0, 5) is None, "a lower watermark for a channel is ignored"
    assert valve.input_watermark(0, 10) is None, "an equal one too"
    assert valve.input_watermark(1, 20) is None, "channel 0 is still at 10, not 5"
    assert valve.input_watermark(0, 15) == 15
    assert valve.current_watermark == 15


def test_single_channel_forwards_every_advance() -> None:
    valve = WatermarkValve(1)
    assert [valve.input_watermark(0, ts) for ts in (1, 3, 3, 2, 8)] == [1, 3, None, None, 8]


def test_an_idle_channel_stops_holding_the_clock_back() -> None:
    valve = WatermarkValve(3)
    valve.input_watermark(0, 5)
    valve.input_watermark(1, 3)
    assert valve.input_watermark(2, 8) == 3
    assert valve.mark_idle(1) == 5, "without the channel at 3 the minimum is 5"
    assert not valve.is_idle()
    assert valve.input_watermark(1, 100) is None, "watermarks on an idle channel are ignored"
    assert valve.input_watermark(0, 9) == 8


def test_an_idle_channel_that_never_reported_does_not_block() -> None:
    valve = WatermarkValve(2)
    assert valve.mark_idle(1) is None
    assert valve.input_watermark(0, 7) == 7


def test_idling_a_channel_above_the_clock_changes_nothing() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 5)
    assert valve.input_watermark(1, 9) == 5
    assert valve.mark_idle(1) is None
    assert valve.mark_idle(1) is None, "idling twice is a no-op"
    assert valve.current_watermark == 5


def test_all_idle_makes_the_valve_idle_and_flushes_the_highest_watermark() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 5)
    assert valve.input_watermark(1, 3) == 3
    assert valve.mark_idle(0) is None, "channel 1 still holds the clock at 3"
    assert valve.mark_idle(1) == 5, "nobody is left to hold the clock back: flush the highest watermark"
    assert valve.is_idle()
    assert valve.input_watermark(0, 50) is None, "an idle valve ignores watermarks"


def test_last_channel_going_idle_at_the_clock_flushes_nothing_higher() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 5)
    assert valve.input_watermark(1, 3) == 3
    assert valve.mark_idle(1) == 5
    assert valve.mark_idle(0) is None, "5 is already the clock"
    assert valve.is_idle()


def test_status_changes_of_the_task() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 4)
    valve.input_watermark(1, 2)
    assert valve.input_watermark_status(1, IDLE) == ValveOutput(4, None), "one channel left: task still active"
    assert valve.input_watermark_status(0, True) == ValveOutput(None, IDLE), "every channel idle: task idle"
    assert valve.input_watermark_status(0, True) == ValveOutput(None, None), "no change, nothing to send"
    assert valve.input_watermark_status(1, ACTIVE) == ValveOutput(None, ACTIVE), "one channel back: task active"
    assert valve.input_watermark_status(0, False) == ValveOutput(None, None)
    assert not valve.is_idle()


def test_status_output_orders_the_flushed_watermark_before_idle() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 9)
    valve.input_watermark(1, 1)
    valve.mark_idle(0)
    watermark, status = valve.input_watermark_status(1, IDLE)
    assert (watermark, status) == (9, IDLE)


def test_a_rejoining_channel_behind_the_clock_does_not_hold_it_back_until_it_catches_up() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 5)
    valve.input_watermark(1, 3)
    assert valve.mark_idle(1) == 5
    valve.mark_active(1)  # rejoins at 3, below the clock of 5
    assert valve.current_watermark == 5, "the clock never goes back"
    assert valve.input_watermark(0, 9) == 9, "channel 1 (at 3) is not aligned: it does not hold the clock"
    assert valve.input_watermark(1, 6) is None, "6 is still below the clock of 9"
    assert valve.input_watermark(1, 10) is None, "caught up: aligned again; the minimum is 9"
    assert valve.input_watermark(0, 12) == 10, "now channel 1 holds the clock back"


def test_a_rejoining_channel_at_or_above_the_clock_holds_it_back_at_once() -> None:
    valve = WatermarkValve(2)
    valve.input_watermark(0, 5)
    valve.input_watermark(1, 7)
    assert valve.mark_idle(0) == 7
    valve.mark_active(0)  # at 5, below 7: unaligned
    valve.input_watermark(0, 7)  # equal to the clock: aligned
    assert valve.input_watermark(1, 20) is None, "channel 0 at 7 holds the clock"
    assert valve.input_watermark(0, 8) == 8


def test_mark_active_on_an_active_channel_is_a_no_op() -> None:
    valve = WatermarkValve(2)
    valve.mark_active(0)
    valve.input_watermark(0, 1)
    assert valve.input_watermark(1, 2) == 1


def test_channel_indices_are_checked() -> None:
    valve = WatermarkValve(2)
    with pytest.raises(IndexError, match="channels 0..1"):
        valve.input_watermark(2, 1)
    with pytest.raises(IndexError):
        valve.mark_idle(-1)
    with pytest.raises(ValueError, match="at least one input channel"):
        WatermarkValve(0)


# ---------------------------------------------------------------------------------------------------------
# Properties over random operation sequences
# ---------------------------------------------------------------------------------------------------------

N_CHANNELS = st.integers(1, 5)


@st.composite
def operations(draw: st.DrawFn) -> tuple[int, list[tuple]]:
    n = draw(N_CHANNELS)
    channel = st.integers(0, n - 1)
    op = st.one_of(
        st.tuples(st.just("wm"), channel, st.integers(0, 25)),
        st.tuples(st.just("wm"), channel, st.integers(0, 25)),  # watermarks twice as likely
        st.tuples(st.just("idle"), channel),
        st.tuples(st.just("active"), channel),
    )
    return n, draw(st.lists(op, max_size=60))


@settings(max_examples=400, deadline=None)
@given(operations())
@example((2, [("wm", 0, 5), ("wm", 1, 3), ("idle", 1), ("active", 1), ("wm", 1, 5), ("wm", 0, 9)]))  # catch-up at ==
@example((2, [("wm", 0, 5), ("wm", 1, 3), ("idle", 0), ("idle", 1), ("active", 0), ("wm", 0, 7)]))  # after a flush
def test_valve_outputs_rise_and_equal_the_minimum_over_counted_channels(case: tuple[int, list[tuple]]) -> None:
    """The model: each channel's watermark (max'd, updated only while active) and status. A channel counts
    towards the minimum when it is active and not behind the last output (rule 4). Every output must be above
    the previous one and equal that minimum — or, when the last channel goes idle, the highest watermark."""
    n, ops = case
    valve = WatermarkValve(n)
    watermark = [MIN_WATERMARK] * n
    active = [True] * n
    outputs: list[int] = []

    def counted_minimum(last: int) -> int | None:
        counted = [watermark[c] for c in range(n) if active[c] and watermark[c] >= last]
        return min(counted) if counted else None

    for op in ops:
        last = valve.current_watermark
        if op[0] == "wm":
            _, c, ts = op
            accepted = active[c] and ts > watermark[c]
            if accepted:
                watermark[c] = ts
            result = valve.input_watermark(c, ts)
            if result is not None:
                assert accepted, "an ignored watermark must not move the clock"
                assert result == counted_minimum(last)
            elif accepted:
                minimum = counted_minimum(last)
                assert minimum is None or minimum <= last, "the minimum advanced but nothing was emitted"
        elif op[0] == "idle":
            c = op[1]
            was_active = active[c]
            active[c] = False
            result = valve.mark_idle(c)
            if not was_active:
                assert result is None
            elif not any(active):
                highest = max(watermark)
                expected = highest if watermark[c] == last and highest > last else None
                assert result == expected, "the last channel going idle flushes the highest watermark"
            else:
                if result is not None:
                    assert result == counted_minimum(last)
                if watermark[c] == last:
                    minimum = counted_minimum(last)
                    assert valve.current_watermark == max(last, minimum if minimum is not None else last)
        else:
            c = op[1]
            active[c] = True
            result = valve.mark_active(c)
            assert result is None
            assert valve.current_watermark == last, "rejoining never moves the clock"
        if result is not None:
            assert result > last, "outputs are strictly increasing"
            outputs.append(result)
        assert valve.current_watermark == (outputs[-1] if outputs else MIN_WATERMARK)
        assert valve.is_idle() == (not any(active))
    assert outputs == sorted(set(outputs))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 100)), max_size=50))
    )
)
def test_without_idleness_the_clock_is_the_plain_minimum(case: tuple[int, list[tuple[int, int]]]) -> None:
    """DESIGN 2.4 literally: the minimum over every channel's highest watermark, emitted whenever it rises."""
    n, updates = case
    valve = WatermarkValve(n)
    highest = [MIN_WATERMARK] * n
    emitted = MIN_WATERMARK
    for channel, ts in updates:
        highest[channel] = max(highest[channel], ts)
        minimum = min(highest)
        expected = minimum if minimum > emitted else None
        assert valve.input_watermark(channel, ts) == expected
        emitted = max(emitted, minimum)


# ---------------------------------------------------------------------------------------------------------
# Two inputs
# ---------------------------------------------------------------------------------------------------------


def test_two_input_minimum() -> None:
    clock = MultiInputWatermark()
    assert clock.update(0, 10) is None, "input 1 has not reported"
    assert clock.update(1, 4) == 4
    assert clock.update(1, 12) == 10
    assert clock.update(0, 11) == 11
    assert clock.update(0, 9) is None, "an input never goes back"
    assert clock.update(0, 20) == 12
    assert clock.current_watermark == 12


def test_two_input_idleness() -> None:
    clock = MultiInputWatermark(2)
    clock.update(0, 10)
    assert clock.mark_idle(1) == 10, "an idle input leaves the minimum"
    assert clock.update(0, 15) == 15
    assert clock.mark_idle(0) is None
    assert clock.is_idle()
    assert clock.mark_active(1) is None, "input 1 is still at MIN: nothing to emit"
    assert not clock.is_idle()
    assert clock.update(1, 12) is None, "12 is below the clock of 15"
    assert clock.update(0, 30) is None, "input 1 at 12 holds the clock until it passes 15"
    assert clock.update(1, 18) == 18


def test_two_input_watermark_on_an_idle_input_reactivates_it() -> None:
    clock = MultiInputWatermark()
    clock.update(0, 5)
    clock.update(1, 5)
    clock.mark_idle(0)
    assert clock.update(1, 9) == 9
    assert clock.update(0, 7) is None
    assert clock.update(1, 20) is None, "input 0 is active again at 7"
    assert not clock.is_idle()


def test_two_input_reactivation_after_all_idle_can_advance() -> None:
    clock = MultiInputWatermark()
    clock.update(0, 5)
    clock.update(1, 8)
    clock.mark_idle(0)
    clock.mark_idle(1)
    assert clock.current_watermark == 8
    clock.update(0, 9)  # reactivates input 0 alone
    assert clock.current_watermark == 9


def test_two_input_indices_are_zero_based() -> None:
    clock = MultiInputWatermark()
    with pytest.raises(IndexError, match="inputs are 0..1"):
        clock.update(2, 5)
