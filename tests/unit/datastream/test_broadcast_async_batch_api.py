"""The API pieces of broadcast state, async I/O and batch execution (argument checks, retry strategies and
predicates, connect rules), and one small job of each. Their runtimes have tests of their own:
tests/unit/runtime/test_broadcast_operator.py, test_async_operator.py, test_batch_operators.py and the
integration tests of each."""

from __future__ import annotations

import functools

import pytest

from fluvial.common import Duration, Types, WatermarkStrategy
from fluvial.common.errors import InvalidJobError
from fluvial.common.watermark_strategy import AssignerWithPeriodicWatermarksWrapper, Watermark
from fluvial.datastream import (
    AsyncDataStream,
    AsyncFunction,
    BroadcastConnectedStream,
    BroadcastProcessFunction,
    BroadcastStream,
    KeyedBroadcastProcessFunction,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from fluvial.datastream.async_retry_predicates import (
    empty_result_predicate,
    exception_type_predicate,
    has_exception_predicate,
)
from fluvial.datastream.async_retry_strategies import (
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
    NoRetryStrategy,
)
from fluvial.datastream.state import MapStateDescriptor

RULES = MapStateDescriptor("rules", Types.STRING(), Types.STRING())


def env_of() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    return env


class Tag(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield f"{value}:{ctx.get_broadcast_state(RULES).get('suffix')}"

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put("suffix", value)


class KeyedTag(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value

    def process_broadcast_element(self, value, ctx):
        pass


def test_broadcast_with_descriptors_makes_a_broadcast_stream_that_connects():
    env = env_of()
    rules = env.from_collection(["!"]).broadcast(RULES)
    assert isinstance(rules, BroadcastStream) and rules.descriptors == (RULES,)
    connected = env.from_collection(["a"]).connect(rules)
    assert isinstance(connected, BroadcastConnectedStream)
    with pytest.raises(InvalidJobError, match="BroadcastProcessFunction"):
        connected.process(KeyedTag())
    keyed = env.from_collection(["a"]).key_by(lambda v: v).connect(rules)
    with pytest.raises(InvalidJobError, match="KeyedBroadcastProcessFunction"):
        keyed.process(Tag())
    with pytest.raises(InvalidJobError, match="MapStateDescriptor"):
        env.from_collection(["a"]).broadcast("rules")


@pytest.mark.timeout(60)
def test_broadcast_state_reaches_every_subtask():
    env = env_of()
    rules = env.from_collection(["!"]).broadcast(RULES)
    data = env.from_collection(["a", "b"]).connect(rules).process(Tag())
    results = sorted(data.execute_and_collect())
    assert [r.split(":")[0] for r in results] == ["a", "b"]  # the suffix depends on arrival order


class Lookup(AsyncFunction):
    async def async_invoke(self, value):
        return [value * 10]


def test_async_wait_checks_its_arguments():
    env = env_of()
    ds = env.from_collection([1])
    with pytest.raises(InvalidJobError, match="async def"):
        AsyncDataStream.unordered_wait(ds, lambda v: v, Duration.of_seconds(1))
    with pytest.raises(InvalidJobError, match="capacity"):
        AsyncDataStream.ordered_wait(ds, Lookup(), Duration.of_seconds(1), capacity=0)
    with pytest.raises(InvalidJobError, match="positive"):
        AsyncDataStream.ordered_wait(ds, Lookup(), 0)
    with pytest.raises(InvalidJobError, match="AsyncRetryStrategy"):
        AsyncDataStream.ordered_wait_with_retry(ds, Lookup(), 1000, "retry")


@pytest.mark.timeout(60)
def test_ordered_async_wait_keeps_input_order():
    env = env_of()
    strategy = FixedDelayRetryStrategy(3, 10, empty_result_predicate, has_exception_predicate)
    ds = AsyncDataStream.ordered_wait_with_retry(env.from_collection(list(range(20))), Lookup(), 1000, strategy)
    ds.set_parallelism(1)  # one subtask: a collection source's order, kept
    assert list(ds.execute_and_collect()) == [v * 10 for v in range(20)]


@pytest.mark.timeout(60)
def test_batch_mode_emits_one_final_result_per_key():
    env = env_of()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    counts = (
        env.from_collection(["a", "b", "a"])
        .map(lambda w: (w, 1))
        .key_by(lambda p: p[0])
        .reduce(lambda x, y: (x[0], x[1] + y[1]))
    )
    assert sorted(counts.execute_and_collect()) == [("a", 2), ("b", 1)]


# -- API pieces that need no runtime ---------------------------------------------------------------------------


def test_retry_strategies_and_predicates():
    assert not NoRetryStrategy().can_retry(1) and NoRetryStrategy().get_backoff_time_millis(1) == -1
    assert NoRetryStrategy().get_retry_predicate().result_predicate() is None
    fixed = FixedDelayRetryStrategy(2, 100, empty_result_predicate)
    assert [fixed.can_retry(n) for n in (1, 2, 3)] == [True, True, False]
    assert fixed.get_backoff_time_millis(2) == 100
    assert fixed.get_retry_predicate().result_predicate()([]) and not fixed.get_retry_predicate().exception_predicate()
    backoff = ExponentialBackoffDelayRetryStrategy(5, 100, 1000, 3.0)
    assert [backoff.get_backoff_time_millis(n) for n in (1, 2, 3, 4)] == [100, 300, 900, 1000]
    with pytest.raises(InvalidJobError, match="max_attempts"):
        FixedDelayRetryStrategy(0, 100)
    on_io = functools.partial(exception_type_predicate, expected_error_type=OSError)
    assert on_io(FileNotFoundError()) and not on_io(ValueError()) and has_exception_predicate(ValueError())


class LegacyAssigner:
    def __init__(self):
        self.max_seen = None

    def extract_timestamp(self, value, record_timestamp):
        self.max_seen = value if self.max_seen is None else max(self.max_seen, value)
        return value

    def get_current_watermark(self):
        return None if self.max_seen is None else Watermark(self.max_seen - 1)


def test_assigner_with_periodic_watermarks_wrapper_is_a_watermark_strategy():
    assigner = LegacyAssigner()
    wrapper = AssignerWithPeriodicWatermarksWrapper(assigner)
    emitted = []

    class Output:
        def emit_watermark(self, watermark):
            emitted.append(watermark.timestamp)

        def mark_idle(self):
            pass

        def mark_active(self):
            pass

    generator = wrapper.create_watermark_generator()
    generator.on_periodic_emit(Output())
    assert wrapper.create_timestamp_assigner()(42, None) == 42
    generator.on_periodic_emit(Output())
    assert emitted == [41]
    with pytest.raises(InvalidJobError, match="get_current_watermark"):
        AssignerWithPeriodicWatermarksWrapper(object())
    assert isinstance(WatermarkStrategy.no_watermarks(), WatermarkStrategy)
