"""Async scalar functions (`AsyncScalarFunction`, `udf` on an `async def` function): the Calc calling them on
fluvial.testing's OperatorHarness — results in input order when calls complete out of order, the
max-concurrent-operations bound, the timeout and the retry options — and how udf() and the options are checked."""

from __future__ import annotations

import asyncio
import threading

import pytest

from fluvial.common.row import Row, RowKind, _create_row
from fluvial.table import DataTypes, EnvironmentSettings, TableEnvironment
from fluvial.table.errors import TableException, ValidationException
from fluvial.table.planner.async_scalar import AsyncScalarOptions, async_scalar_from, translate_async_calc
from fluvial.table.planner.rex import Call, InputRef, Literal
from fluvial.table.udf import AsyncScalarFunction, ScalarFunction, udf
from fluvial.testing import OperatorHarness

pytestmark = pytest.mark.timeout(30)

KEY = InputRef(0, DataTypes.STRING(), "k")


class Gated(AsyncScalarFunction):
    """Each call waits until the test releases its key; the result is the key upper-cased. Counts calls and
    the most in flight at once (all on the loop thread)."""

    def __init__(self):
        self.gates: dict = {}
        self.calls: list = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.opened = self.closed = False

    def open(self, function_context):
        self.opened = True

    def close(self):
        self.closed = True

    def release(self, *keys):
        for key in keys:
            self.gates.setdefault(key, threading.Event()).set()

    async def eval(self, key):
        self.calls.append(key)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            while not self.gates.setdefault(key, threading.Event()).is_set():
                await asyncio.sleep(0.001)
        finally:
            self.in_flight -= 1
        return key.upper()


DEFAULTS = AsyncScalarOptions()


def harness_of(function, options=DEFAULTS, condition=None, restore=None):
    """The Calc `SELECT k, f(k) AS v FROM t [WHERE condition]` over rows (k)."""
    wrapper = udf(function, result_type=DataTypes.STRING())
    call = Call("__udf__", (KEY,), DataTypes.STRING(), wrapper)
    condition = condition(call) if condition is not None else None

    def describe(stream):
        return translate_async_calc(stream, ["k", "v"], 1, [KEY, call], condition, options)

    return OperatorHarness.of(describe).open(restore=restore)


def rows(*keys, kind=RowKind.INSERT):
    return [_create_row(["k"], [k], kind) for k in keys]


def test_results_leave_in_input_order_when_calls_complete_out_of_order():
    gated = Gated()
    harness = harness_of(gated)
    harness.process_elements(rows("a", "b") + rows("c", kind=RowKind.UPDATE_AFTER), [1, 2, 3])
    harness.run_mails_until(lambda h: sorted(gated.calls) == ["a", "b", "c"], what="three calls")
    assert gated.opened
    gated.release("c", "b")
    harness.run_mails_until(lambda h: gated.in_flight == 1, what="b and c to complete")
    harness.run_mails()
    assert harness.output() == []  # b and c wait for a
    gated.release("a")
    harness.run_mails_until(lambda h: len(h.output()) == 3, what="all three results")
    out = harness.output()
    assert [tuple(r.value) for r in out] == [("a", "A"), ("b", "B"), ("c", "C")]
    assert [r.value.get_row_kind() for r in out] == [RowKind.INSERT, RowKind.INSERT, RowKind.UPDATE_AFTER]
    assert [r.timestamp for r in out] == [1, 2, 3]
    harness.close()
    assert gated.closed


def test_at_most_max_concurrent_operations_are_in_flight():
    gated = Gated()
    harness = harness_of(gated, AsyncScalarOptions(max_concurrent=2))
    keys = [f"k{i}" for i in range(6)]
    harness.process_elements(rows(*keys))
    harness.run_mails_until(lambda h: len(gated.calls) == 2, what="two calls")
    released = 0
    while len(harness.output()) < len(keys):
        if released < len(gated.calls):  # release in the order they started
            gated.release(gated.calls[released])
            released += 1
        harness.run_mails()
    assert gated.most_in_flight == 2
    assert [r.value.v for r in harness.output()] == [k.upper() for k in keys]
    harness.close()


def test_rows_in_flight_at_a_checkpoint_are_called_again_after_a_restore():
    gated = Gated()
    harness = harness_of(gated)
    harness.process_elements(rows("a", "b", "c"))
    gated.release("a")
    harness.run_mails_until(lambda h: len(h.output()) == 1, what="a's result")
    snapshot = harness.snapshot(checkpoint_id=1)
    harness.close()
    again = Gated()
    again.release("b", "c")
    restored = harness_of(again, restore=[snapshot])
    restored.run_mails_until(lambda h: len(h.output()) == 2, what="b and c again")
    assert sorted(again.calls) == ["b", "c"]
    assert [tuple(r.value) for r in restored.output()] == [("b", "B"), ("c", "C")]
    restored.close()


def test_a_condition_calling_the_function_drops_rows_in_order():
    gated = Gated()
    harness = harness_of(
        gated, condition=lambda call: Call("equals", (call, Literal("B", DataTypes.STRING())), DataTypes.BOOLEAN())
    )
    gated.release("a", "b")
    harness.process_elements(rows("a", "b"))
    harness.run_mails_until(lambda h: len(h.output()) == 1, what="the row b")
    assert harness.values() == [Row(k="b", v="B")]
    harness.close()


