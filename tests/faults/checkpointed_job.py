"""A checkpointed job for the fault tests, run as its own process (`python checkpointed_job.py ...`) so a test
can SIGKILL it mid-run and run it again from a retained checkpoint.

    python checkpointed_job.py CHECKPOINT_DIR OUTPUT_DIR PARALLELISM N STATE_THRESHOLD BACKEND [RESTORE_PATH]

NumberSequenceSource(1..N) → map tagging n with (source subtask, n % KEYS), sleeping now and then → key_by →
per-key ValueState count → FileSink rows `subtask|residue|seq|count`. Each map subtask logs the first number it
sees to `OUTPUT_DIR.first-seen` (`.first-seen-restored` when restoring). Checkpoints every 50 ms to files under
CHECKPOINT_DIR (STATE_THRESHOLD: FileSystemCheckpointStorage's file_state_size_threshold), two retained;
keyed state in BACKEND (`hashmap` or `rocksdb`). With
RESTORE_PATH the job starts from that checkpoint (execution.savepoint.path). When the job finishes, the file
`OUTPUT_DIR.done` is written.
"""

from __future__ import annotations

import sys
import time

from fluvial.common import Configuration, Encoder, Types
from fluvial.datastream import KeyedProcessFunction, MapFunction, StreamExecutionEnvironment
from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ValueStateDescriptor
from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend

KEYS = 7


class Tag(MapFunction):
    """Logs the first number each subtask sees to `first_seen` (where a restored run resumed)."""

    def __init__(self, first_seen: str) -> None:
        self.first_seen = first_seen

    def open(self, runtime_context):
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.seen = 0

    def map(self, value):
        if self.seen == 0:
            with open(self.first_seen, "a") as log:
                log.write(f"{self.subtask} {value}\n")
        self.seen += 1
        if self.seen % 10 == 0:
            time.sleep(0.001)
        return (self.subtask, value % KEYS), value


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        (subtask, residue), seq = value
        yield f"{subtask}|{residue}|{seq}|{count}"


def main(
    checkpoint_dir: str,
    output_dir: str,
    parallelism: int,
    n: int,
    threshold: int,
    backend: str,
    restore_path: str | None = None,
) -> None:
    configuration = Configuration()
    if restore_path:
        configuration.set_string("execution.savepoint.path", restore_path)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    env.set_state_backend(EmbeddedRocksDBStateBackend() if backend == "rocksdb" else HashMapStateBackend())
    env.enable_checkpointing(50)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_dir, file_state_size_threshold=threshold))
    config.set_num_retained(2)
    sink = (
        FileSink.for_row_format(output_dir, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(NumberSequenceSource(1, n), source_name="numbers")
        .uid("numbers")
        .map(Tag(output_dir.rstrip("/") + (".first-seen-restored" if restore_path else ".first-seen")))
        .uid("tag")
        .key_by(lambda record: record[0])
        .process(CountPerKey())
        .uid("count")
        .sink_to(sink)
        .uid("sink")
    )
    env.execute("fault-test job")
    with open(output_dir.rstrip("/") + ".done", "w") as done:
        done.write("finished\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0], args[1], int(args[2]), int(args[3]), int(args[4]), args[5], args[6] if len(args) > 6 else None)
