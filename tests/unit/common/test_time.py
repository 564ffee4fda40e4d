import pytest

from fluvial.common.time import Duration, ManualClock, Time, to_millis


def test_durations_convert_to_milliseconds():
    assert Duration.of_seconds(1.5).to_milliseconds() == 1500
    assert Duration.of_minutes(2).millis == 120_000
    assert Time.hours(1) == Duration.of_millis(3_600_000)
    assert to_millis(Duration.of_days(1)) == 86_400_000
    assert to_millis(250) == 250
    with pytest.raises(TypeError, match="Duration"):
        to_millis("5 s")


def test_manual_clock_moves_only_forward_when_told():
    clock = ManualClock(1_000)
    assert clock() == 1_000
    assert clock.advance(250) == 1_250 and clock() == 1_250
    with pytest.raises(ValueError, match="never goes back"):
        clock.advance(-1)


def test_manual_clock_jumps_both_ways_when_set_as_a_wall_clock_does():
    clock = ManualClock(1_000)
    assert clock.set(400) == 400 and clock() == 400
    assert clock.set(9_000) == 9_000 and clock() == 9_000


def test_manual_clock_sleep_moves_it_by_exactly_the_time_slept_and_seconds_reads_it():
    clock = ManualClock(1_000)
    clock.sleep(0.25)
    clock.sleep(1 / 7)
    assert clock.seconds() == pytest.approx(1.25 + 1 / 7)
    assert clock() == pytest.approx(1_250 + 1_000 / 7)
    with pytest.raises(ValueError, match="non-negative"):
        clock.sleep(-0.1)


def test_manual_clock_counts_the_reads_since_it_last_moved():
    clock = ManualClock()
    assert clock.reads == 0
    clock()
    clock.seconds()
    assert clock.reads == 2
    clock.advance(0)
    assert clock.reads == 0
    clock()
    clock.set(5)
    assert clock.reads == 0
