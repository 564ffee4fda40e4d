"""FileSource and FileSink on fsspec URLs (`memory://` here; object stores take the same path): listing skips
hidden files, readers resume at checkpointed offsets, and part files become visible only at commit, once."""

from __future__ import annotations

import uuid

import fsspec
import pytest

from fluvial.common.encoder import Encoder
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors import file_systems
from fluvial.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    StreamFormat,
)


@pytest.fixture
def memory_dir():
    """A fresh directory of the process-wide memory filesystem, removed afterwards."""
    root = f"memory:///fluvial-test-{uuid.uuid4().hex}"
    yield root
    fs = fsspec.filesystem("memory")
    inner = root.removeprefix("memory://")
    if fs.exists(inner):
        fs.rm(inner, recursive=True)


def put(url: str, text: str) -> None:
    with fsspec.open(url, "wb") as handle:
        handle.write(text.encode())


def read_all(reader, chunk: int = 2) -> list:
    out = []
    while (batch := reader.poll(chunk)) is not None:
        out.extend(batch)
    return out


def source_reader(source, splits):
    reader = source.create_reader(TaskInfo("job", "Source", 0, 1, 128))
    reader.add_splits(splits)
    return reader


def test_paths_resolve_to_local_paths_or_urls(tmp_path):
    assert file_systems.resolve_path(tmp_path.as_uri()) == str(tmp_path)
    assert file_systems.resolve_path("memory://bucket/dir/") == "memory:///bucket/dir"
    assert file_systems.join("memory://bucket", "a", "b") == "memory://bucket/a/b"


def test_a_memory_directory_is_read_without_its_hidden_files_and_resumes_at_the_offset(memory_dir):
    put(f"{memory_dir}/a.txt", "a1\na2\na3\n")
    put(f"{memory_dir}/sub/b.txt", "b1\n")
    put(f"{memory_dir}/.part.inprogress", "hidden\n")
    put(f"{memory_dir}/_tmp/c.txt", "hidden too\n")
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), memory_dir).build()
    splits = source.create_splits(1)
    assert [s.path for s in splits] == [f"{memory_dir}/a.txt", f"{memory_dir}/sub/b.txt"]

    reader = source_reader(source, splits)
    assert reader.poll(2) == ["a1", "a2"]
    state = reader.snapshot_state()
    reader.close()
    assert read_all(source_reader(source, state)) == ["a3", "b1"]


def memory_sink(base: str) -> FileSink:
    return (
        FileSink.for_row_format(base, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("part").with_part_suffix(".txt").build())
        .build()
    )


def visible_files(base: str) -> dict[str, str]:
    fs, inner = file_systems.filesystem(base)
    if not fs.exists(inner):
        return {}
    return {
        path.rsplit("/", 1)[-1]: fs.cat_file(path).decode()
        for path in fs.find(inner)
        if not path.rsplit("/", 1)[-1].startswith(".")
    }


def test_memory_part_files_appear_only_at_commit_and_commit_is_idempotent(memory_dir):
    sink = memory_sink(f"{memory_dir}/out")
    writer = sink.create_writer(TaskInfo("job", "Sink", 0, 1, 128))
    writer.write_batch(["x", "y"])
    writer.flush(False)
    committables = writer.prepare_commit()
    assert visible_files(f"{memory_dir}/out") == {}
    sink.commit(committables)
    assert visible_files(f"{memory_dir}/out") == {"part-0-0.txt": "x\ny\n"}
    sink.commit(committables)  # after a restore the same committables may be committed again
    assert visible_files(f"{memory_dir}/out") == {"part-0-0.txt": "x\ny\n"}
    writer.close()
