"""How many channels a writer cuts each buffer into, and the source poll size that follows from it: a source
feeding a key_by or a rebalance at parallelism n polls n buffers' worth, so each channel still gets buffers of
about SOURCE_BATCH_SIZE records (one frame, one credit, one consumer step each)."""

from __future__ import annotations

import pickle

import pytest

from fluvial.datastream.transformations import PartitionerKind, PartitionerSpec
from fluvial.runtime.channels import ChannelId, LocalChannel
from fluvial.runtime.deployment import OutputSpec
from fluvial.runtime.input_processor import MAX_SOURCE_FAN_OUT, SOURCE_BATCH_SIZE, source_batch_size
from fluvial.runtime.records import RecordBatch
from fluvial.runtime.writer import RecordWriter

pytestmark = pytest.mark.timeout(10)


def writer(kind: PartitionerKind, channels: int) -> RecordWriter:
    key = (lambda value: value) if kind in (PartitionerKind.HASH, PartitionerKind.CUSTOM) else None
    custom = (lambda key, n: 0) if kind is PartitionerKind.CUSTOM else None
    ids = tuple(ChannelId("edge", 0, index) for index in range(channels))
    spec = OutputSpec("edge", PartitionerSpec(kind, key, custom), ids, 128, channels)
    return RecordWriter(spec, [LocalChannel() for _ in ids], 0)


@pytest.mark.parametrize(
    ("kind", "fan_out"),
    [
        (PartitionerKind.HASH, 3),
        (PartitionerKind.REBALANCE, 3),
        (PartitionerKind.RESCALE, 3),
        (PartitionerKind.SHUFFLE, 3),
        (PartitionerKind.CUSTOM, 3),
        (PartitionerKind.BROADCAST, 1),  # every channel gets the whole buffer
        (PartitionerKind.GLOBAL, 1),
    ],
)
def test_partitioners_that_spread_records_cut_a_buffer_into_one_part_per_channel(kind, fan_out):
    assert writer(kind, 3).fan_out == fan_out


def test_a_source_polls_a_buffer_for_each_channel_up_to_a_cap():
    assert source_batch_size(1) == SOURCE_BATCH_SIZE
    assert source_batch_size(2) == 2 * SOURCE_BATCH_SIZE
    assert source_batch_size(10_000) == MAX_SOURCE_FAN_OUT * SOURCE_BATCH_SIZE


def test_a_record_batch_pickles_as_its_two_columns():
    batch = pickle.loads(pickle.dumps(RecordBatch([("a", 1)], [5]), protocol=5))
    assert type(batch) is RecordBatch and batch.values == [("a", 1)] and batch.timestamps == [5]
    assert pickle.loads(pickle.dumps(RecordBatch([1]))).timestamps is None
