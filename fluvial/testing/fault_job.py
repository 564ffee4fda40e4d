"""The job a fault trial runs, in a process of its own so that a trial can kill it (`fluvial.testing.faults`).

    python -m fluvial.testing.fault_job --checkpoints DIR --out DIR --triggers DIR [--restore CHECKPOINT] ...

KeySequenceSource → FaultInjector (raises when the trial drops a trigger file) → key_by(key) →
SequenceVerifier → Pacer (`--pace-us` per record: a slow task whose input queues stay full, so unaligned
checkpoints carry in-flight data) → FileSink of `key|seq|verdict` lines. `--unaligned` turns unaligned
checkpoints on; with `--hold-until FILE` the source waits at its end until FILE exists. Checkpoints every `--interval-ms` to files under
`--checkpoints` (every state in a file, two retained); restarts without end (a fixed delay), as a production
job would. With `--restore` it starts from that checkpoint (`execution.savepoint.path`). It exits 0 once the
job finished, else 1 with the job's error on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from fluvial.datastream.functions import MapFunction

TRIGGER_PREFIX = "raise-"
CHECK_EVERY_S = 0.01


class InjectedFault(RuntimeError):
    """What FaultInjector raises: a failure of user code, injected."""


class FaultInjector(MapFunction):
    """Identity; raises InjectedFault once per trigger file `raise-<n>` that appears in `directory` (the first
    subtask to rename it away raises, so each trigger fails exactly one subtask once)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def open(self, runtime_context: Any) -> None:
        self._next_check = 0.0
        self._subtask = runtime_context.get_index_of_this_subtask()

    def map(self, value: Any) -> Any:
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + CHECK_EVERY_S
            self._maybe_raise()
        return value

    def _maybe_raise(self) -> None:
        for name in os.listdir(self.directory):
            if not name.startswith(TRIGGER_PREFIX):
                continue
            try:
                os.rename(
                    os.path.join(self.directory, name), os.path.join(self.directory, f"claimed-{name}-{self._subtask}")
                )
            except FileNotFoundError:
                continue  # another subtask claimed it
            raise InjectedFault(f"injected failure {name} in subtask {self._subtask}")


class Pacer(MapFunction):
    """Identity that spends `micros` per record (sleeping, as a slow database call would)."""

    def __init__(self, micros: int) -> None:
        self.seconds = micros / 1e6

    def map(self, value: Any) -> Any:
        time.sleep(self.seconds)
        return value


def build(env: Any, args: argparse.Namespace) -> None:
    from fluvial.common import Encoder
    from fluvial.datastream.connectors.file_system import BucketAssigner, FileSink, OutputFileConfig, RollingPolicy
    from fluvial.testing.sequences import KeySequenceSource, SequenceVerifier

    sink = (
        FileSink.for_row_format(args.out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .with_output_file_config(OutputFileConfig("part", ".txt"))
        .build()
    )
    verified = (
        env.from_source(KeySequenceSource(args.keys, args.per_key, args.rate, args.hold_until), source_name="sequences")
        .uid("sequences")
        .map(FaultInjector(args.triggers))
        .uid("faults")
        .key_by(lambda record: record[0])
        .process(SequenceVerifier())
        .uid("verifier")
    )
    if args.pace_us > 0:
        verified = verified.map(Pacer(args.pace_us)).uid("pacer")
    verified.sink_to(sink).uid("sink")


def environment(args: argparse.Namespace) -> Any:
    from fluvial.common import Configuration
    from fluvial.common.restart_strategy import RestartStrategies
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
    from fluvial.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend

    configuration = Configuration().set_string("task.cancellation.timeout", "10 s")
    configuration.set_string("local.taskmanager.mode", args.mode)
    if args.restore:
        configuration.set_string("execution.savepoint.path", args.restore)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(args.parallelism)
    env.set_state_backend(EmbeddedRocksDBStateBackend() if args.backend == "rocksdb" else HashMapStateBackend())
    env.enable_checkpointing(args.interval_ms)
    config = env.get_checkpoint_config()
    if args.unaligned:
        config.enable_unaligned_checkpoints()
    config.set_checkpoint_storage(
        FileSystemCheckpointStorage(f"file://{args.checkpoints}", file_state_size_threshold=0)
    )
    config.set_num_retained(2)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1_000_000, 50))
    return env


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fluvial.testing.fault_job")
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--triggers", required=True)
    parser.add_argument("--restore")
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--per-key", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=5000, help="records per second per source subtask")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--backend", choices=("hashmap", "rocksdb"), default="hashmap")
    parser.add_argument(
        "--mode",
        choices=("thread", "process", "auto"),
        default="thread",
        help="local.taskmanager.mode: TaskManagers as threads of this process or as processes",
    )
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--unaligned", action="store_true", help="unaligned checkpoints")
    parser.add_argument(
        "--hold-until", help="a file: the source waits at its end until it exists (the trial's faults are done)"
    )
    parser.add_argument("--pace-us", type=int, default=0, help="microseconds the verifying task spends per record")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse(sys.argv[1:] if argv is None else argv)
    env = environment(args)
    build(env, args)
    try:
        env.execute("fault trial")
    except Exception as error:  # noqa: BLE001 - reported to the trial through the exit code and stderr
        print(f"job failed: {type(error).__name__}: {error}", file=sys.stderr)
        cause = error.__cause__
        if cause is not None:
            print(f"cause: {type(cause).__name__}: {cause}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
