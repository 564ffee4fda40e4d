"""`KafkaSource`: Kafka partitions as splits of the Source contract (`connectors/source.py`).

How Flink's shape maps onto the contract:
- Planning gives each subtask one `KafkaDiscoverySplit` (index i of n) and no broker is asked then. The reader
  holding discovery split i lists the subscribed partitions (topics, a pattern, or given partitions) and owns
  those that Flink's owner rule gives to i of n; it turns each into a `KafkaPartitionSplit` with a concrete
  starting offset (the builder's initializer on the first discovery, the earliest offset for partitions found
  later, as Flink does). Unbounded sources look again every `partition.discovery.interval.ms` (default 5 min;
  0 or less turns it off).
- A partition split's `offset` is the next offset to read, so a checkpoint holds plain numbers and a restored
  reader seeks exactly there (nothing twice, nothing skipped); the discovery split carries the partitions it
  handed out, so a restored job neither re-reads nor misses a partition. At another parallelism the splits are
  dealt round robin like any operator list state; each discovery split keeps its (i, n), so ownership of new
  partitions never changes.
- Each `poll` returns records of one partition (`current_split_id`), with Kafka's record timestamps
  (`current_timestamps`), so watermarks are generated per partition and an idle partition can be marked idle.
- When a checkpoint completes its offsets are committed to the consumer group (for monitoring, as in Flink;
  `commit.offsets.on.checkpoint=false` turns it off). Offsets in Kafka are never read back on restore.
- Bounded (`set_bounded`): stopping offsets are resolved when a partition is first met; the job ends when every
  partition reached its stopping offset.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.kafka.client import (
    ConsumerOffsets,
    KafkaConnectorError,
    api_timeout_s,
    client_config,
    make_client,
    unreachable,
)
from fluvial.datastream.connectors.kafka.offsets import KafkaOffsetsInitializer, KafkaTopicPartition
from fluvial.datastream.connectors.kafka.serialization import (
    KafkaRecord,
    KafkaRecordDeserializationSchema,
    ValueOnlyDeserializer,
)
from fluvial.datastream.connectors.source import Boundedness, Source, SourceReader

if TYPE_CHECKING:
    from fluvial.datastream.connectors.kafka.builders import KafkaSourceBuilder

logger = logging.getLogger(__name__)

DEFAULT_DISCOVERY_INTERVAL_MS = 300_000


class KafkaDeserializationError(KafkaConnectorError):
    """A record could not be deserialized; the message names its topic, partition and offset."""


@dataclass(frozen=True, slots=True)
class KafkaPartitionSplit:
    """One partition; `offset` is the next offset to read; `stopping_offset` (exclusive) ends it when bounded."""

    split_id: str
    topic: str
    partition: int
    offset: int
    stopping_offset: int | None = None

    @property
    def topic_partition(self) -> KafkaTopicPartition:
        return KafkaTopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class KafkaDiscoverySplit:
    """The duty to find partitions owned by `index` of `count`; `known` holds those already handed out and
    `started` says the first discovery is done (partitions found later start at the earliest offset)."""

    split_id: str
    index: int
    count: int
    known: frozenset = frozenset()
    started: bool = False


def split_owner(tp: KafkaTopicPartition, count: int) -> int:
    """Which of `count` discovery splits owns a partition: Flink's rule (a topic's partitions go round robin
    from a start that depends on the topic), with a hash that is the same in every process."""
    start = ((zlib.crc32(tp.topic.encode()) * 31) & 0x7FFFFFFF) % count
    return (start + tp.partition) % count


@dataclass(frozen=True)
class KafkaSubscriber:
    """What to read: named topics, topics matching a pattern, or given partitions (exactly one is set)."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[KafkaTopicPartition, ...] = ()

    def describe(self) -> str:
        if self.topics:
            return f"topics {', '.join(self.topics)}"
        if self.pattern is not None:
            return f"topics matching {self.pattern!r}"
        return f"partitions {', '.join(map(str, self.partitions))}"

    def select(self, metadata: Any, bootstrap: str) -> list[KafkaTopicPartition]:
        """The partitions to read, from a confluent-kafka ClusterMetadata; a named topic that does not exist is
        an error naming it."""
        topics = metadata.topics
        if self.partitions:
            missing = sorted({tp.topic for tp in self.partitions if tp.topic not in topics})
            if missing:
                raise KafkaConnectorError(
                    f"topic(s) {', '.join(missing)} do not exist on Kafka at {bootstrap}; "
                    "create them or fix set_partitions"
                )
            return sorted(self.partitions)
        if self.topics:
            missing = [t for t in self.topics if t not in topics or topics[t].error is not None]
            if missing:
                raise KafkaConnectorError(
                    f"topic(s) {', '.join(missing)} do not exist on Kafka at {bootstrap}; create them or fix set_topics"
                )
            names = list(self.topics)
        else:
            regex = re.compile(self.pattern or "")
            names = sorted(
                t for t in topics if not t.startswith("__") and regex.fullmatch(t) and topics[t].error is None
            )
        return [KafkaTopicPartition(name, p) for name in names for p in sorted(topics[name].partitions)]


