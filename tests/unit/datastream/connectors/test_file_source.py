import importlib.util
import os
import pickle
import tempfile
from pathlib import Path
from unittest import mock

import cloudpickle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.errors import InvalidJobError, ResourceError
from fluvial.common.task_info import TaskInfo
from fluvial.common.time import Duration, ManualClock
from fluvial.datastream.connectors import file_system
from fluvial.datastream.connectors.file_system import (
    FileMonitorSplit,
    FileSource,
    FileSourceSplit,
    StreamFormat,
    TextLineReader,
)
from fluvial.datastream.connectors.source import Boundedness, assign_splits


def task(index: int = 0, parallelism: int = 1) -> TaskInfo:
    return TaskInfo("job", "Source: File Source", index, parallelism, 128)


def text_source(*paths, monitor_ms=None) -> FileSource:
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths)
    if monitor_ms is not None:
        builder.monitor_continuously(Duration.of_millis(monitor_ms))
    return builder.build()


def reader_for(source, splits, index=0, parallelism=1):
    reader = source.create_reader(task(index, parallelism))
    reader.add_splits(splits)
    return reader


def drain(reader, max_records: int = 1000) -> list:
    out = []
    while (batch := reader.poll(max_records)) is not None:
        assert len(batch) <= max_records
        out.extend(batch)
    reader.close()
    return out


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def test_lines_lose_lf_and_crlf_and_a_last_line_without_newline_counts(tmp_path):
    f = write(tmp_path / "in.txt", "a\nb\r\n\nc\r\rd")
    source = text_source(f)
    assert drain(reader_for(source, source.create_splits(1))) == ["a", "b", "", "c\r\rd"]


def test_file_ending_with_newline_has_no_extra_empty_line(tmp_path):
    f = write(tmp_path / "in.txt", "x\ny\n")
    source = text_source(f)
    assert drain(reader_for(source, source.create_splits(1))) == ["x", "y"]


def test_empty_file_yields_nothing(tmp_path):
    source = text_source(write(tmp_path / "empty.txt", ""))
    assert drain(reader_for(source, source.create_splits(1))) == []


def test_utf8_text_is_decoded(tmp_path):
    f = write(tmp_path / "u.txt", "grüße\r\n日本\n")
    source = text_source(f)
    assert drain(reader_for(source, source.create_splits(1))) == ["grüße", "日本"]


line_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(st.tuples(line_text, st.sampled_from(["\n", "\r\n"])), max_size=25),
    last=st.one_of(st.none(), line_text.filter(bool)),
    max_records=st.integers(1, 6),
    polls_before=st.integers(0, 12),
    chunk_size=st.integers(1, 16),
)
def test_restore_from_snapshot_resumes_at_the_next_unread_line(lines, last, max_records, polls_before, chunk_size):
    expected = [text for text, _ in lines] + ([last] if last is not None else [])
    data = "".join(text + end for text, end in lines) + (last or "")
    # small chunks make lines (and "\r\n" pairs) straddle chunk boundaries
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(TextLineReader, "CHUNK_SIZE", chunk_size):
        source = text_source(write(Path(tmp) / "in.txt", data))
        reader = reader_for(source, source.create_splits(1))
        before = []
        for _ in range(polls_before):
            batch = reader.poll(max_records)
            if batch is None:
                break
            before.extend(batch)
        snapshot = pickle.loads(pickle.dumps(reader.snapshot_state()))
        reader.poll(max_records)  # progress after the snapshot must not leak into it
        reader.close()
        after = drain(reader_for(source, snapshot), max_records)
    assert before + after == expected


def test_snapshot_offset_is_the_byte_offset_of_the_next_line(tmp_path):
    f = write(tmp_path / "in.txt", "ab\r\ncd\nef")
    source = text_source(f)
    reader = reader_for(source, source.create_splits(1))
    assert reader.poll(1) == ["ab"]
    assert reader.snapshot_state() == [FileSourceSplit(str(f), str(f), 4)]
    assert reader.poll(5) == ["cd"]
    assert reader.poll(5) == ["ef"]
    assert reader.snapshot_state() == [FileSourceSplit(str(f), str(f), 9)]
    assert reader.poll(5) is None
    assert reader.snapshot_state() == []


