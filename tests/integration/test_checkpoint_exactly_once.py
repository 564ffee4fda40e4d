"""The exactly-once oracle over a real failure and restore (DESIGN 2.3).

Job: NumberSequenceSource(1..N) → a map that tags each number with a key and raises once, on the first
attempt only, after this subtask has seen at least two checkpoints complete → key_by → a KeyedProcessFunction
that counts per key in a ValueState and emits (key, seq, count) → a row-format FileSink (two-phase: parts
stay hidden until the checkpoint that covers them completes).

The key includes the index of the source subtask that produced the number, so the records of one key travel
one forward path and one hash channel: their order is the order the source emitted them in, ascending. Hence
the oracle, over the committed (visible) part files only:
- every number 1..N appears exactly once (nothing lost to the failure, nothing replayed into the output);
- within a key, ordered by seq, the counts are 1, 2, 3, ...: the restored ValueState counted every record
  exactly once (a state that re-counted replayed records, or lost some, breaks the run).
AT_LEAST_ONCE forwards without alignment, so there only "nothing lost" holds.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict

import pytest

from fluvial.common import Encoder, Types
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import KeyedProcessFunction, MapFunction
from fluvial.datastream.checkpoint_config import CheckpointingMode
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
from fluvial.testing import ExecutionMode, environment
from tests.integration.layouts import PARALLELISM_AND_MODE

N = 24_000
KEYS = 7
# One millisecond of sleep per this many records: before the failure, ~100 ms per source batch of 1024, so the
# two checkpoints it waits for complete long before a subtask runs out of numbers (~1.2 s of them at parallelism
# 2); after it, ~10 ms per batch, so checkpoints still complete mid-stream in the restored attempt.
SLEEP_EVERY_BEFORE_FAILURE = 10
SLEEP_EVERY_AFTER_FAILURE = 100
# Past this many records without the failure (a busy machine completes checkpoints slowly), the first attempt
# sleeps on every record, so the subtask waits for its checkpoints instead of running out of numbers first.
PATIENT_AFTER = 4_000


class TagAndFailOnce(MapFunction):
    """n → (key, n). Sleeps now and then so checkpoints complete mid-stream. On the first attempt, once this
    subtask has heard of `fail_after` completed checkpoints, one subtask raises (the marker file is created
    atomically, so exactly one failure happens over all attempts). A later attempt logs the first number it
    sees, which shows it resumed from a checkpoint rather than from the start."""

    def __init__(self, marker: str, first_seen_log: str, fail_after: int = 2) -> None:
        self.marker = marker
        self.first_seen_log = first_seen_log
        self.fail_after = fail_after

    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.completed = 0
        self.seen = 0
        self.after_failure = os.path.exists(self.marker)

    def notify_checkpoint_complete(self, checkpoint_id):
        self.completed += 1

    def map(self, value):
        if self.seen == 0 and self.after_failure:
            with open(self.first_seen_log, "a") as log:
                log.write(f"{self.subtask} {value}\n")
        self.seen += 1
        if self.seen % (SLEEP_EVERY_AFTER_FAILURE if self.after_failure else SLEEP_EVERY_BEFORE_FAILURE) == 0:
            time.sleep(0.001)
        elif not self.after_failure and self.seen > PATIENT_AFTER:
            time.sleep(0.005)
        if not self.after_failure and self.completed >= self.fail_after:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                self.after_failure = True
            else:
                os.write(fd, f"{self.completed}".encode())
                os.close(fd)
                raise RuntimeError(f"injected failure at {value} after {self.completed} checkpoints")
        return (self.subtask, value % KEYS), value


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        (subtask, residue), seq = value
        yield f"{subtask}|{residue}|{seq}|{count}"


def committed_lines(base) -> tuple[list[str], list[str]]:
    """(lines of every visible part file, paths of hidden files)."""
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


def parse(lines: list[str]) -> list[tuple[tuple[int, int], int, int]]:
    records = []
    for line in lines:
        subtask, residue, seq, count = (int(part) for part in line.split("|"))
        records.append(((subtask, residue), seq, count))
    return records


def assert_exactly_once(records, n: int) -> None:
    seqs = sorted(seq for _, seq, _ in records)
    missing = sorted(set(range(1, n + 1)) - set(seqs))
    assert not missing, f"{len(missing)} records lost, first {missing[:10]}"
    duplicates = [s for i, s in enumerate(seqs) if i and seqs[i - 1] == s]
    assert not duplicates, f"{len(duplicates)} records duplicated, first {duplicates[:10]}"
    assert len(seqs) == n
    by_key: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for key, seq, count in records:
        assert seq % KEYS == key[1], f"record {seq} arrived under key {key}"
        by_key[key].append((seq, count))
    for key, items in by_key.items():
        items.sort()
        counts = [count for _, count in items]
        wrong = [(seq, count, position) for position, (seq, count) in enumerate(items, 1) if count != position]
        assert not wrong, f"key {key}: the state did not count each record once; (seq, count, expected) {wrong[:5]}"
        assert counts == list(range(1, len(items) + 1))


def storage_for(kind: str, tmp_path):
    if kind == "jobmanager":
        return JobManagerCheckpointStorage()
    return FileSystemCheckpointStorage(f"file://{tmp_path / 'checkpoints'}")


def run_oracle_job(
    tmp_path, *, execution: ExecutionMode, parallelism: int, storage: str, checkpointing: CheckpointingMode, backend
) -> dict:
    out = tmp_path / "out"
    marker = tmp_path / "failed-once"
    first_seen = tmp_path / "first-seen-after-restore"
    env = environment(execution)
    env.set_parallelism(parallelism)
    env.enable_checkpointing(60, checkpointing)
    env.get_checkpoint_config().set_checkpoint_storage(storage_for(storage, tmp_path))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 50))
    env.set_state_backend(backend)
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(NumberSequenceSource(1, N), source_name="numbers")
        .uid("numbers")
        .map(TagAndFailOnce(str(marker), str(first_seen)))
        .uid("tag")
        .key_by(lambda record: record[0])
        .process(CountPerKey())
        .uid("count")
        .sink_to(sink)
        .uid("sink")
    )
    client = env.execute_async("exactly-once oracle")
    client.get_job_execution_result().result(timeout=90)
    lines, hidden = committed_lines(out)
    return {
        "records": parse(lines),
        "hidden": hidden,
        "failed_after": int(marker.read_text()) if marker.exists() else None,
        "first_seen": [tuple(map(int, line.split())) for line in first_seen.read_text().splitlines()]
        if first_seen.exists()
        else [],
        "restarts": client._job_master.restarts,
    }


def assert_failed_once_and_resumed(result: dict, parallelism: int) -> None:
    assert result["failed_after"] is not None and result["failed_after"] >= 2, "the injected failure never ran"
    assert result["restarts"] == 1
    # the restored attempt did not start from the beginning: some subtask resumed past its split's first number
    starts = {i: NumberSequenceSource(1, N).create_splits(parallelism)[i].current for i in range(parallelism)}
    assert result["first_seen"], "the restarted attempt saw no record"
    assert any(value > starts[subtask] for subtask, value in result["first_seen"]), (
        f"every subtask restarted at its first number {result['first_seen']}: no checkpoint was restored"
    )


BACKENDS = [
    pytest.param(HashMapStateBackend, id="hashmap"),
    pytest.param(EmbeddedRocksDBStateBackend, id="rocksdb"),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("storage", ["jobmanager", "filesystem"])
@pytest.mark.parametrize("parallelism, mode", PARALLELISM_AND_MODE)
def test_failure_and_restore_keep_output_and_state_exactly_once(tmp_path, parallelism, mode, storage, backend):
    result = run_oracle_job(
        tmp_path,
        execution=mode,
        parallelism=parallelism,
        storage=storage,
        checkpointing=CheckpointingMode.EXACTLY_ONCE,
        backend=backend(),
    )
    assert_failed_once_and_resumed(result, parallelism)
    assert_exactly_once(result["records"], N)
    if storage == "filesystem":
        job_dirs = list((tmp_path / "checkpoints").iterdir())
        assert len(job_dirs) == 1
        # the restore above read a checkpoint; the finished job's are deleted, as in Flink
        assert not any((d / "_metadata").exists() for d in job_dirs[0].glob("chk-*")), "a finished job kept one"


@pytest.mark.timeout(120)
def test_at_least_once_loses_nothing(tmp_path, mode):
    result = run_oracle_job(
        tmp_path,
        execution=mode,
        parallelism=2,
        storage="filesystem",
        checkpointing=CheckpointingMode.AT_LEAST_ONCE,
        backend=HashMapStateBackend(),
    )
    assert_failed_once_and_resumed(result, 2)
    seqs = {seq for _, seq, _ in result["records"]}
    assert seqs == set(range(1, N + 1))
    assert len(result["records"]) >= N
