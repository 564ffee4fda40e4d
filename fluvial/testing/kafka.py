"""Test helpers over a real Kafka broker (shipped to users like the rest of `fluvial.testing`): make a topic,
write records into it, and read back what was committed, as a `read_committed` consumer sees it — the oracle
of the Kafka exactly-once tests and benchmarks."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_QUIET = {"log_level": 3}  # librdkafka's own errors only (a stopped test broker is not news)


def create_topic(bootstrap: str, partitions: int = 1, name: str | None = None, timeout: float = 30.0) -> str:
    """A new topic (a unique name unless given); returns its name once the broker has it."""
    from confluent_kafka.admin import AdminClient, NewTopic

    name = name or f"t-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=timeout).values():
        future.result(timeout)
    deadline = time.monotonic() + timeout
    while len(admin.list_topics(name, timeout=timeout).topics[name].partitions) < partitions:
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} did not get {partitions} partitions within {timeout} s")
        time.sleep(0.05)
    return name


def delete_topic(bootstrap: str, name: str, timeout: float = 30.0) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    for future in admin.delete_topics([name], operation_timeout=timeout).values():
        future.result(timeout)


def produce(
    bootstrap: str,
    topic: str,
    values: Iterable[str | bytes],
    partition: int | None = None,
    partitions: int | None = None,
    timestamps: Iterable[int] | None = None,
    keys: Iterable[str | bytes | None] | None = None,
) -> int:
    """Write `values` (round robin over `partitions` when given); returns how many, once all are acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **_QUIET})
    stamps = iter(timestamps) if timestamps is not None else None
    key_iter = iter(keys) if keys is not None else None
    count = 0
    for i, value in enumerate(values):
        kwargs = {}
        if partition is not None:
            kwargs["partition"] = partition
        elif partitions:
            kwargs["partition"] = i % partitions
        if stamps is not None:
            kwargs["timestamp"] = next(stamps)
        if key_iter is not None:
            kwargs["key"] = next(key_iter)
        while True:
            try:
                producer.produce(topic, value, **kwargs)
                break
            except BufferError:
                producer.poll(0.05)
        count += 1
    if producer.flush(30):
        raise TimeoutError(f"Kafka at {bootstrap} did not acknowledge every record written to {topic}")
    return count


def read_committed(
    bootstrap: str, topic: str, expected: int | None = None, timeout: float = 30.0, idle: float = 1.0
) -> list[str]:
    """Every committed record of `topic` (decoded as UTF-8), read from the start by a `read_committed`
    consumer: until `expected` records arrived (then `idle` seconds more, so extra ones would show), or until
    the end offsets are reached and nothing came for `idle` seconds."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            **_QUIET,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics[topic]
        consumer.assign([TopicPartition(topic, p, 0) for p in metadata.partitions])
        values: list[str] = []
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            batch = consumer.consume(1000, 0.2)
            got = [m.value().decode() for m in batch if m.error() is None]
            if got:
                values.extend(got)
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= idle and (expected is None or len(values) >= expected):
                break
        return values
    finally:
        consumer.close()


@dataclass(frozen=True, slots=True)
class SequenceReport:
    """Per-key sequences `key:seq` read back: what is missing, written twice, or out of order within a key."""

    expected: int
    read: int
    lost: int
    duplicated: int
    out_of_order: int

    @property
    def exactly_once(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.out_of_order == 0

    @property
    def at_least_once(self) -> bool:
        return self.lost == 0

    def __str__(self) -> str:
        return (
            f"{self.read} read for {self.expected} expected: {self.lost} lost, {self.duplicated} duplicated, "
            f"{self.out_of_order} out of order"
        )


def check_sequences(values: list[str], keys: int, per_key: int) -> SequenceReport:
    """Judge `key:seq` records against keys 0..keys-1 each with seq 0..per_key-1. Order is judged per key in the
    order records were read (one key always goes to one partition)."""
    counts = Counter(values)
    expected = {f"{k}:{s}" for k in range(keys) for s in range(per_key)}
    lost = len(expected - counts.keys())
    duplicated = sum(c - 1 for c in counts.values() if c > 1) + sum(c for v, c in counts.items() if v not in expected)
    last: dict[str, int] = {}
    out_of_order = 0
    for value in values:
        key, _, seq = value.partition(":")
        number = int(seq) if seq.isdigit() else -1
        if number <= last.get(key, -1):
            out_of_order += 1
        last[key] = max(number, last.get(key, -1))
    return SequenceReport(len(expected), len(values), lost, duplicated, out_of_order)