def test_restore_across_files_skips_finished_ones(tmp_path):
    write(tmp_path / "a.txt", "a1\na2\n")
    write(tmp_path / "b.txt", "b1\nb2\n")
    source = text_source(tmp_path)
    reader = reader_for(source, source.create_splits(1))
    assert reader.poll(2) == ["a1", "a2"]
    assert reader.poll(1) == ["b1"]  # a.txt ends on the way
    snapshot = reader.snapshot_state()
    assert [s.path for s in snapshot] == [str(tmp_path / "b.txt")]
    assert drain(reader_for(source, snapshot)) == ["b2"]


def test_a_line_much_longer_than_a_chunk_is_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(TextLineReader, "CHUNK_SIZE", 8)
    long_line = "x" * 1000
    source = text_source(write(tmp_path / "in.txt", f"s\n{long_line}\nt"))
    assert drain(reader_for(source, source.create_splits(1)), 2) == ["s", long_line, "t"]


def test_directories_are_listed_recursively_sorted_skipping_hidden_files(tmp_path):
    write(tmp_path / "b.txt", "b\n")
    write(tmp_path / "a.txt", "a\n")
    write(tmp_path / "sub" / "c.txt", "c\n")
    write(tmp_path / ".hidden", "no\n")
    write(tmp_path / "_SUCCESS", "no\n")
    write(tmp_path / ".part-0-0.inprogress.123", "no\n")
    write(tmp_path / "_tmp" / "d.txt", "no\n")
    write(tmp_path / ".git" / "e.txt", "no\n")
    source = text_source(tmp_path, tmp_path / "a.txt")  # a.txt named twice: read once
    splits = source.create_splits(1)
    assert [Path(s.path).relative_to(tmp_path).as_posix() for s in splits] == ["a.txt", "b.txt", "sub/c.txt"]
    assert drain(reader_for(source, splits)) == ["a", "b", "c"]


def test_file_uris_and_path_objects_are_accepted(tmp_path):
    f = write(tmp_path / "in.txt", "hello\n")
    for path in (f.as_uri(), f, str(f)):
        source = text_source(path)
        assert drain(reader_for(source, source.create_splits(1))) == ["hello"]


def test_a_scheme_fsspec_does_not_know_is_rejected_naming_it():
    with pytest.raises(InvalidJobError, match="no filesystem for the scheme 'nosuch'"):
        text_source("nosuch://bucket/key")


@pytest.mark.skipif(importlib.util.find_spec("s3fs") is not None, reason="s3fs is installed, so s3:// resolves")
def test_an_object_store_without_its_fsspec_package_is_rejected_naming_the_package():
    with pytest.raises(InvalidJobError, match="s3fs"):
        text_source("s3://bucket/key")


def test_missing_path_is_a_clear_error_naming_it(tmp_path):
    missing = tmp_path / "nope"
    source = text_source(tmp_path, missing)
    with pytest.raises(ResourceError, match="nope.*does not exist"):
        source.create_splits(1)


def test_file_removed_after_planning_is_a_clear_error(tmp_path):
    f = write(tmp_path / "in.txt", "x\n")
    source = text_source(f)
    splits = source.create_splits(1)
    f.unlink()
    with pytest.raises(ResourceError, match="vanished"):
        reader_for(source, splits).poll(10)


@settings(max_examples=30, deadline=None)
@given(file_count=st.integers(0, 12), parallelism=st.integers(1, 5))
def test_every_file_is_read_by_exactly_one_subtask(file_count, parallelism):
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(file_count):
            write(Path(tmp) / f"f{i:02}.txt", f"{i}-a\n{i}-b\n")
        source = text_source(tmp)
        splits = source.create_splits(parallelism)
        read = []
        for i in range(parallelism):
            read.extend(drain(reader_for(source, assign_splits(splits, parallelism, i), i, parallelism), 3))
    assert sorted(read) == sorted(f"{i}-{x}" for i in range(file_count) for x in "ab")


def test_static_source_is_bounded_and_picklable(tmp_path):
    source = text_source(tmp_path)
    assert source.get_boundedness() is Boundedness.BOUNDED
    assert source.default_name() == "File Source"
    assert pickle.loads(pickle.dumps(source)) == source
    assert cloudpickle.loads(cloudpickle.dumps(source)) == source


def test_charsets_must_be_known_and_ascii_compatible():
    with pytest.raises(InvalidJobError, match="unknown charset"):
        StreamFormat.text_line_format("no-such-charset")
    with pytest.raises(InvalidJobError, match="ASCII-compatible"):
        StreamFormat.text_line_format("UTF-16")
    assert StreamFormat.text_line_format("ISO-8859-1").charset_name == "ISO-8859-1"


