import os
import pickle
import re
from datetime import UTC, datetime
from pathlib import Path

import cloudpickle
import pytest

from fluvial.common.encoder import Encoder
from fluvial.common.errors import InvalidJobError, ResourceError
from fluvial.common.task_info import TaskInfo
from fluvial.common.time import ManualClock
from fluvial.datastream.connectors.file_system import (
    BasePathBucketAssigner,
    BucketAssigner,
    BucketAssignerContext,
    DateTimeBucketAssigner,
    FileSink,
    FileSinkWriter,
    OutputFileConfig,
    PendingFile,
    RollingPolicy,
)


def task(index: int = 0, parallelism: int = 1) -> TaskInfo:
    return TaskInfo("job", "Sink: File Sink", index, parallelism, 128)


def sink_at(base, policy=None, prefix="pre", suffix=".txt", assigner=None) -> FileSink:
    builder = FileSink.for_row_format(base, Encoder.simple_string_encoder())
    builder.with_bucket_assigner(assigner or BucketAssigner.base_path_bucket_assigner())
    if policy is not None:
        builder.with_rolling_policy(policy)
    config = OutputFileConfig.builder()
    if prefix is not None:
        config.with_part_prefix(prefix)
    return builder.with_output_file_config(config.with_part_suffix(suffix).build()).build()


def visible(base: Path) -> dict[str, str]:
    """Relative path -> contents of every file a reader would see."""
    out = {}
    for root, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for f in files:
            if not f.startswith((".", "_")):
                out[os.path.relpath(os.path.join(root, f), base)] = Path(root, f).read_text()
    return out


def hidden(base: Path) -> list[str]:
    return [f for _, _, files in os.walk(base) for f in files if f.startswith(".")]


def test_nothing_is_visible_before_commit(tmp_path):
    sink = sink_at(tmp_path)
    writer = sink.create_writer(task())
    writer.write_batch(["a", "b"])
    writer.flush(False)
    assert visible(tmp_path) == {}
    assert len(hidden(tmp_path)) == 1 and re.fullmatch(
        r"\.pre-0-0\.txt\.inprogress\.[0-9a-f-]{36}", hidden(tmp_path)[0]
    )
    committables = writer.prepare_commit()
    assert visible(tmp_path) == {}  # prepared is not committed
    sink.commit(committables)
    assert visible(tmp_path) == {"pre-0-0.txt": "a\nb\n"}
    assert hidden(tmp_path) == []


def test_each_checkpoint_commits_its_own_part_files(tmp_path):
    sink = sink_at(tmp_path)
    writer = sink.create_writer(task(index=2, parallelism=3))
    writer.write_batch([1, 2])
    writer.flush(False)
    first = writer.prepare_commit()
    writer.write_batch([3])
    writer.flush(False)
    second = writer.prepare_commit()
    sink.commit(first)
    assert visible(tmp_path) == {"pre-2-0.txt": "1\n2\n"}
    sink.commit(second)
    assert visible(tmp_path) == {"pre-2-0.txt": "1\n2\n", "pre-2-1.txt": "3\n"}


def test_commit_is_idempotent(tmp_path):
    sink = sink_at(tmp_path)
    writer = sink.create_writer(task())
    writer.write_batch(["x"])
    committables = pickle.loads(pickle.dumps(writer.prepare_commit()))  # as if read back from a checkpoint
    sink.commit(committables)
    sink.commit(committables)
    assert visible(tmp_path) == {"pre-0-0.txt": "x\n"}


def test_commit_of_a_lost_pending_file_is_a_clear_error(tmp_path):
    sink = sink_at(tmp_path)
    missing = PendingFile(str(tmp_path / ".gone.inprogress.1"), str(tmp_path / "gone"))
    with pytest.raises(ResourceError, match="pending file .* is gone"):
        sink.commit([missing])


def test_prepare_commit_without_writes_returns_nothing(tmp_path):
    writer = sink_at(tmp_path).create_writer(task())
    writer.write_batch([])
    assert writer.prepare_commit() == []
    assert os.listdir(tmp_path) == []


def test_end_of_input_sequence_makes_everything_visible(tmp_path):
    sink = sink_at(tmp_path)
    writer = sink.create_writer(task())
    for batch in (["a"], ["b", "c"], [("t", 1)]):
        writer.write_batch(batch)
    writer.flush(True)
    sink.commit(writer.prepare_commit())
    writer.close()
    assert visible(tmp_path) == {"pre-0-0.txt": "a\nb\nc\n('t', 1)\n"}


