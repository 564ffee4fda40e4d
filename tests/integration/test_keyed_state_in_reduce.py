"""Keyed state inside a ReduceFunction (as PyFlink's tests use it): state created in open() is read and written
in reduce() for the key of the record being reduced — on the heap and on RocksDB, streaming and batch."""

from __future__ import annotations

import pytest

from fluvial.common import Types
from fluvial.datastream import ReduceFunction, RuntimeExecutionMode, StreamExecutionEnvironment
from fluvial.datastream.state import ValueStateDescriptor


class CountingReduce(ReduceFunction):
    """Sums, and counts in keyed state how often reduce() ran for the key: (key, sum, reductions)."""

    def open(self, runtime_context):
        self.reductions = runtime_context.get_state(ValueStateDescriptor("reductions", Types.INT()))

    def reduce(self, first, second):
        count = (self.reductions.value() or 0) + 1
        self.reductions.update(count)
        return first[0], first[1] + second[1], count


RECORDS = [("a", 1, 0), ("b", 10, 0), ("a", 2, 0), ("a", 3, 0), ("b", 20, 0)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
@pytest.mark.parametrize("batch", [False, True], ids=["streaming", "batch"])
def test_keyed_state_in_a_reduce_function_follows_the_records_key(backend, batch, tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.get_configuration().set_string("state.backend.type", backend)
    if backend == "rocksdb":
        env.get_configuration().set_string("state.checkpoints.dir", f"file://{tmp_path}")
    if batch:
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    results = list(env.from_collection(RECORDS).key_by(lambda r: r[0]).reduce(CountingReduce()).execute_and_collect())
    finals = {key: (total, count) for key, total, count in results}
    assert finals == {"a": (6, 2), "b": (30, 1)}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("timestamped", [False, True], ids=["untimed", "timestamped"])
def test_keyed_state_in_a_reduce_function_that_heads_a_fused_run(timestamped):
    """A map after the reduce fuses with it into one generated loop (as PyFlink's test_keyed_reduce does); the
    reduce's keyed state still follows the record's key there."""
    from fluvial.common import WatermarkStrategy
    from fluvial.common.watermark_strategy import TimestampAssigner

    class Second(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    stream = env.from_collection(RECORDS)
    if timestamped:
        stream = stream.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
        )
    reduced = stream.key_by(lambda r: r[0]).reduce(CountingReduce()).map(lambda r: r)
    results = list(reduced.execute_and_collect())
    finals = {
        key: (total, count) for key, total, count in results if count == max(c for k, _, c in results if k == key)
    }
    assert finals == {"a": (6, 2), "b": (30, 1)}
