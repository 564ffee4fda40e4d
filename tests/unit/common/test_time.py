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
