"""The async wait operator on fluvial.testing's OperatorHarness: coroutines on the subtask's asyncio loop,
results handed back as mails (`run_mails_until`), ordered and unordered emission around watermarks, capacity,
timeouts on the processing-time clock, retries, failures, and in-flight records through snapshot and restore."""

from __future__ import annotations

import asyncio
import threading

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.datastream import AsyncDataStream, AsyncFunction
from fluvial.datastream.async_retry_predicates import empty_result_predicate, has_exception_predicate
from fluvial.datastream.async_retry_strategies import FixedDelayRetryStrategy
from fluvial.testing import OperatorHarness


class Gated(AsyncFunction):
    """Each call waits until the test releases its value; results are [value * 10]. Counts calls and the most
    calls in flight at once (all on the loop thread)."""

    def __init__(self):
        self.gates: dict = {}
        self.calls = []
        self.finished = []
        self.in_flight = 0
        self.most_in_flight = 0

    def gate(self, value) -> threading.Event:
        return self.gates.setdefault(value, threading.Event())

    def release(self, *values):
        for value in values:
            self.gate(value).set()

    async def async_invoke(self, value):
        self.calls.append(value)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            while not self.gate(value).is_set():
                await asyncio.sleep(0.001)
        finally:
            self.in_flight -= 1
        self.finished.append(value)
        return [value * 10]

    def timeout(self, value):
        return [("timed out", value)]


def harness_of(
    function, ordered=True, timeout=60_000, capacity=100, retry=None, restore=None, **options
) -> OperatorHarness:
    def describe(stream):
        if retry is not None:
            wait = AsyncDataStream.ordered_wait_with_retry if ordered else AsyncDataStream.unordered_wait_with_retry
            return wait(stream, function, timeout, retry, capacity)
        wait = AsyncDataStream.ordered_wait if ordered else AsyncDataStream.unordered_wait
        return wait(stream, function, timeout, capacity)

    return OperatorHarness.of(describe, **options).open(restore=restore)


def emitted(harness) -> list:
    """Results and watermarks, in the order the operator emitted them (watermarks as ("wm", ts))."""
    return [(r.value, r.timestamp) for r in harness.output()]


@pytest.mark.timeout(30)
def test_ordered_results_keep_input_order_and_timestamps():
    gated = Gated()
    harness = harness_of(gated)
    harness.process_elements([1, 2, 3], [100, 200, 300])
    gated.release(3, 2)
    harness.run_mails_until(lambda h: sorted(gated.calls) == [1, 2, 3] and not gated.gate(1).is_set())
    harness.run_mails()
    assert harness.output() == []  # 2 and 3 are done but wait for 1
    gated.release(1)
    harness.run_mails_until(lambda h: len(h.output()) == 3, what="all three results")
    assert emitted(harness) == [(10, 100), (20, 200), (30, 300)]
    harness.end_input()
    assert harness.operator.is_quiescent()
    harness.close()


@pytest.mark.timeout(30)
def test_unordered_results_leave_as_they_complete_but_never_across_a_watermark():
    gated = Gated()
    harness = harness_of(gated, ordered=False)
    harness.process_elements([1, 2], [10, 20]).process_watermark(50).process_elements([3], [60])
    gated.release(2, 3)
    harness.run_mails_until(lambda h: len(h.output()) == 1, what="the first result")
    assert emitted(harness) == [(20, 20)] and harness.watermarks() == []  # 3 waits behind the watermark
    gated.release(1)
    harness.run_mails_until(lambda h: len(h.output()) == 3, what="every result")
    assert emitted(harness) == [(20, 20), (10, 10), (30, 60)]
    assert harness.watermarks() == [50]
    harness.close()


class Recorder:
    """Captures results and watermarks in one sequence, to check their relative order."""

    def __init__(self, harness):
        self.events = []
        output = harness.operator.output
        collect, emit_watermark = output.collect, output.emit_watermark

        def on_batch(batch):
            self.events.extend(batch.values)
            collect(batch)

        def on_watermark(watermark):
            self.events.append(("wm", watermark.timestamp))
            emit_watermark(watermark)

        harness.operator._emit = on_batch
        output.emit_watermark = on_watermark


