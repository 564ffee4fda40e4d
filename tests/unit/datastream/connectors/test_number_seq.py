import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.number_seq import NumberSequenceSource, NumberSequenceSplit
from fluvial.datastream.connectors.source import Boundedness, assign_splits


def task(index: int = 0, parallelism: int = 1) -> TaskInfo:
    return TaskInfo("job", "Source: Sequence Source", index, parallelism, 128)


def drain(reader, max_records: int) -> list:
    out = []
    while (batch := reader.poll(max_records)) is not None:
        assert len(batch) <= max_records
        out.extend(batch)
    return out


def reader_for(source, splits, index=0, parallelism=1):
    reader = source.create_reader(task(index, parallelism))
    reader.add_splits(splits)
    return reader


@settings(max_examples=60, deadline=None)
@given(
    start=st.integers(-(10**6), 10**6),
    length=st.integers(1, 3000),
    parallelism=st.integers(1, 16),
    max_records=st.integers(1, 700),
)
def test_parallel_subtasks_emit_every_number_exactly_once(start, length, parallelism, max_records):
    source = NumberSequenceSource(start, start + length - 1)
    splits = source.create_splits(parallelism)
    emitted = []
    for i in range(parallelism):
        out = drain(reader_for(source, assign_splits(splits, parallelism, i), i, parallelism), max_records)
        assert out == sorted(out)  # each subtask emits in order
        emitted.extend(out)
    assert sorted(emitted) == list(range(start, start + length))


@given(length=st.integers(1, 500), parallelism=st.integers(1, 32))
def test_splits_are_contiguous_and_balanced(length, parallelism):
    splits = NumberSequenceSource(0, length - 1).create_splits(parallelism)
    assert len(splits) == min(parallelism, length)
    sizes = [s.end - s.current + 1 for s in splits]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    for a, b in zip(splits, splits[1:]):
        assert b.current == a.end + 1
    assert len({s.split_id for s in splits}) == len(splits)


@settings(max_examples=60, deadline=None)
@given(
    length=st.integers(1, 2000),
    parallelism=st.integers(1, 4),
    max_records=st.integers(1, 300),
    polls_before=st.integers(0, 20),
)
def test_restore_from_snapshot_yields_exactly_the_remaining_numbers(length, parallelism, max_records, polls_before):
    source = NumberSequenceSource(1, length)
    reader = reader_for(source, source.create_splits(parallelism))
    before = []
    for _ in range(polls_before):
        batch = reader.poll(max_records)
        if batch is None:
            break
        before.extend(batch)
    snapshot = pickle.loads(pickle.dumps(reader.snapshot_state()))
    reader.poll(max_records)  # progress after the snapshot must not leak into it
    after = drain(reader_for(source, snapshot), max_records)
    assert before + after == list(range(1, length + 1))


def test_snapshot_position_is_the_next_number_to_emit():
    source = NumberSequenceSource(10, 19)
    reader = reader_for(source, source.create_splits(1))
    assert list(reader.poll(3)) == [10, 11, 12]
    assert reader.snapshot_state() == [NumberSequenceSplit("0", 13, 19)]


def test_exhausted_reader_snapshots_nothing_and_stays_ended():
    source = NumberSequenceSource(0, 4)
    reader = reader_for(source, source.create_splits(1))
    assert list(reader.poll(100)) == [0, 1, 2, 3, 4]
    assert reader.poll(100) is None
    assert reader.poll(100) is None
    assert reader.snapshot_state() == []


def test_reader_without_splits_ends_at_once():
    source = NumberSequenceSource(0, 1)
    splits = source.create_splits(4)  # only 2 numbers: subtasks 2 and 3 get nothing
    assert assign_splits(splits, 4, 3) == []
    assert reader_for(source, [], 3, 4).poll(10) is None


def test_single_number_range_is_allowed():
    source = NumberSequenceSource(7, 7)
    assert drain(reader_for(source, source.create_splits(3)), 5) == [7]


def test_start_after_end_is_a_clear_error():
    with pytest.raises(InvalidJobError, match="start must not exceed end"):
        NumberSequenceSource(5, 4)


def test_non_positive_parallelism_is_rejected():
    with pytest.raises(InvalidJobError, match="parallelism 0"):
        NumberSequenceSource(1, 10).create_splits(0)


def test_description_is_bounded_named_and_picklable():
    source = NumberSequenceSource(1, 100)
    assert source.get_boundedness() is Boundedness.BOUNDED
    assert source.default_name() == "Sequence Source"
    assert source.max_parallelism() is None
    assert pickle.loads(pickle.dumps(source)) == source


def test_large_bounds_do_not_materialize_the_range():
    source = NumberSequenceSource(0, 10**15)
    reader = reader_for(source, source.create_splits(2))
    assert list(reader.poll(3)) == [0, 1, 2]