class Silent(AsyncScalarFunction):
    async def eval(self, key):
        await asyncio.sleep(3600)


def test_a_call_past_the_timeout_fails_the_job_naming_the_function():
    harness = harness_of(Silent(), AsyncScalarOptions(timeout_ms=50))
    harness.process_elements(rows("slow"))
    with pytest.raises(TimeoutError, match=r"'Silent' did not complete within 50 ms .*table.exec.async-scalar.timeout"):
        harness.advance_processing_time(50)
    harness.close()


class Flaky(AsyncScalarFunction):
    """Fails the first `failures` calls for each key."""

    def __init__(self, failures):
        self.failures = failures
        self.calls: dict = {}

    async def eval(self, key):
        self.calls[key] = self.calls.get(key, 0) + 1
        if self.calls[key] <= self.failures:
            raise ConnectionError(f"call {self.calls[key]} for {key} failed")
        return f"{key}@{self.calls[key]}"


def test_fixed_delay_retries_a_failed_call_retry_delay_apart():
    flaky = Flaky(2)
    harness = harness_of(flaky, AsyncScalarOptions(retry_delay_ms=100, max_attempts=3))
    harness.process_elements(rows("v"))
    harness.run_mails_until(lambda h: flaky.calls.get("v") == 1, what="the first call")
    harness.run_mails().advance_processing_time(99)
    assert flaky.calls["v"] == 1  # the retry delay has not passed
    harness.advance_processing_time(1)
    harness.run_mails_until(lambda h: flaky.calls["v"] == 2, what="the first retry")
    harness.run_mails().advance_processing_time(100)
    harness.run_mails_until(lambda h: h.values() == [Row(k="v", v="v@3")], what="the second retry's result")
    harness.close()


def test_no_retry_fails_the_job_at_once_naming_the_function():
    flaky = Flaky(1)
    harness = harness_of(flaky, AsyncScalarOptions(retry=False))
    harness.process_elements(rows("v"))
    with pytest.raises(TableException, match=r"async scalar function 'Flaky' failed .*ConnectionError: call 1"):
        harness.run_mails_until(lambda h: False, timeout=10)
    assert flaky.calls == {"v": 1}
    harness.close()


# -- udf() and the options ------------------------------------------------------------------------------------


def test_udf_recognises_async_functions_and_refuses_what_cannot_be_one():
    @udf(result_type=DataTypes.STRING())
    async def decorated(x):
        return x

    assert decorated._async and udf(Gated(), result_type="STRING")._async
    assert not udf(lambda x: x, result_type="STRING")._async
    with pytest.raises(ValueError, match="cannot be a pandas udf"):
        udf(Gated(), result_type=DataTypes.STRING(), func_type="pandas")

    class NotAsync(AsyncScalarFunction):
        def eval(self, x):
            return x

    with pytest.raises(TypeError, match="must be declared 'async def'"):
        udf(NotAsync(), result_type=DataTypes.STRING())

    class Plain(ScalarFunction):
        def eval(self, x):
            return x

    assert not udf(Plain(), result_type="STRING")._async


def test_options_take_flinks_defaults_and_refuse_bad_values_when_set():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = t_env.get_config()
    assert async_scalar_from(config) == AsyncScalarOptions(10, 180_000, True, 100, 3)
    config.set("table.exec.async-scalar.max-concurrent-operations", "4")
    config.set("table.exec.async-scalar.timeout", "5 s")
    config.set("table.exec.async-scalar.retry-strategy", "no_retry")
    config.set("table.exec.async-scalar.retry-delay", "20 ms")
    config.set("table.exec.async-scalar.max-attempts", "1")
    assert async_scalar_from(config) == AsyncScalarOptions(4, 5_000, False, 20, 1)
    assert async_scalar_from(config).retry_strategy() is None
    for key, bad in [
        ("max-concurrent-operations", "0"),
        ("timeout", "soon"),
        ("retry-delay", "0 ms"),
        ("retry-strategy", "EXPONENTIAL"),
        ("max-attempts", "-1"),
    ]:
        with pytest.raises(ValidationException, match=f"key 'table.exec.async-scalar.{key}'"):
            config.set(f"table.exec.async-scalar.{key}", bad)


@udf(result_type=DataTypes.STRING())
async def upper(key):
    return key.upper()


def test_an_async_function_outside_a_select_or_where_is_refused_clearly():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.create_temporary_function("upper_async", upper)
    t_env.create_temporary_function("vec", udf(lambda s: s, result_type=DataTypes.STRING(), func_type="pandas"))
    t_env.create_temporary_view("t", t_env.from_elements([("a", 1)], ["k", "n"]))
    with pytest.raises(ValidationException, match="both an async scalar function and a pandas udf"):
        t_env.execute_sql("SELECT upper_async(k), vec(k) FROM t").wait()
    join = "SELECT * FROM t a JOIN t b ON a.k = b.k AND upper_async(a.k) = 'A'"
    with pytest.raises(ValidationException, match="column 31: The async scalar function 'upper' cannot be called in a"):
        t_env.execute_sql(join)