@pytest.mark.timeout(30)
def test_a_watermark_never_overtakes_pending_results_and_idle_queues_pass_it_at_once():
    gated = Gated()
    harness = harness_of(gated)
    recorder = Recorder(harness)
    harness.process_watermark(5)
    assert recorder.events == [("wm", 5)]
    harness.process_elements([1], [10]).process_watermark(20).process_watermark(30)
    harness.run_mails()
    assert recorder.events == [("wm", 5)]
    gated.release(1)
    harness.run_mails_until(lambda h: len(recorder.events) == 3, what="the result and the watermark")
    assert recorder.events == [("wm", 5), 10, ("wm", 30)]  # the two waiting watermarks collapsed into one
    harness.close()


@pytest.mark.timeout(30)
def test_capacity_bounds_calls_in_flight_and_blocks_input():
    gated = Gated()
    harness = harness_of(gated, capacity=2)
    harness.process_elements(list(range(6)))
    operator = harness.operator
    assert operator.input_blocked()
    harness.run_mails_until(lambda h: len(gated.calls) == 2, what="two calls")
    gated.release(*range(6))
    harness.run_mails_until(lambda h: len(h.output()) == 6, what="every result")
    assert harness.values() == [0, 10, 20, 30, 40, 50] and gated.most_in_flight <= 2
    assert not operator.input_blocked()
    harness.close()


@pytest.mark.timeout(30)
def test_a_call_past_its_deadline_is_cancelled_and_timeout_gives_its_results():
    gated = Gated()
    harness = harness_of(gated, timeout=1_000)
    harness.process_elements([1, 2])
    harness.advance_processing_time(400)
    harness.process_elements([3])
    harness.run_mails_until(lambda h: len(gated.calls) == 3, what="three calls")
    harness.advance_processing_time(600)  # 1 and 2 reach their deadline; 3 has 400 ms left
    assert harness.values() == [("timed out", 1), ("timed out", 2)]
    harness.run_mails_until(lambda h: gated.in_flight == 1, what="the cancelled calls to end")
    gated.release(1, 2, 3)
    harness.run_mails_until(lambda h: len(h.output()) == 3, what="the third result")
    assert harness.values()[2] == 30
    harness.advance_processing_time(1_000)
    assert len(harness.output()) == 3  # a completed record never times out
    harness.close()


class Silent(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(3600)
        return [value]


@pytest.mark.timeout(30)
def test_the_default_timeout_fails_naming_the_record():
    harness = harness_of(Silent(), timeout=50)
    harness.process_element("slow")
    with pytest.raises(TimeoutError, match="'slow'"):
        harness.advance_processing_time(50)
    harness.close()


class Flaky(AsyncFunction):
    """Fails (or returns nothing) the first `failures` calls for each value."""

    def __init__(self, failures, how="raise"):
        self.failures, self.how = failures, how
        self.calls: dict = {}

    async def async_invoke(self, value):
        self.calls[value] = self.calls.get(value, 0) + 1
        if self.calls[value] <= self.failures:
            if self.how == "raise":
                raise ConnectionError(f"call {self.calls[value]} for {value} failed")
            return []
        return [(value, self.calls[value])]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "how, strategy",
    [
        ("raise", FixedDelayRetryStrategy(3, 100, exception_predicate=has_exception_predicate)),
        ("empty", FixedDelayRetryStrategy(3, 100, result_predicate=empty_result_predicate)),
    ],
)
def test_retries_follow_the_strategy_back_off_on_the_processing_time_clock(how, strategy):
    flaky = Flaky(2, how)
    harness = harness_of(flaky, retry=strategy)
    harness.process_element("v")
    harness.run_mails_until(lambda h: flaky.calls.get("v") == 1, what="the first call")
    harness.run_mails()
    harness.advance_processing_time(99)
    assert flaky.calls["v"] == 1  # the back-off has not passed
    harness.advance_processing_time(1)
    harness.run_mails_until(lambda h: flaky.calls["v"] == 2, what="the first retry")
    harness.run_mails().advance_processing_time(100)
    harness.run_mails_until(lambda h: h.values() == [("v", 3)], what="the result of the second retry")
    harness.close()


