"""Where a Kafka source starts and stops reading each partition: PyFlink's `KafkaOffsetsInitializer` and
`KafkaOffsetResetStrategy`, and `KafkaTopicPartition`.

An initializer is a picklable description; the reader resolves it to concrete offsets when it first meets a
partition (`resolve`), so every checkpoint holds plain numbers and a restored job never asks the broker again.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from fluvial.common.errors import InvalidJobError, ResourceError

logger = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class KafkaTopicPartition:
    """One partition of one topic."""

    topic: str
    partition: int

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not self.topic:
            raise InvalidJobError(f"KafkaTopicPartition needs a topic name, got {self.topic!r}")
        if not isinstance(self.partition, int) or self.partition < 0:
            raise InvalidJobError(f"KafkaTopicPartition needs a partition number >= 0, got {self.partition!r}")

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class KafkaOffsetResetStrategy(enum.Enum):
    """What to do for a partition that has no committed (or given) offset."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2  # fail, naming the partition


class OffsetLookup(Protocol):
    """What an initializer asks the broker (the reader's consumer answers)."""

    def earliest(self, partitions: list[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]: ...

    def latest(self, partitions: list[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int]: ...

    def committed(self, partitions: list[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int | None]: ...

    def for_timestamp(
        self, partitions: list[KafkaTopicPartition], timestamp: int
    ) -> dict[KafkaTopicPartition, int | None]: ...


class _Kind(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    COMMITTED = "committed"
    TIMESTAMP = "timestamp"
    SPECIFIC = "specific"


@dataclass(frozen=True)
class KafkaOffsetsInitializer:
    """Starting (or stopping) offsets: earliest, latest, the group's committed offsets, the first record at or
    after a timestamp, or given offsets per partition."""

    kind: _Kind
    reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE
    timestamp_ms: int | None = None
    # not named `offsets`: the static method of that name (PyFlink's) would replace the field's default
    specific_offsets: tuple[tuple[KafkaTopicPartition, int], ...] = field(default=())

    def auto_offset_reset(self) -> str | None:
        """The consumer's `auto.offset.reset` for a start this initializer resolved but the broker no longer has
        (retention deleted it before the fetch): earliest() and given offsets go on from the log's start, as in
        Flink, where latest() and timestamp() go to its end; None keeps the client's default."""
        if self.kind in (_Kind.EARLIEST,):
            return "earliest"
        if self.kind in (_Kind.LATEST, _Kind.TIMESTAMP):
            return "latest"
        return {KafkaOffsetResetStrategy.EARLIEST: "earliest", KafkaOffsetResetStrategy.LATEST: "latest"}.get(
            self.reset_strategy
        )

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        """The consumer group's committed offsets; partitions without one follow `offset_reset_strategy`."""
        return KafkaOffsetsInitializer(_Kind.COMMITTED, _checked_strategy(offset_reset_strategy))

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """The first record whose timestamp is at or after `timestamp` (ms since the epoch); the end if none."""
        if not isinstance(timestamp, int) or timestamp < 0:
            raise InvalidJobError(
                f"KafkaOffsetsInitializer.timestamp needs milliseconds since the epoch >= 0, got {timestamp!r}"
            )
        return KafkaOffsetsInitializer(_Kind.TIMESTAMP, timestamp_ms=timestamp)

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer(_Kind.EARLIEST)

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer(_Kind.LATEST)

    @staticmethod
    def offsets(
        offsets: dict[KafkaTopicPartition, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        """Given offsets; a partition not in `offsets` follows `offset_reset_strategy`."""
        for tp, offset in offsets.items():
            if not isinstance(tp, KafkaTopicPartition) or not isinstance(offset, int) or offset < 0:
                raise InvalidJobError(
                    f"KafkaOffsetsInitializer.offsets takes {{KafkaTopicPartition: offset >= 0}}, "
                    f"got {tp!r}: {offset!r}"
                )
        return KafkaOffsetsInitializer(
            _Kind.SPECIFIC, _checked_strategy(offset_reset_strategy), specific_offsets=tuple(sorted(offsets.items()))
        )

    def needs_group_id(self) -> bool:
        return self.kind is _Kind.COMMITTED

    def resolve(self, partitions: list[KafkaTopicPartition], lookup: OffsetLookup) -> dict[KafkaTopicPartition, int]:
        """A concrete offset for every partition (asks the broker once per kind of question)."""
        if not partitions:
            return {}
        if self.kind is _Kind.EARLIEST:
            return lookup.earliest(partitions)
        if self.kind is _Kind.LATEST:
            return lookup.latest(partitions)
        if self.kind is _Kind.TIMESTAMP:
            found = lookup.for_timestamp(partitions, self.timestamp_ms)
            missing = [tp for tp in partitions if found.get(tp) is None]
            ends = lookup.latest(missing) if missing else {}
            if missing:  # Flink's behaviour; said, because records older than the log's retention are gone
                logger.info(
                    "Kafka partition(s) %s hold no record at or after timestamp %d (any older than the topic's "
                    "retention were deleted): reading them from their end",
                    ", ".join(map(str, missing)),
                    self.timestamp_ms,
                )
            return {tp: found[tp] if found.get(tp) is not None else ends[tp] for tp in partitions}
        if self.kind is _Kind.COMMITTED:
            found = lookup.committed(partitions)
        else:
            given = dict(self.specific_offsets)
            found = {tp: given.get(tp) for tp in partitions}
        missing = [tp for tp in partitions if found.get(tp) is None]
        if missing:
            found.update(self._reset(missing, lookup))
        return found  # type: ignore[return-value]

    def _reset(self, partitions: list[KafkaTopicPartition], lookup: OffsetLookup) -> dict[KafkaTopicPartition, int]:
        if self.reset_strategy is KafkaOffsetResetStrategy.EARLIEST:
            return lookup.earliest(partitions)
        if self.reset_strategy is KafkaOffsetResetStrategy.LATEST:
            return lookup.latest(partitions)
        names = ", ".join(map(str, partitions))
        what = "committed offset for the consumer group" if self.kind is _Kind.COMMITTED else "offset given"
        raise ResourceError(
            f"no {what} of partition(s) {names} and the offset reset strategy is NONE; start from "
            "KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST) (or LATEST), or give "
            "an offset for every partition"
        )


def _checked_strategy(strategy: Any) -> KafkaOffsetResetStrategy:
    if not isinstance(strategy, KafkaOffsetResetStrategy):
        raise InvalidJobError(f"expected a KafkaOffsetResetStrategy (EARLIEST, LATEST or NONE), got {strategy!r}")
    return strategy
