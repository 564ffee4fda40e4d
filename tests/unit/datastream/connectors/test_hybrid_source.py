"""HybridSource: bounded sources read one after another, with the position (which source, which record)
checkpointed and restored."""

from __future__ import annotations

import pytest

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.common.time import Duration
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors import DeliveryGuarantee, HybridSource, NumberSequenceSource, Sink, Source
from fluvial.datastream.connectors.base import StreamTransformer, SupportsPreprocessing
from fluvial.datastream.connectors.file_system import FileSource, StreamFormat
from fluvial.datastream.connectors.hybrid_source import HybridSplit


def files_then_numbers(tmp_path) -> HybridSource:
    (tmp_path / "history.txt").write_text("h1\nh2\nh3\n")
    files = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path)).build()
    return HybridSource.builder(files).add_source(NumberSequenceSource(1, 4)).build()


def reader_of(source, splits, index=0, parallelism=1):
    reader = source.create_reader(TaskInfo("job", "Source: hybrid", index, parallelism, 128))
    reader.add_splits(splits)
    return reader


def drain(reader, chunk=2) -> list:
    out = []
    while (batch := reader.poll(chunk)) is not None:
        out.extend(batch)
    return out


def test_the_second_source_starts_after_the_first_ends(tmp_path):
    source = files_then_numbers(tmp_path)
    assert drain(reader_of(source, source.create_splits(1))) == ["h1", "h2", "h3", 1, 2, 3, 4]


def test_a_restored_reader_resumes_in_the_right_source_at_the_right_record(tmp_path):
    source = files_then_numbers(tmp_path)
    reader = reader_of(source, source.create_splits(1))
    assert reader.poll(2) == ["h1", "h2"]
    state = reader.snapshot_state()
    assert {split.position for split in state} == {0, 1}
    reader.close()
    resumed = reader_of(source, state)
    assert resumed.poll(1) == ["h3"]
    assert list(resumed.poll(1)) == [1]
    later = resumed.snapshot_state()
    assert all(split.position == 1 for split in later)
    assert drain(reader_of(source, later)) == [2, 3, 4]


def test_each_subtask_keeps_the_splits_it_would_get_from_each_source_alone(tmp_path):
    source = files_then_numbers(tmp_path)
    splits = source.create_splits(2)
    for index in range(2):
        mine = [s for s in splits[index::2] if s.split is not None]
        alone = NumberSequenceSource(1, 4).create_splits(2)[index::2]
        assert [s.split for s in mine if s.position == 1] == alone


def test_only_the_last_source_may_be_unbounded(tmp_path):
    watched = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
        .monitor_continuously(Duration.of_seconds(1))
        .build()
    )
    with pytest.raises(InvalidJobError, match="must be bounded"):
        HybridSource.builder(watched).add_source(NumberSequenceSource(1, 2)).build()
    hybrid = HybridSource.builder(NumberSequenceSource(1, 2)).add_source(watched).build()
    assert hybrid.get_boundedness().name == "CONTINUOUS_UNBOUNDED"
    with pytest.raises(InvalidJobError, match="chains Sources"):
        HybridSource.builder("not a source")


@pytest.mark.timeout(60)
def test_a_hybrid_source_job(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    assert list(env.from_source(files_then_numbers(tmp_path)).execute_and_collect()) == ["h1", "h2", "h3", 1, 2, 3, 4]


def test_connector_base_names():
    assert Source is __import__("fluvial.datastream.connectors.source", fromlist=["Source"]).Source
    assert issubclass(HybridSource, Source) and Sink.__name__ == "Sink"
    assert [g.name for g in DeliveryGuarantee] == ["EXACTLY_ONCE", "AT_LEAST_ONCE", "NONE"]
    assert HybridSplit(1, "x").split_id == "1:x"


class UpperFirst(StreamTransformer):
    def apply(self, ds):
        return ds.map(str.upper)


class Collecting(Sink, SupportsPreprocessing):
    def create_writer(self, task_info, restored_state=None):
        raise AssertionError("not run in this test")

    def get_transformer(self):
        return UpperFirst()


def test_sink_to_applies_a_preprocessing_sinks_transformer():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(["a"]).sink_to(Collecting())
    names = [node.name for node in env.get_stream_graph().nodes.values()]
    assert names == ["Source: Collection Source", "Map", "Sink"]
