"""FileSource (text lines) → FileSink (row format) as real jobs: the committed part files together hold
exactly the input lines, and nothing is left in progress."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from fluvial.common import Duration, Encoder
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from fluvial.testing import ExecutionMode, environment


def _write_inputs(directory, files: int, lines_per_file: int) -> list[str]:
    directory.mkdir()
    all_lines = []
    for f in range(files):
        lines = [f"file{f}-line{i} ünïcødé" for i in range(lines_per_file)]
        (directory / f"input-{f}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        all_lines.extend(lines)
    (directory / ".hidden.txt").write_text("must not be read\n", encoding="utf-8")
    return all_lines


def _committed(base) -> tuple[list[str], list[str]]:
    """(lines of every visible part file, names of hidden leftovers)."""
    lines, hidden = [], []
    for root, _, names in os.walk(base):
        for name in names:
            path = os.path.join(root, name)
            if name.startswith("."):
                hidden.append(path)
                continue
            with open(path, encoding="utf-8") as handle:
                lines.extend(handle.read().splitlines())
    return lines, hidden


def _source(path) -> FileSource:
    return FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(path)).build()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_file_source_to_file_sink_keeps_every_line_once(tmp_path, parallelism, mode):
    lines = _write_inputs(tmp_path / "in", files=5, lines_per_file=400)
    out = tmp_path / "out"
    env = environment(mode)
    env.set_parallelism(parallelism)
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build())
        .build()
    )
    env.from_source(_source(tmp_path / "in"), source_name="lines").sink_to(sink)
    env.execute("copy files")
    written, hidden = _committed(out)
    assert hidden == []
    assert Counter(written) == Counter(lines)
    part_names = [n for _, _, names in os.walk(out) for n in names]
    assert part_names and all(n.startswith("pre-") and n.endswith(".txt") for n in part_names)


@pytest.mark.timeout(60)
def test_transformed_lines_rolled_into_small_parts(tmp_path, mode):
    lines = _write_inputs(tmp_path / "in", files=3, lines_per_file=300)
    out = tmp_path / "out"
    env = environment(mode)
    env.set_parallelism(2)
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=2048))
        .build()
    )
    env.from_source(_source(tmp_path / "in")).map(str.upper).filter(
        lambda line: not line.endswith("7 ÜNÏCØDÉ")
    ).sink_to(sink)
    env.execute()
    written, hidden = _committed(out)
    assert hidden == []
    expected = [line.upper() for line in lines if not line.upper().endswith("7 ÜNÏCØDÉ")]
    assert Counter(written) == Counter(expected)
    parts = os.listdir(out)
    assert len(parts) > 10  # 2 KB parts: the output really was rolled
    assert all(os.path.isfile(out / p) for p in parts)  # base path assigner: no bucket directories


@pytest.mark.timeout(60)
def test_read_text_file_and_collect(tmp_path):
    path = tmp_path / "one.txt"
    path.write_text("a\r\nb\n\nc", encoding="utf-8")  # CRLF, an empty line, no final newline
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    assert list(env.read_text_file(str(path)).execute_and_collect()) == ["a", "b", "", "c"]


@pytest.mark.timeout(60)
def test_monitored_file_source_picks_up_new_files_then_cancel(tmp_path, mode):
    watched = tmp_path / "watched"
    watched.mkdir()
    (watched / "first.txt").write_text("one\ntwo\n", encoding="utf-8")
    env = environment(mode)
    env.set_parallelism(1)
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(watched))
        .monitor_continuously(Duration.of_millis(50))
        .build()
    )
    with env.from_source(source).execute_and_collect() as results:
        got = [next(results), next(results)]
        staging = tmp_path / "staging.txt"
        staging.write_text("three\n", encoding="utf-8")
        os.replace(staging, watched / "second.txt")  # appear atomically
        got.append(next(results))
    assert got == ["one", "two", "three"]


@pytest.mark.timeout(60)
def test_memory_url_pipeline_with_checkpoints_commits_every_line_once():
    """memory:// is per process (the file this test writes exists only here), so this job runs its
    TaskManagers as threads of this process."""
    import uuid

    import fsspec

    root = f"memory:///fluvial-e2e-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    lines = [f"line-{i}" for i in range(3000)]
    with fsspec.open(f"{root}/in/data.txt", "wb") as handle:
        handle.write(("\n".join(lines) + "\n").encode())
    try:
        env = environment(ExecutionMode.THREADS)
        env.set_parallelism(2)
        env.enable_checkpointing(20)
        sink = (
            FileSink.for_row_format(f"{root}/out", Encoder.simple_string_encoder())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .build()
        )
        env.from_source(_source(f"{root}/in")).map(str.upper).sink_to(sink)
        env.execute("memory pipeline")
        names = [p.rsplit("/", 1)[-1] for p in fs.find(root.removeprefix("memory://") + "/out")]
        assert names and not [n for n in names if n.startswith(".")]
        read_back = environment(ExecutionMode.THREADS)
        read_back.set_parallelism(1)
        got = list(read_back.from_source(_source(f"{root}/out")).execute_and_collect())
        assert Counter(got) == Counter(line.upper() for line in lines)
    finally:
        fs.rm(root.removeprefix("memory://"), recursive=True)
