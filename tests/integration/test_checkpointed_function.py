"""A user function's operator state (CheckpointedFunction): snapshotted with checkpoints and savepoints, and
restored — split among subtasks at another parallelism, union lists given whole to each."""

from __future__ import annotations

import time

import pytest

from fluvial.common import Configuration
from fluvial.datastream import MapFunction, StreamExecutionEnvironment
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ListStateDescriptor


class CountingMap(MapFunction):
    """Counts the records it saw in operator list state; also keeps a union list of subtask markers."""

    processed = 0  # across every subtask's copy (a class attribute): how far the first run got

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
        CountingMap.processed += 1
        return (self.subtask, self.seen, self.restored, sorted(self.markers.get()))


@pytest.mark.timeout(60)
def test_operator_state_survives_a_savepoint_and_is_redistributed(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(60_000)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{tmp_path}/chk")
    CountingMap.processed = 0
    env.from_source(NumberSequenceSource(1, 10_000_000), source_name="n").uid("n") \
        .map(CountingMap()).uid("counting").add_sink(lambda value: None)
    client = env.execute_async("first run")
    deadline = time.monotonic() + 30
    while CountingMap.processed < 5_000:
        assert time.monotonic() < deadline, "the first run never got going"
        time.sleep(0.01)
    path = client.trigger_savepoint(str(tmp_path / "sp")).result(30)
    client.cancel()

    configuration = Configuration().set_string("execution.savepoint.path", path)
    env2 = StreamExecutionEnvironment.get_execution_environment(configuration)
    env2.set_parallelism(1)
    first = env2.from_source(NumberSequenceSource(1, 10_000_000), source_name="n").uid("n") \
        .map(CountingMap()).uid("counting").execute_and_collect(limit=1)[0]
    subtask, count, restored, markers = first
    assert restored is True
    # at parallelism 1 the only subtask gets both old subtasks' counts, and the union list from both
    assert count >= 5_001  # both old counters (>= the 5,000 records mapped before the savepoint) plus this record
    assert markers == ["subtask-0", "subtask-1"]
