"""The Kafka transactions of an EXACTLY_ONCE KafkaSink, and why they survive a crash at any moment.

Records go out through confluent-kafka (librdkafka), one transactional producer per transaction, named
`PREFIX-SUBTASK-N` with N increasing (it starts at the wall-clock milliseconds when the writer starts, so a new
attempt never reuses a name an earlier attempt used). At a checkpoint barrier the writer flushes the open
transaction and its committable — (transactional id, producer id, producer epoch) — becomes part of the
checkpoint; records after the barrier go to a new transaction. When the checkpoint completes, the transaction
is committed.

The hard case is a crash after the checkpoint completed and before the commit: librdkafka cannot take over an
open transaction in a new process (its `init_transactions` would abort it). So the producer id and epoch are
read from the broker (DescribeTransactions) right after the producer starts, and a restored job commits the
transactions its checkpoint recorded by sending Kafka's EndTxn request itself with that id and epoch (what
Flink's Java sink does through reflection on the Java producer); kafka-python's protocol layer carries it. The
broker answers a commit of a transaction it already committed with success, so committing twice is harmless.

Every other transaction an earlier attempt left open (opened after the checkpoint, or prepared for a checkpoint
that never completed) is aborted when a writer starts: it lists the ongoing transactions (ListTransactions)
and fences those of its own subtask (or of the old subtasks whose state it restored) numbered from the
checkpoint's next number up to its own first number, by initialising a producer with their id. So no
transaction lingers and pins the last stable offset that read_committed consumers wait on.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from fluvial.datastream.connectors.kafka.client import KafkaConnectorError, client_config, make_client

logger = logging.getLogger(__name__)

_RETRIABLE = {"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "CONCURRENT_TRANSACTIONS"}


@dataclass(frozen=True, slots=True)
class KafkaCommittable:
    """A prepared transaction: what a restored job needs to commit it from another process."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class KafkaWriterState:
    """The writer's checkpointed state: transactions of `subtask` numbered from `next_number` on were not
    prepared before the checkpoint (a restored writer aborts those that are still open)."""

    prefix: str
    subtask: int
    next_number: int


# Producers whose transaction is prepared and not yet committed, by transactional id: a commit in the same
# process uses the producer itself (one round trip); after a restore in another process there is none.
_PREPARED: dict[str, Any] = {}
_PREPARED_LOCK = threading.Lock()


def keep_prepared(transactional_id: str, producer: Any) -> None:
    with _PREPARED_LOCK:
        _PREPARED[transactional_id] = producer


def take_prepared(transactional_id: str) -> Any:
    with _PREPARED_LOCK:
        return _PREPARED.pop(transactional_id, None)


def parse_id(prefix: str, transactional_id: str) -> tuple[int, int] | None:
    """(subtask, number) of one of this prefix's ids, else None."""
    match = re.fullmatch(re.escape(prefix) + r"-(\d+)-(\d+)", transactional_id)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


