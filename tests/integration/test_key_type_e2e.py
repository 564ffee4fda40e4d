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


@pytest.mark.timeout(60)
@pytest.mark.parametrize("timestamped", [False, True], ids=["untimed", "timestamped"])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_key_that_does_not_fit_fails_the_job_naming_key_by_the_key_and_the_type(mode, parallelism, timestamped):
    env = environment(mode)
    env.set_parallelism(parallelism)
    words = env.from_collection(WORDS)
    if timestamped:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(LengthAsTimestamp())
        words = words.assign_timestamps_and_watermarks(strategy)

    def word_length(word):
        return len(word)

    words.key_by(word_length, key_type=Types.STRING()).map(lambda w: w).print()
    with pytest.raises(JobExecutionException) as caught:
        env.execute()
    message = str(caught.value.__cause__)
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