@dataclass
class KafkaSource(Source[Any]):
    """PyFlink's KafkaSource; build it with `KafkaSource.builder()`."""

    bootstrap_servers: str
    subscriber: KafkaSubscriber
    deserializer: KafkaRecordDeserializationSchema
    starting_offsets: KafkaOffsetsInitializer
    stopping_offsets: KafkaOffsetsInitializer | None = None
    bounded: bool = False
    group_id: str | None = None
    client_id_prefix: str | None = None
    properties: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        from fluvial.datastream.connectors.kafka.builders import KafkaSourceBuilder

        return KafkaSourceBuilder()

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED if self.bounded else Boundedness.CONTINUOUS_UNBOUNDED

    def create_splits(self, parallelism: int) -> list[Any]:
        if parallelism < 1:
            raise InvalidJobError(f"cannot split a Kafka source for parallelism {parallelism}; use 1 or more")
        return [KafkaDiscoverySplit(f"discovery-{i}-of-{parallelism}", i, parallelism) for i in range(parallelism)]

    def create_reader(self, task_info: TaskInfo) -> KafkaSourceReader:
        return KafkaSourceReader(self, task_info)

    def default_name(self) -> str:
        return "Kafka Source"

    def get_produced_type(self) -> Any:
        return self.deserializer.get_produced_type()

    def discovery_interval_s(self) -> float | None:
        """Seconds between partition discoveries; None when partitions are discovered once."""
        if self.bounded or self.stopping_offsets is not None or self.subscriber.partitions:
            return None
        raw = self.properties.get("partition.discovery.interval.ms", DEFAULT_DISCOVERY_INTERVAL_MS)
        try:
            interval = int(raw)
        except ValueError:
            raise InvalidJobError(f"partition.discovery.interval.ms must be milliseconds, got {raw!r}") from None
        return interval / 1000 if interval > 0 else None

    def commits_offsets(self) -> bool:
        return (
            self.group_id is not None
            and str(self.properties.get("commit.offsets.on.checkpoint", "true")).lower() == "true"
        )