class TransactionAdmin:
    """The broker requests librdkafka does not offer: DescribeTransactions, ListTransactions and EndTxn with a
    given producer id and epoch (through kafka-python's admin client, created on first use)."""

    def __init__(self, bootstrap: str, timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._timeout = timeout_s
        self._admin: Any = None

    def _client(self) -> Any:
        if self._admin is None:
            from kafka import KafkaAdminClient

            try:
                self._admin = KafkaAdminClient(
                    bootstrap_servers=self._bootstrap,
                    client_id="fluvial-kafka-sink",
                    request_timeout_ms=int(self._timeout * 1000),
                )
            except Exception as error:
                raise KafkaConnectorError(
                    f"Kafka at {self._bootstrap} did not answer the sink's admin client "
                    f"({error}); check that the broker runs"
                ) from None
        return self._admin

    def describe(self, transactional_id: str) -> Any:
        return self._client().describe_transactions([transactional_id])[transactional_id]

    def ongoing(self) -> list[Any]:
        listing = self._client().list_transactions(state_filters=["Ongoing"])
        return [row for rows in listing.values() for row in rows]

    def end(self, committable: KafkaCommittable, commit: bool) -> str:
        """Send EndTxn; the error's name ("NONE" on success)."""
        from kafka.errors import for_code
        from kafka.protocol.metadata import CoordinatorType
        from kafka.protocol.producer.transaction import EndTxnRequest

        admin = self._client()

        async def end_transaction() -> int:
            ids = await admin._find_coordinator_ids([committable.transactional_id], CoordinatorType.TRANSACTION)
            request = EndTxnRequest(
                transactional_id=committable.transactional_id,
                producer_id=committable.producer_id,
                producer_epoch=committable.producer_epoch,
                committed=commit,
                max_version=4,
            )
            response = await admin._manager.send(request, node_id=ids[committable.transactional_id])
            return response.error_code

        code = admin._manager.run(end_transaction)
        if code == 0:
            return "NONE"
        return getattr(for_code(code), "message", str(code))

    def close(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            finally:
                self._admin = None


def commit_recovered(
    admin: TransactionAdmin, committable: KafkaCommittable, timeout_s: float, ignore_aborted: bool = False
) -> None:
    """Commit a transaction of a completed checkpoint from a process that did not open it (module docstring).
    Already committed: nothing to do. Aborted meanwhile (it outlived transaction.timeout.ms): its records are
    lost, which fails the job with an error saying so."""
    deadline = time.monotonic() + timeout_s
    while True:
        outcome = admin.end(committable, commit=True)
        if outcome == "NONE":
            logger.info("committed Kafka transaction %s of a restored checkpoint", committable.transactional_id)
            return
        if outcome in _RETRIABLE and time.monotonic() < deadline:
            time.sleep(0.1)
            continue
        state = admin.describe(committable.transactional_id)
        if str(getattr(state.state, "value", state.state)) == "CompleteCommit":
            logger.info(
                "Kafka transaction %s of a restored checkpoint was committed before the restore",
                committable.transactional_id,
            )
            return
        if ignore_aborted:
            logger.error(
                "Kafka transaction %s of a completed checkpoint was aborted (%s; it is %s): its records are lost",
                committable.transactional_id,
                outcome,
                state.state,
            )
            return
        raise KafkaConnectorError(
            f"Kafka transaction {committable.transactional_id} of a completed checkpoint could not be committed "
            f"({outcome}; the broker says it is {state.state}): it was aborted, most likely because it stayed open "
            "longer than transaction.timeout.ms while the job was down; its records are lost. Give the sink a "
            "longer transaction.timeout.ms (up to the broker's transaction.max.timeout.ms)"
        )


def fence(bootstrap: str, properties: dict[str, str], transactional_id: str, timeout_s: float) -> None:
    """Abort whatever transaction `transactional_id` has open, and fence off any producer still using it."""
    from confluent_kafka import KafkaException, Producer

    stale = take_prepared(transactional_id)
    if stale is not None:
        _close_quietly(stale)
    producer = make_client(
        Producer,
        client_config(properties, **{"bootstrap.servers": bootstrap, "transactional.id": transactional_id}),
        "sink's producer",
    )
    try:
        producer.init_transactions(timeout_s)
    except KafkaException as error:
        raise KafkaConnectorError(
            f"could not abort the lingering Kafka transaction {transactional_id} at {bootstrap}: {error}"
        ) from None
    finally:
        producer.flush(0)
    logger.info("aborted the lingering Kafka transaction %s", transactional_id)


def abort_lingering(
    admin: TransactionAdmin,
    bootstrap: str,
    properties: dict[str, str],
    prefix: str,
    lower_bounds: dict[int, int],
    upper: int,
    timeout_s: float,
) -> None:
    """Abort this prefix's open transactions of the given subtasks numbered in [lower bound, upper)."""
    for row in admin.ongoing():
        parsed = parse_id(prefix, row.transactional_id)
        if parsed is None:
            continue
        subtask, number = parsed
        if subtask in lower_bounds and lower_bounds[subtask] <= number < upper:
            fence(bootstrap, properties, row.transactional_id, timeout_s)


def _close_quietly(producer: Any) -> None:
    try:
        producer.flush(0)
    except Exception:  # a fenced or broken producer: it only needs to go
        pass