def test_rolling_by_size_cuts_parts_where_they_fill_up(tmp_path):
    sink = sink_at(tmp_path, RollingPolicy.default_rolling_policy(part_size=10))
    writer = sink.create_writer(task())
    records = [f"r{i:03}" for i in range(7)]  # 5 bytes each with the newline
    writer.write_batch(records[:3])  # one buffer crosses a part boundary
    writer.write_batch(records[3:])
    sink.commit(writer.prepare_commit())
    files = visible(tmp_path)
    assert files == {
        "pre-0-0.txt": "r000\nr001\n",
        "pre-0-1.txt": "r002\nr003\n",
        "pre-0-2.txt": "r004\nr005\n",
        "pre-0-3.txt": "r006\n",
    }


def test_a_record_larger_than_the_part_size_gets_a_part_of_its_own(tmp_path):
    sink = sink_at(tmp_path, RollingPolicy.default_rolling_policy(part_size=4))
    writer = sink.create_writer(task())
    writer.write_batch(["a", "long-record", "b"])
    sink.commit(writer.prepare_commit())
    assert visible(tmp_path) == {"pre-0-0.txt": "a\nlong-record\n", "pre-0-1.txt": "b\n"}


def test_rolled_parts_stay_hidden_until_their_checkpoint_commits(tmp_path):
    sink = sink_at(tmp_path, RollingPolicy.default_rolling_policy(part_size=2))
    writer = sink.create_writer(task())
    writer.write_batch(["1", "2", "3"])
    assert visible(tmp_path) == {}
    assert len(hidden(tmp_path)) == 3


def test_on_checkpoint_policy_rolls_only_at_prepare_commit(tmp_path):
    sink = sink_at(tmp_path, RollingPolicy.on_checkpoint_rolling_policy())
    clock = ManualClock(1_000_000)
    writer = FileSinkWriter(sink, task(), clock=clock)
    writer.write_batch(["x" * 1000] * 50)
    clock.advance(10**9)
    writer.write_batch(["y"])
    writer.flush(False)
    assert len(writer.prepare_commit()) == 1


def test_rolling_by_age_and_inactivity(tmp_path):
    policy = RollingPolicy.default_rolling_policy(rollover_interval=1000, inactivity_interval=300)
    sink = (
        FileSink.for_row_format(tmp_path, Encoder.simple_string_encoder())
        .with_bucket_assigner(BasePathBucketAssigner())
        .with_rolling_policy(policy)
        .with_output_file_config(OutputFileConfig("p"))
        .with_bucket_check_interval(100)
        .build()
    )
    clock = ManualClock(1_000_000)
    writer = FileSinkWriter(sink, task(), clock=clock)
    for step in range(6):  # active every 200 ms: only the 1000 ms rollover interval rolls
        writer.write_batch([step])
        clock.advance(200)
    writer.write_batch(["late"])
    clock.advance(400)
    writer.flush(False)  # idle for 400 ms > 300 ms: rolled without a write
    sink.commit(writer.prepare_commit())
    assert visible(tmp_path) == {"p-0-0": "0\n1\n2\n3\n4\n", "p-0-1": "5\nlate\n"}


def test_default_prefix_holds_a_writer_uuid(tmp_path):
    sink = sink_at(tmp_path, prefix=None, suffix="")
    assert sink.output_file_config.get_part_prefix() == "part"
    names = []
    for _ in range(2):
        writer = sink.create_writer(task(index=1, parallelism=2))
        writer.write_batch(["v"])
        [pending] = writer.prepare_commit()
        names.append(os.path.basename(pending.final_path))
    assert all(re.fullmatch(r"part-[0-9a-f-]{36}-1-0", n) for n in names)
    assert names[0] != names[1]  # two writers (or a restart) never clash


def test_restored_writer_continues_the_part_counter(tmp_path):
    sink = sink_at(tmp_path)
    writer = sink.create_writer(task())
    writer.write_batch(["a"])
    first = writer.prepare_commit()
    state = pickle.loads(pickle.dumps(writer.snapshot_state()))
    sink.commit(first)
    writer.close()
    restored = sink.create_writer(task(), state)
    restored.write_batch(["b"])
    sink.commit(restored.prepare_commit())
    assert visible(tmp_path) == {"pre-0-0.txt": "a\n", "pre-0-1.txt": "b\n"}


def test_a_fixed_prefix_never_overwrites_files_of_an_earlier_run(tmp_path):
    (tmp_path / "pre-0-0.txt").write_text("old\n")
    sink = sink_at(tmp_path)
    writer = sink.create_writer(task())
    writer.write_batch(["new"])
    sink.commit(writer.prepare_commit())
    assert visible(tmp_path) == {"pre-0-0.txt": "old\n", "pre-0-1.txt": "new\n"}