@pytest.mark.timeout(30)
def test_an_error_the_strategy_does_not_retry_fails_naming_operator_record_and_attempt():
    flaky = Flaky(5)
    harness = harness_of(flaky, retry=FixedDelayRetryStrategy(1, 10, exception_predicate=has_exception_predicate))
    harness.process_element("v")
    harness.run_mails_until(lambda h: flaky.calls.get("v") == 1, what="the first call")
    with pytest.raises(ConnectionError, match="call 2 for v failed") as failure:
        # the retry's failure may come back while the clock advances (its mail runs there) or after
        harness.run_mails().advance_processing_time(10)
        harness.run_mails_until(lambda h: False, timeout=10)
    assert "failed for 'v' (attempt 2)" in "".join(failure.value.__notes__)
    harness.close()


class NotAList(AsyncFunction):
    async def async_invoke(self, value):
        return value


class Returns(AsyncFunction):
    def __init__(self, result):
        self.result = result

    async def async_invoke(self, value):
        return self.result


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "result, says",
    [
        (None, "The result of AsyncFunction cannot be none: async_invoke of .* returned None for 7"),
        ("text", "The result of AsyncFunction should be of list type: .* returned str 'text' for 7"),
    ],
)
def test_a_none_or_string_result_is_refused_with_pyflinks_sentence(result, says):
    harness = harness_of(Returns(result))
    harness.process_element(7)
    with pytest.raises(InvalidJobError, match=says):
        harness.run_mails_until(lambda h: False, timeout=10)
    harness.close()


@pytest.mark.timeout(30)
def test_any_other_iterable_result_is_taken_as_pyflink_takes_it():
    harness = harness_of(Returns(range(2)))
    harness.process_element(7)
    harness.run_mails_until(lambda h: len(h.output()) == 2, what="both results")
    assert [value for value, _ in emitted(harness)] == [0, 1]
    harness.close()


@pytest.mark.timeout(30)
def test_a_result_that_is_not_a_list_is_refused_clearly():
    harness = harness_of(NotAList())
    harness.process_element(7)
    with pytest.raises(
        InvalidJobError, match="The result of AsyncFunction should be of list type.*returned int 7 for 7"
    ):
        harness.run_mails_until(lambda h: False, timeout=10)
    harness.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("ordered", [True, False])
def test_in_flight_and_held_records_are_checkpointed_and_issued_again_after_a_restore(ordered):
    gated = Gated()
    harness = harness_of(gated, ordered=ordered, capacity=2)
    harness.process_elements([1, 2, 3], [10, 20, 30]).process_watermark(25)
    gated.release(2)
    # (not "one call in flight": unordered, 2's completion at once lets 3 in, so that may never be seen)
    harness.run_mails_until(lambda h: 2 in gated.finished, what="2 to complete")
    harness.run_mails()
    before = emitted(harness)
    snapshot = harness.snapshot(checkpoint_id=3)
    harness.close()
    again = Gated()
    again.release(1, 2, 3)
    restored = harness_of(again, ordered=ordered, capacity=2, restore=[snapshot])
    restored.run_mails_until(lambda h: len(before) + len(h.output()) == 3, what="the rest of the results")
    restored.end_input()
    restored.run_mails_until(lambda h: h.operator.is_quiescent(), what="quiescence")
    results = sorted(before + emitted(restored))
    assert results == [(10, 10), (20, 20), (30, 30)]
    assert restored.watermarks() == [25]
    restored.close()


@pytest.mark.timeout(30)
def test_a_restore_at_another_parallelism_splits_the_in_flight_records():
    gated = Gated()
    harness = harness_of(gated)
    harness.process_elements(list(range(6)))
    snapshot = harness.snapshot()
    harness.close()
    outputs = []
    for index in range(2):
        again = Gated()
        again.release(*range(6))
        restored = harness_of(again, parallelism=2, subtask_index=index, restore=[snapshot])
        restored.run_mails_until(lambda h: len(h.output()) == 3, what="this subtask's share")
        outputs.extend(restored.values())
        restored.close()
    assert sorted(outputs) == [v * 10 for v in range(6)]


@pytest.mark.timeout(30)
def test_finish_waits_for_every_result_without_blocking():
    gated = Gated()
    harness = harness_of(gated, capacity=1)
    harness.process_elements([1, 2])
    harness.end_input()
    assert not harness.operator.is_quiescent()
    gated.release(1, 2)
    harness.run_mails_until(lambda h: h.operator.is_quiescent(), what="quiescence")
    assert harness.values() == [10, 20]
    harness.close()
