"""Nothing a job used is left behind when it ends, in every execution mode: RocksDB working directories
(TaskManager processes end with os._exit, which skips atexit hooks), hidden in-progress part files of failed
attempts, and listeners."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from fluvial.common import Encoder, Types
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.datastream import MapFunction
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend
from fluvial.testing import environment, wait_until
from fluvial.testing.faults import completed_checkpoints
from fluvial.testing.oracle import committed_lines
from fluvial.testing.sequences import KeySequenceReader, KeySequenceSource

pytest.importorskip("rocksdict", reason="rocksdict is not installed: pip install rocksdict==0.3.29")

pytestmark = pytest.mark.timeout(60)


def test_rocksdb_working_directories_are_removed_when_the_job_ends(tmp_path, mode):
    root = tmp_path / "rocksdb"
    env = environment(mode)
    env.set_parallelism(2)
    backend = EmbeddedRocksDBStateBackend()
    backend.set_db_storage_paths(str(root))
    env.set_state_backend(backend)
    stream = (
        env.from_collection(list(range(100)), type_info=Types.INT())
        .key_by(lambda value: value % 5, key_type=Types.INT())
        .reduce(lambda a, b: a + b)
    )
    with stream.execute_and_collect() as results:
        assert len(list(results)) == 100
    assert root.is_dir(), "the job made no RocksDB working directory"
    wait_until(lambda: os.listdir(root) == [], timeout=20, what=f"the working directories under {root} to go")


GATE_SEQ = 100  # GatedSequences emits no record from here on before checkpoint 2 completed


@dataclass(frozen=True)
class GatedSequences(KeySequenceSource):
    """KeySequenceSource whose readers wait (emitting nothing, still checkpointing) before record GATE_SEQ of
    their keys until checkpoint 2 completed under `checkpoints`: however slowly checkpoints complete on a loaded
    machine, records are left for FailOnceAfterCheckpoints to fail on after them."""

    checkpoints: str = ""

    def create_reader(self, task_info):
        return GatedReader(self.records_per_second, self.checkpoints)


class GatedReader(KeySequenceReader):
    def __init__(self, records_per_second: int, checkpoints: str) -> None:
        super().__init__(records_per_second)
        self.checkpoints = Path(checkpoints)
        self.gate_open = False

    def poll(self, max_records):
        splits = self.snapshot_state()
        if not self.gate_open and splits:
            gate = GATE_SEQ * splits[0].key_count  # the split's index of its keys' record GATE_SEQ
            if splits[0].next < gate:
                max_records = min(max_records, gate - splits[0].next)  # up to the gate, not past it
            elif max(completed_checkpoints(self.checkpoints), default=0) < 2:
                return []
            else:
                self.gate_open = True
        return super().poll(max_records)


class FailOnceAfterCheckpoints(MapFunction):
    """Raises once in the first attempt, after checkpoints completed and the sink opened parts that no
    checkpoint will commit."""

    def __init__(self, checkpoints: str, out: str) -> None:
        self.checkpoints = checkpoints
        self.out = out

    def open(self, runtime_context):
        self.attempt = runtime_context.get_attempt_number()

    def map(self, record):
        key, seq = record
        if (
            self.attempt == 0
            and seq >= GATE_SEQ
            and max(completed_checkpoints(Path(self.checkpoints)), default=0) >= 2
            and any(name.startswith(".") for _, _, names in os.walk(self.out) for name in names)
        ):
            raise RuntimeError("the first attempt fails once")
        return f"{key}|{seq}"


def test_a_failed_attempts_hidden_part_files_are_removed_on_restore(tmp_path, mode):
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    env = environment(mode)
    env.set_parallelism(2)
    env.enable_checkpointing(30)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{checkpoints}"))
    _fails_once_then_writes_each_record_once_leaving_nothing_hidden(
        env,
        out,
        GatedSequences(4, 500, 1000, checkpoints=str(checkpoints)),
        FailOnceAfterCheckpoints(str(checkpoints), str(out)),
    )


def _fails_once_then_writes_each_record_once_leaving_nothing_hidden(env, out, source, fails_once) -> None:
    """Runs source → `fails_once` → a FileSink into `out` (rolling on checkpoints), restarting after the one
    failure: every record is committed once and no hidden part file is left."""
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 50))
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (env.from_source(source, source_name="sequences").map(fails_once, output_type=Types.STRING()).sink_to(sink))
    client = env.execute_async("fails once")
    client.get_job_execution_result().result(timeout=50)
    assert client._job_master.restarts == 1
    lines, hidden = committed_lines(out)
    assert sorted(lines) == sorted(f"{key}|{seq}" for key in range(source.keys) for seq in range(source.per_key))
    assert hidden == 0, [p.name for p in out.rglob(".*")]


class FailOnceBeforeAnyCheckpoint(MapFunction):
    """Raises once in the first attempt (the job has no checkpoints), once the sink has opened hidden parts."""

    def __init__(self, out: str) -> None:
        self.out = out

    def open(self, runtime_context):
        self.attempt = runtime_context.get_attempt_number()

    def map(self, record):
        key, seq = record
        if (
            self.attempt == 0
            and seq >= 100
            and any(name.startswith(".") for _, _, names in os.walk(self.out) for name in names)
        ):
            raise RuntimeError("the first attempt fails before its first checkpoint")
        return f"{key}|{seq}"


def test_hidden_part_files_of_an_attempt_that_failed_before_any_checkpoint_are_removed(tmp_path, mode):
    out = tmp_path / "out"
    env = environment(mode)
    env.set_parallelism(2)
    _fails_once_then_writes_each_record_once_leaving_nothing_hidden(  # no checkpoints: its restart has no state
        env, out, KeySequenceSource(4, 300, 2000), FailOnceBeforeAnyCheckpoint(str(out))
    )