class KafkaSourceReader(SourceReader[Any]):
    """Reads the partitions of its splits with one consumer; `poll` never blocks (it takes what the client has
    fetched). Keeps per partition the next offset to read, which is what its checkpoint records."""

    interleaves_splits = True  # records of its splits interleave: watermarks stay per split (source_watermarks)

    def __init__(self, source: KafkaSource, task_info: TaskInfo) -> None:
        self._source = source
        self._info = task_info
        self._timeout = api_timeout_s(source.properties)
        self._interval = source.discovery_interval_s()
        self._consumer: Any = None
        self._lookup: ConsumerOffsets | None = None
        self._discovery: list[KafkaDiscoverySplit] = []
        self._splits: dict[tuple[str, int], KafkaPartitionSplit] = {}  # active partitions
        self._positions: dict[tuple[str, int], int] = {}
        self._next_stop_check = 0.0  # monotonic time of the next `_finish_passed_stops` question to the broker
        self._next_discovery = 0.0
        self._stash: list = []
        self._stash_at = 0
        self._split_id: str | None = None
        self._timestamps: list | None = None
        self._snapshots: dict[int, dict[tuple[str, int], int]] = {}
        self._committed: dict[tuple[str, int], int] = {}
        self._metered: set[tuple[str, int]] = set()
        deserializer = source.deserializer
        self._value_only = deserializer.value_function() if isinstance(deserializer, ValueOnlyDeserializer) else None
        self._of_message = deserializer.message_function()
        deserializer.open(None)

    # -- splits ------------------------------------------------------------------------------------------------

    def add_splits(self, splits: list[Any]) -> None:
        added = False
        for split in splits:
            if isinstance(split, KafkaDiscoverySplit):
                self._discovery.append(split)
            elif isinstance(split, KafkaPartitionSplit):
                self._track(split)
                added = True
            else:
                raise TypeError(f"KafkaSourceReader cannot read a {type(split).__name__}; splits got mixed up")
        if added:
            self._assign()

    def _track(self, split: KafkaPartitionSplit) -> None:
        if split.stopping_offset is not None and split.offset >= split.stopping_offset:
            return  # nothing left to read
        key = (split.topic, split.partition)
        self._splits[key] = split
        self._positions[key] = split.offset
        self._register_metrics(key)

    def _register_metrics(self, key: tuple[str, int]) -> None:
        """Flink's KafkaSourceReader metrics per partition: currentOffset (the last offset emitted),
        committedOffset (the last committed to the group), records-lag (records behind the partition's end)."""
        group = getattr(self._info, "metric_group", None)
        if group is None or key in self._metered:
            return
        self._metered.add(key)
        topic, partition = key
        partition_group = (
            group.add_group("KafkaSourceReader").add_group("topic", topic).add_group("partition", str(partition))
        )
        partition_group.gauge("currentOffset", lambda: self._positions.get(key, 0) - 1)
        partition_group.gauge("committedOffset", lambda: self._committed.get(key, -1))
        partition_group.gauge("records-lag", lambda: self._lag(key))

    def _lag(self, key: tuple[str, int]) -> int:
        position = self._positions.get(key)
        if position is None or self._consumer is None:
            return 0
        from confluent_kafka import TopicPartition

        try:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
        except Exception:  # the client has no fetch answer yet
            return -1
        return max(high - position, 0) if high >= 0 else -1

    def _client(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer

            source = self._source
            prefix = source.client_id_prefix or source.properties.get("client.id.prefix") or "fluvial-kafka-source"
            config = client_config(
                source.properties,
                **{
                    "bootstrap.servers": source.bootstrap_servers,
                    "group.id": source.group_id or f"fluvial-{uuid.uuid4().hex}",  # the client needs one to start
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "enable.partition.eof": False,
                    "client.id": f"{prefix}-{self._info.subtask_index}",
                },
            )
            config.setdefault("isolation.level", "read_committed")  # Flink's KafkaSource default
            reset = source.starting_offsets.auto_offset_reset()
            if reset is not None:
                config.setdefault("auto.offset.reset", reset)
            self._consumer = make_client(Consumer, config, "source's consumer")
            self._lookup = ConsumerOffsets(self._consumer, source.bootstrap_servers, self._timeout)
        return self._consumer

    def _assign(self) -> None:
        from confluent_kafka import TopicPartition

        self._stash, self._stash_at = [], 0  # positions are ours: anything fetched past them comes again
        self._client().assign([TopicPartition(t, p, self._positions[(t, p)]) for (t, p) in self._splits])

    # -- discovery ---------------------------------------------------------------------------------------------

    def _discovery_due(self) -> bool:
        if not self._discovery:
            return False
        if not all(d.started for d in self._discovery):
            return True
        return self._interval is not None and time.monotonic() >= self._next_discovery

    def _discover(self) -> None:
        from confluent_kafka import KafkaException

        source = self._source
        consumer = self._client()
        try:
            metadata = consumer.list_topics(timeout=self._timeout)
        except KafkaException as error:
            raise unreachable(source.bootstrap_servers, "a metadata request", error, self._timeout) from None
        candidates = source.subscriber.select(metadata, source.bootstrap_servers)
        added = False
        for i, discovery in enumerate(self._discovery):
            new = [
                tp
                for tp in candidates
                if (tp.topic, tp.partition) not in discovery.known
                and split_owner(tp, discovery.count) == discovery.index
            ]
            if new:
                starting = source.starting_offsets if not discovery.started else KafkaOffsetsInitializer.earliest()
                offsets = starting.resolve(new, self._lookup)
                stops = source.stopping_offsets.resolve(new, self._lookup) if source.stopping_offsets else {}
                for tp in new:
                    self._track(KafkaPartitionSplit(str(tp), tp.topic, tp.partition, offsets[tp], stops.get(tp)))
                logger.info("%s: reading %s", self._info.task_name_with_subtasks, ", ".join(map(str, new)))
                added = True
            self._discovery[i] = replace(
                discovery, started=True, known=discovery.known | {(tp.topic, tp.partition) for tp in new}
            )
        if added:
            self._assign()
        if self._interval is not None:
            self._next_discovery = time.monotonic() + self._interval

    # -- reading -----------------------------------------------------------------------------------------------

    def poll(self, max_records: int) -> Sequence | None:
        if self._discovery_due():
            self._discover()
        if not self._splits:
            if self._source.bounded and all(d.started for d in self._discovery):
                return None
            return []
        messages, start = self._stash, self._stash_at
        if start >= len(messages):
            messages, start = self._client().consume(max_records, 0), 0
            if not messages:
                self._finish_passed_stops()
                return []
        return self._take_run(messages, start)

    def _take_run(self, messages: list, start: int) -> list:
        """The records of the partition of `messages[start]` that follow it without another partition between;
        the rest waits for the next poll."""
        first = messages[start]
        if first.error() is not None:
            self._stash, self._stash_at = messages, start + 1
            self._on_error(first)
            return []
        topic, partition = first.topic(), first.partition()
        key = (topic, partition)
        split = self._splits.get(key)
        stop = None if split is None else split.stopping_offset
        raw: list = []
        stamps: list = []
        end = len(messages)
        index = start
        if split is None:  # fetched before the partition finished or was reassigned: skip it
            while index < end and messages[index].partition() == partition and messages[index].topic() == topic:
                index += 1
            self._stash, self._stash_at = messages, index
            return []
        while index < end:
            message = messages[index]
            if message.partition() != partition or message.topic() != topic or message.error() is not None:
                break
            if stop is not None and message.offset() >= stop:
                break
            raw.append(message.value())
            stamps.append(message.timestamp()[1])
            index += 1
        next_offset = messages[index - 1].offset() + 1 if index > start else self._positions[key]
        self._stash, self._stash_at = messages, index
        values = self._deserialize(raw, messages, start) if raw else raw
        self._positions[key] = next_offset
        self._split_id = split.split_id
        self._timestamps = stamps
        if stop is not None and next_offset >= stop:
            self._finish(key)
        if None in values:  # the deserializer returned None for records to skip
            stamps = [ts for ts, value in zip(stamps, values) if value is not None]
            values = [value for value in values if value is not None]
            self._timestamps = stamps
        return values

    def _deserialize(self, raw: list, messages: list, start: int) -> list:
        convert = self._value_only
        try:
            if convert is not None:
                values = list(map(convert, raw))
            elif self._of_message is not None:
                values = list(map(self._of_message, messages[start : start + len(raw)]))
            else:
                values = [self._source.deserializer.deserialize(_record(m)) for m in messages[start : start + len(raw)]]
        except Exception:
            self._explain_failure(messages, start, len(raw))
            raise
        return values

    def _explain_failure(self, messages: list, start: int, count: int) -> None:
        """Find the record that failed and raise an error naming it."""
        for message in messages[start : start + count]:
            try:
                if self._value_only is not None:
                    self._value_only(message.value())
                elif self._of_message is not None:
                    self._of_message(message)
                else:
                    self._source.deserializer.deserialize(_record(message))
            except Exception as error:
                raise KafkaDeserializationError(
                    f"could not deserialize the record at offset {message.offset()} of partition "
                    f"{message.partition()} of topic {message.topic()!r}: {type(error).__name__}: {error}; fix the "
                    "data or the schema (a schema that returns None for a record skips it, e.g. "
                    "JsonRowDeserializationSchema...ignore_parse_errors())"
                ) from error

    def _on_error(self, message: Any) -> None:
        from confluent_kafka import KafkaError

        error = message.error()
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            return
        where = f"partition {message.partition()} of topic {message.topic()!r}"
        if code in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC):
            raise KafkaConnectorError(
                f"{where} no longer exists on Kafka at {self._source.bootstrap_servers} (was "
                "the topic deleted while the job read it?); restore the topic or remove it "
                "from the source's subscription"
            )
        if error.fatal() or not error.retriable():
            raise KafkaConnectorError(f"Kafka at {self._source.bootstrap_servers} failed reading {where}: {error}")
        logger.warning("Kafka reported %s for %s; the client retries", error, where)

    def _finish_passed_stops(self) -> None:
        """Finish the bounded partitions whose records up to their stopping offset are gone: retention deleted
        them after the stop was resolved, so the log now starts at or past it and no record will ever reach the
        stop. Asked of the broker at most once a second, and only when a fetch came back empty."""
        from confluent_kafka import KafkaException, TopicPartition

        bounded = [key for key, split in self._splits.items() if split.stopping_offset is not None]
        if not bounded or time.monotonic() < self._next_stop_check:
            return
        self._next_stop_check = time.monotonic() + 1.0
        consumer = self._client()
        for key in bounded:
            stop = self._splits[key].stopping_offset
            try:
                low, _ = consumer.get_watermark_offsets(TopicPartition(*key), timeout=self._timeout, cached=False)
            except KafkaException:
                continue  # asked again in a second; fetching reports a broker that stays away
            if stop is not None and low >= stop:
                logger.info(
                    "%s: partition %s-%d now starts at offset %d, past its stopping offset %d: the broker deleted "
                    "the records left to read",
                    self._info.task_name_with_subtasks,
                    *key,
                    low,
                    stop,
                )
                self._finish(key)

    def _finish(self, key: tuple[str, int]) -> None:
        del self._splits[key]
        self._positions.pop(key, None)
        logger.info("%s: partition %s-%d reached its stopping offset", self._info.task_name_with_subtasks, *key)
        self._assign()

    def current_split_id(self) -> Any:
        return self._split_id

    def current_timestamps(self) -> list | None:
        """Kafka's timestamps of the records the last `poll` returned (event time by default, as in Flink)."""
        return self._timestamps

    # -- checkpoints -------------------------------------------------------------------------------------------

    def snapshot_state(self) -> list[Any]:
        state: list[Any] = list(self._discovery)
        state.extend(replace(split, offset=self._positions[key]) for key, split in self._splits.items())
        return state

    def on_snapshot(self, checkpoint_id: int) -> None:
        if self._source.commits_offsets():
            self._snapshots[checkpoint_id] = dict(self._positions)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        done = [cid for cid in self._snapshots if cid <= checkpoint_id]
        if not done:
            return
        offsets = self._snapshots[max(done)]
        for cid in done:
            del self._snapshots[cid]
        if offsets and self._consumer is not None:
            from confluent_kafka import TopicPartition

            try:
                self._consumer.commit(
                    offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=True
                )
                self._committed.update(offsets)
            except Exception as error:  # monitoring only: a failed commit never fails the job (as in Flink)
                logger.warning("committing offsets of checkpoint %d to Kafka failed: %s", checkpoint_id, error)

    def offsets_for_metrics(self) -> dict[tuple[str, int], tuple[int, int | None]]:
        """(current offset, committed offset) per partition, for the source's metrics."""
        return {key: (position, self._committed.get(key)) for key, position in self._positions.items()}

    def close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close()
            finally:
                self._consumer = None


def _record(message: Any) -> KafkaRecord:
    return KafkaRecord(
        message.topic(),
        message.partition(),
        message.offset(),
        message.timestamp()[1],
        message.key(),
        message.value(),
        message.headers(),
    )
