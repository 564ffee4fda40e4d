"""`key_by(..., key_type=...)` is honoured, as PyFlink's serializer of the key honours it: a key that does not
fit its declared type fails the job naming the key_by, the key and the type, and a fitting typed key gives the
records an untyped key_by gives (in every execution mode)."""

from __future__ import annotations

import pytest

from fluvial.common import Types
from fluvial.common.errors import InvalidJobError, JobExecutionException
from fluvial.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from fluvial.datastream import CoMapFunction
from fluvial.testing import ExecutionMode, environment


class CoIdentity(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return str(value)


WORDS = ["a", "bb", "a", "ccc", "bb", "a"]


def _counts(mode: ExecutionMode, parallelism: int, key_type):
    env = environment(mode)
    env.set_parallelism(parallelism)
    pairs = env.from_collection([(w, 1) for w in WORDS], type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    keyed = pairs.key_by(lambda pair: pair[0], key_type=key_type)
    return sorted(keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).execute_and_collect())


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_fitting_typed_key_gives_the_same_records_as_an_untyped_one(mode, parallelism):
    untyped = _counts(mode, parallelism, None)
    assert untyped == _counts(mode, parallelism, Types.STRING())
    assert ("a", 3) in untyped


class LengthAsTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return len(value)


# what consumes the typed key_by: a keyed map (the producer checks each key), a keyed reduce and a reduce fused
# with the map after it (both check each key the first time their state lookup misses)
CONSUMERS = {
    "map": lambda keyed: keyed.map(lambda w: w),
    "reduce": lambda keyed: keyed.reduce(lambda a, b: a),
    "fused reduce": lambda keyed: keyed.reduce(lambda a, b: a).map(lambda w: w),
    # a window operator checks where a key has no contents yet (general path: each distinct key once)
    "count window": lambda keyed: keyed.count_window(2).reduce(lambda a, b: a),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
@pytest.mark.parametrize("timestamped", [False, True], ids=["untimed", "timestamped"])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_key_that_does_not_fit_fails_the_job_naming_key_by_the_key_and_the_type(
    mode, parallelism, timestamped, consumer
):
    env = environment(mode)
    env.set_parallelism(parallelism)
    words = env.from_collection(WORDS)
    if timestamped:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(LengthAsTimestamp())
        words = words.assign_timestamps_and_watermarks(strategy)

    def word_length(word):
        return len(word)

    CONSUMERS[consumer](words.key_by(word_length, key_type=Types.STRING())).print()
    with pytest.raises(JobExecutionException) as caught:
        env.execute()
    message = str(caught.value.__cause__)
    assert "operator 'key_by(" in str(caught.value) and "word_length)' in " in str(caught.value)
    assert "'key_by(" in message and "word_length" in message
    assert "declared key_type" in message and repr(Types.STRING()) in message and "is not a String" in message


@pytest.mark.timeout(60)
def test_connected_streams_key_by_checks_both_inputs_keys(mode):
    env = environment(mode)
    env.set_parallelism(2)

    def second_key(number):
        return number

    first = env.from_collection(["a", "b"])
    second = env.from_collection([1, 2])
    first.connect(second).key_by(lambda word: word, second_key, key_type=Types.STRING()).map(
        CoIdentity(), output_type=Types.STRING()
    ).print()
    with pytest.raises(JobExecutionException) as caught:
        env.execute()
    message = str(caught.value.__cause__)
    assert "second_key" in message and "declared key_type" in message and "is not a String" in message


def test_key_type_must_be_a_type_information(mode):
    env = environment(mode)
    with pytest.raises(InvalidJobError, match="key_type must be a TypeInformation"):
        env.from_collection(WORDS).key_by(len, key_type=str)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("variant", ["rocksdb", "batch"])
def test_a_reduce_checks_each_new_key_on_every_state_path(variant):
    """A keyed reduce at parallelism 1 checks the keys itself where its state lookup misses: also on RocksDB
    (grouped per buffer) and in a BATCH job (one final result per key)."""
    from fluvial.datastream import RuntimeExecutionMode
    from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend

    env = environment(ExecutionMode.THREADS)
    env.set_parallelism(1)
    if variant == "rocksdb":
        env.set_state_backend(EmbeddedRocksDBStateBackend())
    else:
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)

    def word_length(word):
        return len(word)

    env.from_collection(WORDS).key_by(word_length, key_type=Types.STRING()).reduce(lambda a, b: a).print()
    with pytest.raises(JobExecutionException) as caught:
        env.execute()
    assert "in task Keyed Reduce" in str(caught.value)
    message = str(caught.value.__cause__)
    assert "word_length)' produced a key that does not fit its declared key_type String: 1 is not a String" in message
