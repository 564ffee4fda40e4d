"""`KafkaSink`: a Sink V2 writer (`connectors/sink.py`) over confluent-kafka's producer, with Flink's three
delivery guarantees:
- NONE: records are handed to the client and sent when it sends them; nothing waits at checkpoints.
- AT_LEAST_ONCE: at every checkpoint barrier the writer waits until Kafka acknowledged every record written
  before it (a failed delivery fails the job), so a completed checkpoint never covers a lost record.
- EXACTLY_ONCE: one Kafka transaction per subtask between two checkpoints, committed when the checkpoint
  completes (see `transactions.py` for how a crash at any moment is survived).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.base import DeliveryGuarantee
from fluvial.datastream.connectors.kafka.client import (
    KafkaConnectorError,
    api_timeout_s,
    client_config,
    make_client,
)
from fluvial.datastream.connectors.kafka.serialization import KafkaRecordSerializationSchema
from fluvial.datastream.connectors.kafka.transactions import (
    KafkaCommittable,
    KafkaWriterState,
    TransactionAdmin,
    abort_lingering,
    commit_recovered,
    keep_prepared,
    take_prepared,
)
from fluvial.datastream.connectors.sink import Sink, SinkWriter

if TYPE_CHECKING:
    from fluvial.datastream.connectors.kafka.builders import KafkaSinkBuilder

logger = logging.getLogger(__name__)

DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000  # the broker's default transaction.max.timeout.ms


class KafkaSink(Sink):
    """PyFlink's KafkaSink; build it with `KafkaSink.builder()`."""

    def __init__(
        self,
        bootstrap_servers: str,
        serializer: KafkaRecordSerializationSchema,
        delivery_guarantee: DeliveryGuarantee,
        transactional_id_prefix: str | None,
        properties: dict[str, str],
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.serializer = serializer
        self.delivery_guarantee = delivery_guarantee
        self.transactional_id_prefix = transactional_id_prefix
        self.properties = dict(properties)
        self.ignore_transaction_timeouts = False  # FlinkKafkaProducer.ignore_failures_after_transaction_timeout

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        from fluvial.datastream.connectors.kafka.builders import KafkaSinkBuilder

        return KafkaSinkBuilder()

    def create_writer(self, task_info: TaskInfo, restored_state: list[Any] | None = None) -> KafkaWriter:
        return KafkaWriter(self, task_info, restored_state or [])

    def commit(self, committables: list[Any]) -> None:
        """Commit prepared transactions: with the producer that opened them when it is in this process, else
        with their producer id and epoch (a restored job; `transactions.py`). Committing twice is harmless."""
        timeout = api_timeout_s(self.properties)
        admin: TransactionAdmin | None = None
        try:
            for committable in committables:
                producer = take_prepared(committable.transactional_id)
                if producer is not None:
                    _commit_open(producer, committable, self.bootstrap_servers, timeout)
                    continue
                admin = admin or TransactionAdmin(self.bootstrap_servers, timeout)
                commit_recovered(admin, committable, timeout, self.ignore_transaction_timeouts)
        finally:
            if admin is not None:
                admin.close()

    def default_name(self) -> str:
        return "Kafka Sink"


def _commit_open(producer: Any, committable: KafkaCommittable, bootstrap: str, timeout_s: float) -> None:
    from confluent_kafka import KafkaException

    try:
        producer.commit_transaction(timeout_s)
    except KafkaException as error:
        raise KafkaConnectorError(
            f"committing Kafka transaction {committable.transactional_id} at {bootstrap} failed: {error}"
        ) from None


class KafkaWriter(SinkWriter):
    """Serializes each record with the sink's schema and hands it to the producer; what happens at checkpoints
    depends on the delivery guarantee (module docstring)."""

    def __init__(self, sink: KafkaSink, task_info: TaskInfo, restored: list[Any]) -> None:
        self._sink = sink
        self._info = task_info
        self._guarantee = sink.delivery_guarantee
        self._timeout = api_timeout_s(sink.properties)
        sink.serializer.open(None)
        self._topic_of, self._value_of, self._key_of = sink.serializer.compile()
        self._topic = sink.serializer.topic
        self._record_of = sink.serializer.record_function(task_info.subtask_index, self._partition_count)
        self._errors: list[str] = []
        self._producer: Any = None
        self._committable: KafkaCommittable | None = None
        self._admin: TransactionAdmin | None = None
        self._helper: Any = None  # the thread that opens the next transaction ahead
        self._spare: Any = None  # its Future: (producer, committable)
        self._spare_number = 0
        if self._guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            self._prefix = sink.transactional_id_prefix or ""
            self._next = self._start_transactions(restored)
        else:
            self._producer = self._new_producer({})

    # -- producers ---------------------------------------------------------------------------------------------

    def _new_producer(self, extra: dict[str, Any]) -> Any:
        from confluent_kafka import Producer

        config = client_config(
            self._sink.properties,
            **{
                "bootstrap.servers": self._sink.bootstrap_servers,
                "delivery.report.only.error": True,  # a callback per failed record only, none per delivered one
                "on_delivery": self._on_delivery,
                "client.id": f"fluvial-kafka-sink-{self._info.subtask_index}",
                **extra,
            },
        )
        if self._guarantee is not DeliveryGuarantee.NONE:
            config.setdefault("enable.idempotence", True)  # retries never duplicate or reorder within a session
        return make_client(Producer, config, "sink's producer")

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self._errors.append(f"topic {message.topic()!r}: {error}")

    def _raise_if_failed(self) -> None:
        if self._errors:
            count, first = len(self._errors), self._errors[0]
            self._errors.clear()
            raise KafkaConnectorError(
                f"Kafka at {self._sink.bootstrap_servers} refused {count} record(s), the first for {first}"
            )

    def _start_transactions(self, restored: list[KafkaWriterState]) -> int:
        """Abort what earlier attempts left open (`transactions.py`); the first number of this writer's ids."""
        now = int(time.time() * 1000)
        lower = {self._info.subtask_index: 0}
        for state in restored:
            if state.prefix == self._prefix:
                lower[state.subtask] = state.next_number
        first = max([now, *lower.values()])
        self._admin = TransactionAdmin(self._sink.bootstrap_servers, self._timeout)
        abort_lingering(
            self._admin, self._sink.bootstrap_servers, self._sink.properties, self._prefix, lower, first, self._timeout
        )
        return first

    def _begin_transaction(self) -> Any:
        """Take the transaction opened ahead (opening one now if none is), and open the next one ahead on the
        writer's helper thread, so a checkpoint barrier never waits for the broker's InitProducerId."""
        if self._spare is None:
            self._open_ahead()
        spare, self._spare = self._spare, None
        producer, self._committable = spare.result()
        self._producer = producer
        self._open_ahead()
        return producer

    def _open_ahead(self) -> None:
        if self._helper is None:
            from concurrent.futures import ThreadPoolExecutor

            self._helper = ThreadPoolExecutor(1, thread_name_prefix="fluvial-kafka-txn")
        number = self._next
        self._next += 1
        self._spare_number = number
        self._spare = self._helper.submit(self._open_transaction, number)

    def _open_transaction(self, number: int) -> tuple[Any, KafkaCommittable]:
        """A transactional producer with its transaction begun, and what a restored job needs to commit it."""
        from confluent_kafka import KafkaException

        transactional_id = f"{self._prefix}-{self._info.subtask_index}-{number}"
        timeout_ms = self._sink.properties.get("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS)
        producer = self._new_producer({"transactional.id": transactional_id, "transaction.timeout.ms": timeout_ms})
        try:
            producer.init_transactions(self._timeout)
            producer.begin_transaction()
        except KafkaException as error:
            raise KafkaConnectorError(
                f"could not start Kafka transaction {transactional_id} at {self._sink.bootstrap_servers}: {error}"
            ) from None
        state = self._admin.describe(transactional_id)
        return producer, KafkaCommittable(transactional_id, state.producer_id, state.producer_epoch)

    # -- records -----------------------------------------------------------------------------------------------

    def _partition_count(self, topic: str) -> int:
        from confluent_kafka import KafkaException

        try:
            metadata = self._producer.list_topics(topic, timeout=self._timeout)
        except KafkaException as error:
            raise KafkaConnectorError(
                f"could not read the partitions of topic {topic!r} at {self._sink.bootstrap_servers}: {error}"
            ) from None
        found = metadata.topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            raise KafkaConnectorError(f"topic {topic!r} does not exist on Kafka at {self._sink.bootstrap_servers}")
        return len(found.partitions)

    def _write_records(self, producer: Any, values: list) -> None:
        """The path of a schema with a record function (partition, timestamp, headers; a value may write none)."""
        produce, record_of = producer.produce, self._record_of
        assert record_of is not None
        for value in values:
            record = record_of(value)
            if record is None:
                continue
            topic, data, key, partition, timestamp, headers = record
            while True:
                try:
                    produce(topic, data, key, partition=partition, timestamp=timestamp, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.05)
                    self._raise_if_failed()

    def write_batch(self, values: list) -> None:
        producer = self._producer or self._begin_transaction()
        if self._record_of is not None:
            self._write_records(producer, values)
            producer.poll(0)
            if self._errors:
                self._raise_if_failed()
            return
        produce, value_of, key_of, topic_of, topic = (
            producer.produce,
            self._value_of,
            self._key_of,
            self._topic_of,
            self._topic,
        )
        for value in values:
            data = value_of(value)
            key = None if key_of is None else key_of(value)
            target = topic if topic_of is None else topic_of(value)
            while True:
                try:
                    produce(target, data, key)
                    break
                except BufferError:  # the client's queue is full: let it send, then try again
                    producer.poll(0.05)
                    self._raise_if_failed()
        producer.poll(0)
        if self._errors:
            self._raise_if_failed()

    def flush(self, end_of_input: bool) -> None:
        if self._producer is None or (self._guarantee is DeliveryGuarantee.NONE and not end_of_input):
            return
        left = self._producer.flush(self._timeout)
        self._raise_if_failed()
        if left:
            raise KafkaConnectorError(
                f"{left} record(s) were not acknowledged by Kafka at "
                f"{self._sink.bootstrap_servers} within {self._timeout:g} s "
                "(default.api.timeout.ms); is the broker up?"
            )

    def prepare_commit(self) -> list[Any]:
        if self._guarantee is not DeliveryGuarantee.EXACTLY_ONCE or self._producer is None:
            return []
        committable, producer = self._committable, self._producer
        keep_prepared(committable.transactional_id, producer)
        self._producer, self._committable = None, None
        return [committable]

    def snapshot_state(self) -> list[Any]:
        if self._guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
            return []
        # numbers from here on belong to no committable: the transaction opened ahead, and any later one
        first_unprepared = self._spare_number if self._spare is not None else self._next
        return [KafkaWriterState(self._prefix, self._info.subtask_index, first_unprepared)]

    def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            if self._guarantee is DeliveryGuarantee.EXACTLY_ONCE:
                try:  # not prepared, so never to be committed: abort it now rather than leave it to the next attempt
                    producer.abort_transaction(min(self._timeout, 5.0))
                except Exception as error:
                    logger.debug("aborting the open Kafka transaction on close failed: %s", error)
            else:
                producer.flush(min(self._timeout, 5.0))
        if self._spare is not None:
            try:  # opened ahead and never used: nothing was written in it, end it all the same
                spare, _ = self._spare.result(self._timeout)
                spare.abort_transaction(min(self._timeout, 5.0))
            except Exception as error:
                logger.debug("ending the Kafka transaction opened ahead failed: %s", error)
        if self._helper is not None:
            self._helper.shutdown(wait=False)
        if self._admin is not None:
            self._admin.close()


def check_exactly_once(prefix: str | None) -> None:
    if not prefix:
        raise InvalidJobError(
            "an EXACTLY_ONCE KafkaSink needs a transactional id prefix unique to the job: "
            "set_transactional_id_prefix('my-job')"
        )
