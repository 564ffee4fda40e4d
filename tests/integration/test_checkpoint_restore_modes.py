"""Restoring a job from a retained incremental RocksDB checkpoint of another run (issue 13, defects 3 and 8).

Every run keeps its checkpoints when cancelled (RETAIN_ON_CANCELLATION: a finished job's are deleted, as in
Flink). Run A counts records per key up to a pause in its source, takes checkpoints there and is cancelled: its latest
checkpoint refers to SST files in A's shared directory. Later runs start from that checkpoint
(`execution.savepoint.path`), play the rest of the script, and are cancelled once they took a checkpoint.

- NO_CLAIM (the default): the run never deletes what it did not create, so the same checkpoint restores a
  second time, after the first restored run took and subsumed checkpoints of its own.
- CLAIM: the run owns the checkpoint. Its first checkpoints build on A's SST files; once newer checkpoints
  subsume A's, A's checkpoint directory and the SST files nobody refers to any more are deleted, while the
  files the run's own latest checkpoint still uses stay: a run from that checkpoint restores.
- Either way, checkpoint ids go on from the restored checkpoint's id (defect 8): chk-<n> numbers never repeat,
  so the highest is the newest.
Oracle: each key's count after the last record equals the number of records of that key in the whole script —
what the restored state held plus what the restored run counted.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fluvial.checkpoint.storage import read_checkpoint_metadata
from fluvial.common import Configuration, Types
from fluvial.common.errors import FluvialError, JobCancelledException
from fluvial.datastream import KeyedProcessFunction, MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_config import ExternalizedCheckpointRetention
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend
from fluvial.testing import End, Pause, ScriptedSource, wait_until

pytestmark = pytest.mark.timeout(90)

BEFORE, TOTAL, KEYS = 300, 1500, 7


class SlowNoteFirst(MapFunction):
    """Touches `reached` once it has seen BEFORE records; sleeps a little per record so a run spans checkpoints."""

    def __init__(self, reached: str) -> None:
        self.reached = reached

    def open(self, runtime_context):
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.seen == BEFORE:
            open(self.reached, "a").close()
        time.sleep(0.0005)
        return value


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield (value % KEYS, count)


def environment(base: Path, restore: str | None = None, claim: str | None = None) -> StreamExecutionEnvironment:
    configuration = Configuration()
    if restore is not None:
        configuration.set_string("execution.savepoint.path", restore)
    if claim is not None:
        configuration.set_string("execution.state-recovery.claim-mode", claim)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.set_state_backend(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True))
    env.enable_checkpointing(40)
    env.get_checkpoint_config().set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    env.get_checkpoint_config().set_checkpoint_storage(
        FileSystemCheckpointStorage(f"file://{base}", file_state_size_threshold=0)
    )
    return env


def build(env: StreamExecutionEnvironment, script: list, reached: str):
    return (
        env.from_source(ScriptedSource(script), source_name="script")
        .uid("script")
        .map(SlowNoteFirst(reached))
        .uid("slow")
        .key_by(lambda v: v % KEYS)
        .process(CountPerKey())
        .uid("count")
    )


def checkpoint_of_a_paused_run(tmp_path: Path) -> tuple[str, int]:
    """Run A to the pause, let two more checkpoints complete, cancel it: (its latest checkpoint, that id)."""
    reached = tmp_path / "reached"
    script = list(range(BEFORE)) + [Pause(str(tmp_path / "never"))] + list(range(BEFORE, TOTAL)) + [End()]
    env = environment(tmp_path / "a")
    build(env, script, str(reached)).filter(lambda _: False).print()
    client = env.execute_async("run A")
    store = client._job_master.checkpointing.store
    wait_until(reached.exists, what="run A to reach its pause")
    first = store.latest().checkpoint_id if store.latest() else 0
    wait_until(
        lambda: store.latest() is not None and store.latest().checkpoint_id >= first + 2,
        what="two checkpoints of run A after its pause",
    )
    latest = store.latest()
    client.cancel()
    with pytest.raises(JobCancelledException):
        client.get_job_execution_result().result(timeout=30)
    assert latest.metadata.shared_handles(), "run A's checkpoint is not incremental: nothing to test"
    return latest.metadata_location, latest.checkpoint_id


def restored_run(
    tmp_path: Path, name: str, restore: str, claim: str | None = None, until: Any = None, to_end: bool = False
) -> tuple[list, Path]:
    """Run the script from `restore` through its last record, wait until it took a checkpoint (and `until()`
    holds), cancel it: (the (key, count) records, the run's checkpoint directory). `to_end`: let it finish
    instead (its checkpoints are deleted then)."""
    script = list(range(BEFORE)) + [Pause(str(tmp_path / "never"))] + list(range(BEFORE, TOTAL))
    script += [End() if to_end else Pause(str(tmp_path / f"{name}-never"))]
    base = tmp_path / name
    env = environment(base, restore, claim)
    with build(env, script, str(tmp_path / f"{name}-reached")).execute_and_collect() as results:
        if to_end:
            return list(results), base
        records = [next(results) for _ in range(TOTAL - BEFORE)]
        wait_until(lambda: checkpoint_ids(base) and (until is None or until()), what=f"a checkpoint of run {name}")
    return records, base


def assert_counts_complete(records: list) -> None:
    """The last count of each key is the number of its records in the whole script: nothing lost, nothing
    counted twice, whatever the restored state held."""
    expected = Counter(v % KEYS for v in range(TOTAL))
    final: dict[int, int] = {}
    for key, count in records:
        final[key] = max(final.get(key, 0), count)
    assert final == dict(expected)
    assert len(records) == TOTAL - BEFORE, "the restored run replayed records the checkpoint covered"


def checkpoint_ids(base: Path) -> list[int]:
    return sorted(
        int(m.group(1))
        for path in base.glob("*/chk-*/_metadata")
        if (m := re.fullmatch(r"chk-(\d+)", path.parent.name))
    )


def shared_files(location: str) -> list[Path]:
    return list((Path(location.removeprefix("file://")).parent / "shared").iterdir())


def test_no_claim_leaves_the_checkpoint_restorable_again_and_ids_go_on(tmp_path):
    location, restored_id = checkpoint_of_a_paused_run(tmp_path)
    shared_before = sorted(shared_files(location))
    (tmp_path / "never").touch()  # the restored runs play on past the pause

    first, first_base = restored_run(tmp_path, "b", location)
    assert_counts_complete(first)
    ids = checkpoint_ids(first_base)
    assert len(ids) >= 1 and min(ids) > restored_id, f"run B's checkpoint ids {ids} restart below {restored_id}"
    assert Path(location.removeprefix("file://"), "_metadata").exists(), "NO_CLAIM deleted the checkpoint"
    assert sorted(shared_files(location)) == shared_before, "NO_CLAIM deleted shared files it did not create"

    second, _ = restored_run(tmp_path, "c", location, to_end=True)  # the defect: this restore found its SST files gone
    assert_counts_complete(second)


def test_claim_takes_ownership_and_deletes_the_checkpoint_once_subsumed(tmp_path):
    location, restored_id = checkpoint_of_a_paused_run(tmp_path)
    shared_before = set(shared_files(location))
    (tmp_path / "never").touch()

    subsumed = lambda: not Path(location.removeprefix("file://")).exists()  # noqa: E731
    records, base = restored_run(tmp_path, "b", location, claim="CLAIM", until=subsumed)
    assert_counts_complete(records)
    ids = checkpoint_ids(base)
    assert ids and min(ids) > restored_id
    assert not Path(location.removeprefix("file://")).exists(), "the claimed checkpoint outlived its subsumption"
    latest = [path.parent for path in base.glob(f"*/chk-{ids[-1]}/_metadata")][0]
    referenced = {
        Path(handle.path.removeprefix("file://")) for handle in read_checkpoint_metadata(str(latest)).shared_handles()
    }
    assert set(shared_files(location)) == shared_before & referenced, (
        "the claimed checkpoint's SST files are not exactly those run B's latest checkpoint still refers to"
    )
    again = environment(tmp_path / "c", location)
    again.from_collection([1]).print()
    with pytest.raises(FluvialError, match="holds no savepoint"):
        again.execute()

    # what run B's latest checkpoint refers to survived the claimed checkpoint's deletion: it restores
    records, _ = restored_run(tmp_path, "d", str(latest), to_end=True)
    expected = Counter(v % KEYS for v in range(TOTAL))
    assert all(count <= expected[key] for key, count in records)
    assert {key: max(c for k, c in records if k == key) for key, _ in records} == {
        key: expected[key] for key, _ in records
    }


def test_an_unknown_claim_mode_is_rejected_naming_the_choices():
    from fluvial.common.errors import ConfigurationError

    configuration = Configuration().set_string("execution.state-recovery.claim-mode", "LEGACY")
    with pytest.raises(ConfigurationError, match="LEGACY is deprecated.*NO_CLAIM .*or CLAIM"):
        StreamExecutionEnvironment.get_execution_environment(configuration)
    configuration = Configuration().set_string("execution.state-recovery.claim-mode", "claimed")
    with pytest.raises(ConfigurationError, match="expected NO_CLAIM or CLAIM"):
        StreamExecutionEnvironment.get_execution_environment(configuration)
