"""What the Kafka source and sink share about the client (confluent-kafka, over librdkafka): turning Flink's
Java-style properties into librdkafka's, sending librdkafka's log lines to Python logging, asking the broker
for offsets, and errors that name the address, topic or partition involved."""

from __future__ import annotations

import logging
import time
from typing import Any

from fluvial.common.errors import InvalidJobError, ResourceError
from fluvial.datastream.connectors.kafka.offsets import KafkaTopicPartition

logger = logging.getLogger("fluvial.kafka.client")

# Properties of Flink's connector that are ours, not the client's (each is read where it applies).
CONNECTOR_KEYS = frozenset(
    {
        "partition.discovery.interval.ms",
        "commit.offsets.on.checkpoint",
        "client.id.prefix",
        "register.consumer.metrics",
        "default.api.timeout.ms",
        "flink.partition-discovery.interval-millis",
    }
)
# Java client settings that have no meaning here: the connector hands the client bytes, as Flink's does.
JAVA_ONLY_KEYS = frozenset({"key.deserializer", "value.deserializer", "key.serializer", "value.serializer"})
DEFAULT_API_TIMEOUT_MS = 60_000
OFFSET_NONE = -1  # offsets_for_times: no record at or after the timestamp (librdkafka's OFFSET_END)
RETRY_PAUSE_S = 0.1  # between questions to a broker that answered a partition with an error


class KafkaConnectorError(ResourceError):
    """Kafka refused or could not be reached; the message names what and where."""


def client_config(properties: dict[str, str], **ours: Any) -> dict[str, Any]:
    """librdkafka's configuration: the user's properties less the connector's own keys, plus `ours` (which win),
    and a logger so librdkafka's lines go to Python logging rather than stderr."""
    config = {k: v for k, v in properties.items() if k not in CONNECTOR_KEYS and k not in JAVA_ONLY_KEYS}
    config.update(ours)
    config["logger"] = logger
    return config


def api_timeout_s(properties: dict[str, str]) -> float:
    value = properties.get("default.api.timeout.ms", DEFAULT_API_TIMEOUT_MS)
    try:
        return int(value) / 1000
    except ValueError:
        raise InvalidJobError(f"default.api.timeout.ms must be milliseconds, got {value!r}") from None


def make_client(kind: Any, config: dict[str, Any], role: str) -> Any:
    """A confluent-kafka Consumer or Producer; a misspelt or unknown property is named in the error."""
    from confluent_kafka import KafkaException

    try:
        return kind(config)
    except (KafkaException, ValueError, TypeError) as error:
        raise InvalidJobError(
            f"the Kafka {role} refused its properties: {error}; check the keys given to set_property/set_properties "
            "(librdkafka's names; see docs/connectors/kafka.md)"
        ) from None


def unreachable(bootstrap: str, what: str, error: Any, timeout_s: float) -> KafkaConnectorError:
    return KafkaConnectorError(
        f"Kafka at {bootstrap} did not answer {what} within {timeout_s:g} s ({error}); check that the broker runs "
        "and that bootstrap.servers names it (default.api.timeout.ms sets how long to wait)"
    )


class ConsumerOffsets:
    """The broker's answers about offsets, through a consumer (the OffsetLookup of `offsets.py`)."""

    def __init__(self, consumer: Any, bootstrap: str, timeout_s: float) -> None:
        self._consumer = consumer
        self._bootstrap = bootstrap
        self._timeout = timeout_s

    def _watermarks(self, tp: KafkaTopicPartition) -> tuple[int, int]:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            return self._consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=self._timeout)
        except KafkaException as error:
            raise unreachable(self._bootstrap, f"the offsets of {tp}", error, self._timeout) from None

    def earliest(self, partitions: list[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        return {tp: self._watermarks(tp)[0] for tp in partitions}

    def latest(self, partitions: list[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]:
        return {tp: self._watermarks(tp)[1] for tp in partitions}

    def committed(self, partitions: list[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int | None]:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            found = self._consumer.committed(
                [TopicPartition(tp.topic, tp.partition) for tp in partitions], timeout=self._timeout
            )
        except KafkaException as error:
            raise unreachable(self._bootstrap, "the group's committed offsets", error, self._timeout) from None
        return {KafkaTopicPartition(t.topic, t.partition): (t.offset if t.offset >= 0 else None) for t in found}

    def for_timestamp(
        self, partitions: list[KafkaTopicPartition], timestamp: int
    ) -> dict[KafkaTopicPartition, int | None]:
        """The offset of the first record at or after `timestamp` per partition; None where there is none (the
        offset -1). A partition the broker answered with an error (a leader moving, a request timing out on a
        slow broker) is asked again until the timeout, and then is an error: never taken for "no record", which
        would make a bounded read silently read nothing."""
        from confluent_kafka import KafkaException, TopicPartition

        deadline = time.monotonic() + self._timeout
        found: dict[KafkaTopicPartition, int | None] = {}
        pending = list(partitions)
        while True:
            try:
                answers = self._consumer.offsets_for_times(
                    [TopicPartition(tp.topic, tp.partition, timestamp) for tp in pending],
                    timeout=max(0.1, deadline - time.monotonic()),
                )
            except KafkaException as error:
                raise unreachable(self._bootstrap, "offsets for a timestamp", error, self._timeout) from None
            failed = []
            for answer in answers:
                tp = KafkaTopicPartition(answer.topic, answer.partition)
                if answer.error is None and answer.offset >= OFFSET_NONE:
                    found[tp] = answer.offset if answer.offset >= 0 else None
                else:
                    failed.append((tp, answer.error or f"offset {answer.offset}"))
            failed += [(tp, "no answer") for tp in pending if tp not in found and all(tp != f for f, _ in failed)]
            if not failed:
                return found
            if time.monotonic() >= deadline:
                what = ", ".join(f"{tp}: {error}" for tp, error in failed)
                raise unreachable(self._bootstrap, f"offsets for timestamp {timestamp}", what, self._timeout)
            logger.info(
                "Kafka at %s: no offset for timestamp %d yet (%s); asking again", self._bootstrap, timestamp, failed
            )
            pending = [tp for tp, _ in failed]
            time.sleep(RETRY_PAUSE_S)