def test_date_time_buckets_use_the_processing_time(tmp_path):
    moment = datetime(2024, 5, 1, 13, 45, tzinfo=UTC)
    clock = ManualClock(int(moment.timestamp() * 1000))
    sink = sink_at(tmp_path, assigner=BucketAssigner.date_time_bucket_assigner(timezone_id="UTC"))
    writer = FileSinkWriter(sink, task(), clock=clock)
    writer.write_batch(["a"])
    clock.advance(3_600_000)
    writer.write_batch(["b"])
    sink.commit(writer.prepare_commit())
    assert visible(tmp_path) == {"2024-05-01--13/pre-0-0.txt": "a\n", "2024-05-01--14/pre-0-1.txt": "b\n"}


def test_date_time_pattern_with_quoted_literals():
    context_ms = int(datetime(2023, 12, 31, 23, 5, 9, tzinfo=UTC).timestamp() * 1000)
    assigner = DateTimeBucketAssigner("'dt='yyyyMMdd'/h='HH-mm-ss", "UTC")
    assert assigner.get_bucket_id(None, BucketAssignerContext(context_ms)) == "dt=20231231/h=23-05-09"
    with pytest.raises(InvalidJobError, match="not supported"):
        DateTimeBucketAssigner("yyyy-QQ")
    with pytest.raises(InvalidJobError, match="unknown time zone"):
        DateTimeBucketAssigner(timezone_id="Mars/Olympus")


class ByParity(BucketAssigner):
    def get_bucket_id(self, element, context):
        return "even" if element % 2 == 0 else "odd"


def test_a_custom_assigner_buckets_each_record(tmp_path):
    sink = sink_at(tmp_path, assigner=ByParity())
    writer = sink.create_writer(task())
    writer.write_batch([1, 2, 3, 4])
    sink.commit(writer.prepare_commit())
    files = visible(tmp_path)
    assert sorted(files.values()) == ["1\n3\n", "2\n4\n"]
    assert {os.path.dirname(p) for p in files} == {"even", "odd"}


def test_file_sink_is_plain_picklable_data(tmp_path):
    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder("UTF-8"))
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=1024))
        .build()
    )
    assert pickle.loads(pickle.dumps(sink)) == sink
    assert cloudpickle.loads(cloudpickle.dumps(sink)) == sink
    assert isinstance(sink.bucket_assigner, DateTimeBucketAssigner)  # Flink's default bucketing


def test_file_uri_base_path(tmp_path):
    sink = sink_at(tmp_path.as_uri())
    writer = sink.create_writer(task())
    writer.write_batch(["u"])
    sink.commit(writer.prepare_commit())
    assert visible(tmp_path) == {"pre-0-0.txt": "u\n"}


def test_base_path_that_cannot_be_created_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    sink = sink_at(blocker / "out")
    with pytest.raises(ResourceError, match="cannot create directory .*a-file/out"):
        sink.create_writer(task())


def test_bad_configuration_is_rejected_early():
    with pytest.raises(InvalidJobError, match="path separator"):
        OutputFileConfig("a/b")
    with pytest.raises(InvalidJobError, match="part_size must be positive"):
        RollingPolicy.default_rolling_policy(part_size=0)
    with pytest.raises(InvalidJobError, match="unknown charset"):
        Encoder.simple_string_encoder("klingon")


@pytest.mark.parametrize("prefix", ["pre", None])
def test_a_writer_without_state_removes_only_the_hidden_parts_of_its_own_earlier_attempts(tmp_path, prefix):
    """Contract 7: a restart before the first completed checkpoint has no state, yet the hidden parts its subtask's
    earlier attempts opened are removed; committed parts, other subtasks', other sinks' and other jobs' stay."""

    def info(job="job", subtask=0, operator="sink-op"):
        return TaskInfo(job, "Sink: File Sink", subtask, 2, 128, operator_id=operator)

    sink = sink_at(tmp_path, prefix=prefix)
    committed = sink.create_writer(info())
    committed.write_batch(["committed"])
    sink.commit(committed.prepare_commit())
    for who in (info(), info(subtask=1), info(job="other job"), info(operator="other sink")):
        writer = sink.create_writer(who)  # an attempt that failed before any checkpoint
        writer.write_batch([f"left by {who.job_id} {who.subtask_index} {who.operator_id}"])
        writer.flush(False)
    assert len(hidden(tmp_path)) == 4
    sink.create_writer(info(), [])  # restored, with no state of its own: contract 6 only, nothing of this kind
    assert len(hidden(tmp_path)) == 4
    restarted = sink.create_writer(info())  # the restarted attempt of subtask 0 of this sink in this job
    left = sorted(Path(tmp_path, name).read_text() for name in hidden(tmp_path))
    assert left == ["left by job 0 other sink\n", "left by job 1 sink-op\n", "left by other job 0 sink-op\n"]
    assert list(visible(tmp_path).values()) == ["committed\n"]
    restarted.write_batch(["again"])
    sink.commit(restarted.prepare_commit())
    assert sorted(visible(tmp_path).values()) == ["again\n", "committed\n"]
