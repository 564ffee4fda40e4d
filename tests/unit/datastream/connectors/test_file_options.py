"""File connector options PyFlink programs name: enumerators, split assigners, compaction, the 1.x
StreamingFileSink, and the checks of the bulk-format entry points."""

from __future__ import annotations

import os

import pytest

from fluvial.common import Encoder
from fluvial.common.errors import InvalidJobError, NotYetSupportedError
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors import (
    BucketAssigner,
    FileCompactor,
    FileCompactStrategy,
    FileEnumeratorProvider,
    FileSink,
    FileSource,
    FileSplitAssignerProvider,
    StreamFormat,
    StreamingFileSink,
)


def test_files_are_read_whole_and_splitting_them_is_refused(tmp_path):
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
    builder.set_file_enumerator(FileEnumeratorProvider.default_non_splitting_file_enumerator())
    builder.set_split_assigner(FileSplitAssignerProvider.locality_aware_split_assigner())
    with pytest.raises(NotYetSupportedError, match="splitting files into blocks"):
        builder.set_file_enumerator(FileEnumeratorProvider.default_splitting_file_enumerator())
    with pytest.raises(InvalidJobError, match="FileEnumeratorProvider"):
        builder.set_file_enumerator("split")


def test_compaction_is_refused_until_it_is_built(tmp_path):
    strategy = FileCompactStrategy.builder().enable_compaction_on_checkpoint(3).set_size_threshold(1024).build()
    assert (strategy.num_checkpoints_before_compaction, strategy.size_threshold) == (3, 1024)
    builder = FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
    assert builder.disable_compact() is builder
    with pytest.raises(NotYetSupportedError, match="compaction"):
        builder.enable_compact(strategy, FileCompactor.concat_file_compactor(b"\n"))


def test_bulk_entry_points_check_their_arguments(tmp_path):
    with pytest.raises(InvalidJobError, match="BulkWriterFactory"):
        FileSink.for_bulk_format(str(tmp_path), Encoder.simple_string_encoder())
    with pytest.raises(InvalidJobError, match="BulkFormat"):
        FileSource.for_bulk_file_format(StreamFormat.text_line_format(), str(tmp_path))
    with pytest.raises(InvalidJobError, match="Encoder"):
        FileSink.for_row_format(str(tmp_path), "utf-8")


@pytest.mark.timeout(60)
def test_streaming_file_sink_through_add_sink_commits_its_parts(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    sink = (
        StreamingFileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    env.from_collection(["a", "b"]).add_sink(sink)
    env.execute()
    parts = [p for p in os.listdir(tmp_path) if not p.startswith(".")]
    assert len(parts) == 1 and (tmp_path / parts[0]).read_text() == "a\nb\n"