def test_latin1_files_are_decoded_with_the_given_charset(tmp_path):
    f = write(tmp_path / "l.txt", "café\n".encode("latin-1"))
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format("ISO-8859-1"), f).build()
    assert drain(reader_for(source, source.create_splits(1))) == ["café"]


def monitored_reader(source, splits, clock: ManualClock):
    reader = file_system.FileSourceReader(source.stream_format, source.discovery_interval_ms, clock.seconds)
    reader.add_splits(splits)
    return reader


def test_continuous_source_discovers_new_files_once_per_interval(tmp_path):
    write(tmp_path / "a.txt", "a\n")
    source = text_source(tmp_path, monitor_ms=1000)
    assert source.get_boundedness() is Boundedness.CONTINUOUS_UNBOUNDED
    clock = ManualClock(100_000)
    reader = monitored_reader(source, source.create_splits(1), clock)
    assert reader.poll(10) == ["a"]
    assert reader.poll(10) == []  # unbounded: nothing now, never None
    write(tmp_path / "b.txt", "b\n")
    assert reader.poll(10) == []  # the interval has not passed since the last listing
    clock.advance(1_000)
    assert reader.poll(10) == ["b"]
    clock.advance(1_000)
    assert reader.poll(10) == []  # a.txt and b.txt are not read again
    assert pickle.loads(pickle.dumps(source)) == source


def test_continuous_source_restores_without_rereading_or_missing_files(tmp_path):
    write(tmp_path / "a.txt", "a\n")
    source = text_source(tmp_path, monitor_ms=1000)
    clock = ManualClock(100_000)
    reader = monitored_reader(source, source.create_splits(1), clock)
    assert reader.poll(10) == ["a"]
    write(tmp_path / "b.txt", "b1\nb2\n")
    clock.advance(1_000)
    assert reader.poll(1) == ["b1"]
    snapshot = pickle.loads(pickle.dumps(reader.snapshot_state()))
    monitors = [s for s in snapshot if isinstance(s, FileMonitorSplit)]
    assert len(monitors) == 1 and monitors[0].seen == {str(tmp_path / "a.txt"), str(tmp_path / "b.txt")}
    write(tmp_path / "c.txt", "c\n")  # appears after the checkpoint
    restored = monitored_reader(source, snapshot, clock)
    assert restored.poll(10) == ["b2"]
    clock.advance(1_000)
    assert restored.poll(10) == ["c"]
    clock.advance(1_000)
    assert restored.poll(10) == []


def test_continuous_monitoring_splits_new_files_among_subtasks_exactly_once(tmp_path):
    source = text_source(tmp_path, monitor_ms=1000)
    parallelism = 3
    splits = source.create_splits(parallelism)
    clock = ManualClock(100_000)
    readers = [monitored_reader(source, assign_splits(splits, parallelism, i), clock) for i in range(parallelism)]
    assert all(sum(isinstance(s, FileMonitorSplit) for s in r.snapshot_state()) == 1 for r in readers)
    for i in range(20):
        write(tmp_path / f"n{i}.txt", f"{i}\n")
    clock.advance(1_000)
    read = [line for r in readers for batch in iter(lambda r=r: r.poll(100), []) for line in batch]
    assert sorted(read, key=int) == [str(i) for i in range(20)]


def test_monitor_interval_must_be_positive(tmp_path):
    with pytest.raises(InvalidJobError, match="positive interval"):
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), tmp_path).monitor_continuously(0)


def test_process_static_file_set_undoes_monitoring(tmp_path):
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), tmp_path)
    source = builder.monitor_continuously(Duration.of_seconds(1)).process_static_file_set().build()
    assert source.get_boundedness() is Boundedness.BOUNDED
    assert not any(isinstance(s, FileMonitorSplit) for s in source.create_splits(2))


def test_relative_paths_are_resolved_when_the_source_is_built(tmp_path, monkeypatch):
    write(tmp_path / "rel.txt", "r\n")
    monkeypatch.chdir(tmp_path)
    source = text_source("rel.txt")
    monkeypatch.chdir(os.path.dirname(tmp_path))
    assert drain(reader_for(source, source.create_splits(1))) == ["r"]
