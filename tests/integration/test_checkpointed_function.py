"""A user function's operator state (CheckpointedFunction): snapshotted with checkpoints and savepoints, and
restored — split among subtasks at another parallelism, union lists given whole to each."""

from __future__ import annotations

import os

import pytest

from fluvial.common import Configuration
from fluvial.datastream import MapFunction
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ListStateDescriptor
from fluvial.testing import environment, wait_until

PROGRESS_AT = 2_500  # records per subtask before it marks its progress


class CountingMap(MapFunction):
    """Counts the records it saw in operator list state; also keeps a union list of subtask markers. Each
    subtask creates `<progress>-<subtask>` once it has mapped PROGRESS_AT records (a file, seen from any
    process), so the test knows how far the first run got."""

    def __init__(self, progress: str | None = None) -> None:
        self.progress = progress

    def initialize_state(self, context):
        self.restored = context.is_restored()
        store = context.get_operator_state_store()
        self.counts = store.get_list_state(ListStateDescriptor("counts"))
        self.markers = store.get_union_list_state(ListStateDescriptor("markers"))
        self.seen = sum(self.counts.get())

    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()

    def snapshot_state(self, context):
        self.counts.update([self.seen])
        self.markers.update([f"subtask-{self.subtask}"])

    def map(self, value):
        self.seen += 1
        if self.seen == PROGRESS_AT and self.progress is not None:
            open(f"{self.progress}-{self.subtask}", "a").close()
        return (self.subtask, self.seen, self.restored, sorted(self.markers.get()))


@pytest.mark.timeout(60)
def test_operator_state_survives_a_savepoint_and_is_redistributed(tmp_path, mode):
    env = environment(mode)
    env.set_parallelism(2)
    env.enable_checkpointing(60_000)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{tmp_path}/chk")
    progress = str(tmp_path / "progress")
    env.from_source(NumberSequenceSource(1, 10_000_000), source_name="n").uid("n").map(CountingMap(progress)).uid(
        "counting"
    ).add_sink(lambda value: None)
    client = env.execute_async("first run")
    try:
        wait_until(
            lambda: all(os.path.exists(f"{progress}-{i}") for i in range(2)),
            what=f"both subtasks of the first run to map {PROGRESS_AT} records",
        )
        path = client.trigger_savepoint(str(tmp_path / "sp")).result(30)
    finally:
        client.cancel()

    configuration = Configuration().set_string("execution.savepoint.path", path)
    env2 = environment(mode, configuration)
    env2.set_parallelism(1)
    first = (
        env2.from_source(NumberSequenceSource(1, 10_000_000), source_name="n")
        .uid("n")
        .map(CountingMap())
        .uid("counting")
        .execute_and_collect(limit=1)[0]
    )
    subtask, count, restored, markers = first
    assert restored is True
    # at parallelism 1 the only subtask gets both old subtasks' counts, and the union list from both
    assert count >= 2 * PROGRESS_AT + 1  # both old counters (each past PROGRESS_AT before the savepoint), plus this
    assert markers == ["subtask-0", "subtask-1"]
