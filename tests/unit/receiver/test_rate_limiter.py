"""RateLimiter: pacing, the pay-later batch, the one-second burst, and its bounds, on a ManualClock."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.time import ManualClock
from fluvial.receiver.rate_limiter import MAX_BURST_SECONDS, RateLimiter

EPSILON = 1e-9


def limiter(rate: float, clock: ManualClock, sleeps: list[float] | None = None) -> RateLimiter:
    """A RateLimiter on `clock` (read in seconds); each of its sleeps moves the clock and is recorded in `sleeps`."""

    def sleep(seconds: float) -> None:
        assert seconds > 0, "the limiter should not sleep for nothing"
        if sleeps is not None:
            sleeps.append(seconds)
        clock.sleep(seconds)

    return RateLimiter(rate, clock=clock.seconds, sleep=sleep)


@pytest.mark.timeout(30)
def test_unlimited_never_reads_the_clock_nor_sleeps() -> None:
    def no_clock() -> float:
        raise AssertionError("an unlimited limiter must not read the clock")

    def no_sleep(seconds: float) -> None:
        raise AssertionError("an unlimited limiter must not sleep")

    unlimited = RateLimiter(0, clock=no_clock, sleep=no_sleep)
    for _ in range(1000):
        unlimited.wait_to_push()
    unlimited.wait_to_push_many(10**9)
    assert not unlimited.limited
    assert unlimited.reserve(5) == 0.0


@pytest.mark.timeout(30)
def test_records_are_paced_one_interval_apart() -> None:
    clock, sleeps = ManualClock(100_000), []
    paced = limiter(10, clock, sleeps)
    returned_at = []
    for _ in range(50):
        paced.wait_to_push()
        returned_at.append(clock.seconds())
    assert returned_at == pytest.approx([100.0 + i / 10 for i in range(50)])
    assert sum(sleeps) == pytest.approx(4.9)


@pytest.mark.timeout(30)
def test_a_batch_goes_at_once_and_the_next_caller_pays_for_it() -> None:
    clock = ManualClock()
    paced = limiter(10, clock)
    paced.wait_to_push_many(100)
    assert clock.seconds() == 0.0
    paced.wait_to_push()
    assert clock.seconds() == pytest.approx(10.0)
    paced.wait_to_push_many(0)  # nothing asked, nothing paid
    assert clock.seconds() == pytest.approx(10.0)


@pytest.mark.timeout(30)
def test_idle_time_stores_at_most_one_second_of_permits() -> None:
    clock = ManualClock()
    paced = limiter(10, clock)
    clock.advance(5_000)  # idle for five seconds: only one second's worth is kept
    immediate = 0
    for _ in range(30):
        before = clock.seconds()
        paced.wait_to_push()
        if clock.seconds() == before:
            immediate += 1
    # ten stored permits plus the request that finds the bucket due now; then one every 0.1 s
    assert immediate == int(10 * MAX_BURST_SECONDS) + 1
    assert clock.seconds() == pytest.approx(5.0 + (30 - immediate) / 10)


@settings(max_examples=200, deadline=None)
@given(
    rate=st.sampled_from([1, 7, 50, 1000]),
    requests=st.lists(
        st.tuples(st.floats(min_value=0, max_value=3, allow_nan=False), st.integers(min_value=0, max_value=40)),
        min_size=1,
        max_size=40,
    ),
)
def test_permits_never_exceed_the_rate_plus_one_burst(rate: int, requests: list[tuple[float, int]]) -> None:
    clock = ManualClock()
    paced = limiter(rate, clock)
    grants: list[tuple[float, int]] = []  # (time the caller went ahead, permits)
    for idle, permits in requests:
        clock.advance(idle * 1000)
        paced.wait_to_push_many(permits)
        if permits:  # asking for nothing costs nothing and waits for nobody
            grants.append((clock.seconds(), permits))
    times = [t for t, _ in grants]
    assert times == sorted(times)
    for b, (t_b, _) in enumerate(grants):
        # cumulative: everything granted before request b was earned by the time b went ahead
        assert sum(n for _, n in grants[:b]) <= rate * t_b + 1e-6
        for a in range(b):
            # any window: its duration's worth plus at most one burst
            window = sum(n for _, n in grants[a:b])
            assert window <= rate * (t_b - grants[a][0] + MAX_BURST_SECONDS) + 1e-6


@pytest.mark.timeout(30)
def test_threads_share_one_rate_on_the_real_clock() -> None:
    paced = RateLimiter(200)
    start = time.monotonic()

    def push(n: int) -> None:
        for _ in range(n):
            paced.wait_to_push()

    threads = [threading.Thread(target=push, args=(20,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    elapsed = time.monotonic() - start
    assert not any(thread.is_alive() for thread in threads)
    # 60 permits at 200/s: the first is free, the other 59 are 5 ms apart (a few stored ms at most)
    assert elapsed >= 59 / 200 - 0.02


@pytest.mark.timeout(30)
@pytest.mark.parametrize("bad", [-1, -0.5, float("nan"), "100", None, True])
def test_a_bad_rate_is_rejected_naming_the_key(bad: object) -> None:
    with pytest.raises(InvalidJobError) as info:
        RateLimiter(bad)  # type: ignore[arg-type]
    assert repr(bad) in str(info.value)
    assert "receiver.max-rate" in str(info.value)


@pytest.mark.timeout(30)
def test_a_negative_number_of_permits_is_rejected() -> None:
    with pytest.raises(ValueError, match="negative"):
        limiter(10, ManualClock()).wait_to_push_many(-1)
