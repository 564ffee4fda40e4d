import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.collection import (
    CHUNK_ELEMENTS,
    CollectionSource,
    CollectionSplit,
    PickledElements,
)
from fluvial.datastream.connectors.source import Boundedness

TASK = TaskInfo("job", "Source: Collection Source", 0, 1, 128)


def reader_for(source, splits):
    reader = source.create_reader(TASK)
    reader.add_splits(splits)
    return reader


def drain(reader, max_records: int) -> list:
    out = []
    while (batch := reader.poll(max_records)) is not None:
        assert isinstance(batch, list) and len(batch) <= max_records
        out.extend(batch)
    return out


def test_emits_elements_in_order_in_slices():
    source = CollectionSource(["a", "b", "c", "d", "e"])
    reader = reader_for(source, source.create_splits(1))
    assert reader.poll(2) == ["a", "b"]
    assert reader.poll(2) == ["c", "d"]
    assert reader.poll(2) == ["e"]
    assert reader.poll(2) is None


def test_always_one_split_and_one_subtask():
    source = CollectionSource([1, 2, 3])
    assert source.max_parallelism() == 1
    assert len(source.create_splits(8)) == 1


@given(
    elements=st.lists(st.one_of(st.integers(), st.text(), st.tuples(st.text(), st.integers())), max_size=60),
    max_records=st.integers(1, 10),
    polls_before=st.integers(0, 15),
)
def test_restore_from_snapshot_yields_exactly_the_remaining_elements(elements, max_records, polls_before):
    source = CollectionSource(elements)
    reader = reader_for(source, source.create_splits(1))
    before = []
    for _ in range(polls_before):
        batch = reader.poll(max_records)
        if batch is None:
            break
        before.extend(batch)
    snapshot = pickle.loads(pickle.dumps(reader.snapshot_state()))
    reader.poll(max_records)  # progress after the snapshot must not leak into it
    after = drain(reader_for(source, snapshot), max_records)
    assert before + after == elements


def test_snapshot_keeps_the_index_of_the_next_element():
    source = CollectionSource([10, 20, 30])
    reader = reader_for(source, source.create_splits(1))
    reader.poll(1)
    [split] = reader.snapshot_state()
    assert isinstance(split, CollectionSplit) and split.position == 1


def test_later_changes_to_the_users_list_do_not_change_the_job():
    data = [1, 2, 3]
    source = CollectionSource(data)
    data.append(4)
    assert drain(reader_for(source, source.create_splits(1)), 10) == [1, 2, 3]


def test_empty_collection_ends_at_once():
    source = CollectionSource([])
    reader = reader_for(source, source.create_splits(1))
    assert reader.poll(10) is None
    assert reader.snapshot_state() == []


def test_a_string_is_rejected_rather_than_split_into_characters():
    with pytest.raises(InvalidJobError, match="wrap it in a list"):
        CollectionSource("abc")


def test_description_is_bounded_named_and_picklable():
    source = CollectionSource([1, "x", (2, 3)])
    assert source.get_boundedness() is Boundedness.BOUNDED
    assert source.default_name() == "Collection Source"
    assert pickle.loads(pickle.dumps(source)) == source


@given(
    size=st.integers(0, 40),
    chunk=st.integers(1, 7),
    start=st.integers(-45, 45),
    stop=st.integers(-45, 45),
    step=st.sampled_from([None, 1, 2, -1]),
)
def test_pickled_elements_read_like_the_tuple_they_came_from(size, chunk, start, stop, step):
    elements = tuple((i, str(i)) for i in range(size))
    pickled = pickle.loads(pickle.dumps(PickledElements.of(elements, chunk)))
    assert len(pickled) == size
    assert tuple(pickled[start:stop:step]) == elements[start:stop:step]
    assert list(pickled) == list(elements)
    if size:
        assert pickled[size // 2] == elements[size // 2] and pickled[-1] == elements[-1]
    with pytest.raises(IndexError):
        pickled[size]


def test_a_shipped_collection_unpickles_only_the_chunks_its_reader_reaches():
    source = CollectionSource(range(10 * CHUNK_ELEMENTS))
    shipped = pickle.loads(pickle.dumps(source))
    assert isinstance(shipped.elements, PickledElements) and len(shipped.elements.chunks) == 10
    reader = reader_for(shipped, shipped.create_splits(1))
    assert reader.poll(3) == [0, 1, 2]
    assert shipped.elements._index == 0  # one chunk unpickled, nine still bytes
    [split] = reader.snapshot_state()
    assert split.elements is None and split.position == 3  # a checkpoint holds the position, not the elements


def test_elements_only_cloudpickle_can_write_and_elements_that_hold_themselves_travel_too():
    looped: list = [1]
    looped.append(looped)
    source = CollectionSource([lambda v: v + 1, looped])
    shipped = pickle.loads(pickle.dumps(source))
    function, again = drain(reader_for(shipped, shipped.create_splits(1)), 5)
    assert function(1) == 2 and again[1] is again


def test_a_restored_split_of_an_older_fluvial_brings_its_elements():
    source = CollectionSource([1, 2, 3])
    old = CollectionSplit("0", (7, 8, 9), 1)
    assert drain(reader_for(source, [old]), 10) == [8, 9]
