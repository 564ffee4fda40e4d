"""The job of the Kafka fault trials (`fluvial.testing.kafka_faults`), run as `python -m
fluvial.testing.kafka_fault_job`: a bounded KafkaSource of `key:seq` records → a throttled map → a KafkaSink
with the given delivery guarantee, checkpointing every `--interval-ms`, TaskManagers as processes."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


class Throttle:
    """Passes records through at about `rate` per second per subtask, so a trial lasts long enough to be hit."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._count = 0
        self._start = 0.0

    def map(self, value: Any) -> Any:
        if not self._count:
            self._start = time.monotonic()
        self._count += 1
        ahead = self._count / self.rate - (time.monotonic() - self._start)
        if ahead > 0.01:
            time.sleep(ahead)
        return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fluvial.testing.kafka_fault_job")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--guarantee", choices=("EXACTLY_ONCE", "AT_LEAST_ONCE"), default="EXACTLY_ONCE")
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--interval-ms", type=int, default=200)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    from fluvial.common import Configuration, Types, WatermarkStrategy
    from fluvial.common.restart_strategy import RestartStrategies
    from fluvial.common.serialization import SimpleStringSchema
    from fluvial.datastream import StreamExecutionEnvironment
    from fluvial.datastream.checkpoint_storage import FileSystemCheckpointStorage
    from fluvial.datastream.connectors.kafka import (
        DeliveryGuarantee,
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )

    configuration = Configuration().set_string("local.taskmanager.mode", "process")
    configuration.set_string("task.cancellation.timeout", "10 s")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(args.parallelism)
    env.enable_checkpointing(args.interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{args.checkpoints}"))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1000, 100))
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(args.bootstrap)
        .set_topics(args.input)
        .set_group_id(f"{args.prefix}-group")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(args.output)
        .set_key_serialization_schema(_KeyOf())
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(args.bootstrap)
        .set_delivery_guarantee(DeliveryGuarantee[args.guarantee])
        .set_transactional_id_prefix(args.prefix)
        .set_record_serializer(serializer)
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "sequences")
        .uid("source")
        .map(Throttle(args.rate), output_type=Types.STRING())
        .uid("throttle")
        .sink_to(sink)
        .uid("sink")
    )
    try:
        env.execute("kafka fault trial")
    except Exception as error:  # noqa: BLE001 - reported to the driver through the exit code and stderr
        print(f"job failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


class _KeyOf:
    """The key of `key:seq` as the Kafka key, so each key keeps one output partition (and its order)."""

    def open(self, context: Any = None) -> None:
        pass

    def serialize(self, value: str) -> bytes:
        return value.partition(":")[0].encode()


if __name__ == "__main__":
    sys.exit(main())
