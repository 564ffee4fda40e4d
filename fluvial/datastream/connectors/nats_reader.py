"""The NATS source's reader: one fetch loop per split on the connection's loop thread, batches handed to the
task thread through a bounded queue (`poll` never blocks).

Protocol per split, numbered:
1. Resolve where to start: after the checkpointed position, else by the starting position (LATEST and
   SEQUENCE become a concrete sequence at once, so a checkpoint taken before the first message holds it).
2. (Re)create the durable pull consumer `<consumer name>-<split index>` at that sequence, AckPolicy.ALL (a
   workqueue stream demands EXPLICIT) and no limit on pending acknowledgements (what waits for a checkpoint must
   not stall the fetch).
3. Fetch batches. A message at or below the last sequence fetched is a redelivery (ack wait expired) and is
   dropped; a gap in the consumer sequence (messages delivered but lost with a connection) or a reconnect of
   the client means the consumer may hold deliveries we never saw: it is recreated after the last sequence
   fetched (step 2), so nothing is skipped.
4. Payloads are deserialized on the loop thread; a payload that fails stops the split with an error naming
   the stream, subject and sequence, raised by the next `poll`.
5. `on_snapshot` remembers each split's last emitted message; when that checkpoint completes, one
   acknowledgement of it (AckPolicy.ALL) acknowledges everything before it. On a workqueue stream every message
   since the previous checkpoint is remembered and acknowledged (EXPLICIT): only then does it leave the stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

from fluvial.common.errors import ResourceError
from fluvial.common.task_info import TaskInfo
from fluvial.datastream.connectors.nats import (
    NatsDeserializationError,
    NatsSourceSettings,
    NatsSplit,
    StartingKind,
)
from fluvial.datastream.connectors.nats_connection import NatsConnection
from fluvial.datastream.connectors.payloads import deserialize_batch
from fluvial.datastream.connectors.source import SourceReader

logger = logging.getLogger(__name__)

ACK = b"+ACK"
RETRY_DELAY_S = 0.25


@dataclass(slots=True)
class _Batch:
    split_id: str
    values: list
    sequences: list[int]
    replies: list[str]


@dataclass(frozen=True, slots=True)
class _Resolved:
    """A split's concrete start (and bound) became known: it belongs in the next snapshot. `explicit_acks`: the
    stream (workqueue retention) needs every message acknowledged, not just the last of a checkpoint."""

    split_id: str
    position: int
    stop_sequence: int | None
    explicit_acks: bool = False


@dataclass(frozen=True, slots=True)
class _SplitEnd:
    split_id: str


@dataclass(frozen=True, slots=True)
class _Failure:
    error: BaseException


class NatsSourceReader(SourceReader[NatsSplit]):
    def __init__(self, settings: NatsSourceSettings, task_info: TaskInfo) -> None:
        self._settings = settings
        self._what = f"NATS source of stream {settings.stream} ({task_info.task_name_with_subtasks})"
        self._connection: NatsConnection | None = None
        self._splits: dict[str, NatsSplit] = {}
        self._ready: deque[Any] = deque()  # filled by the loop thread, emptied by poll (deque ops are atomic)
        self._fetchers: dict[str, asyncio.Future] = {}
        self._finished: set[str] = set()
        self._partial: _Batch | None = None
        self._current_split: str | None = None
        self._explicit: set[str] = set()  # splits whose every message is acknowledged (workqueue streams)
        self._to_ack: dict[str, list[str]] = {}  # replies to acknowledge at the next checkpoint, per split
        self._acks: dict[int, dict[str, list[str]]] = {}  # checkpoint id -> split -> replies to acknowledge
        self._closed = False
        settings.deserializer.open()

    # -- the task thread ----------------------------------------------------------------------------------------

    def add_splits(self, splits: list[NatsSplit]) -> None:
        for split in splits:
            self._splits[split.split_id] = split
            if self._connection is not None:
                self._start_fetcher(split)

    def _open(self) -> None:
        self._connection = NatsConnection.open(self._settings.connection, self._what)
        for split in self._splits.values():
            self._start_fetcher(split)

    def _start_fetcher(self, split: NatsSplit) -> None:
        fetcher = _SplitFetcher(self._settings, self._connection, split, self._ready, self._what)
        self._fetchers[split.split_id] = asyncio.run_coroutine_threadsafe(fetcher.run(), self._connection.loop)

    def poll(self, max_records: int) -> list | None:
        if self._connection is None:
            if not self._splits:
                return None
            self._open()
        batch = self._partial
        if batch is None:
            while True:
                try:
                    item = self._ready.popleft()
                except IndexError:
                    return None if len(self._finished) == len(self._splits) else []
                if isinstance(item, _Batch):
                    batch = item
                    break
                self._handle(item)
        self._partial = None
        if len(batch.values) > max_records:  # the rest waits for the next poll
            self._partial = _Batch(
                batch.split_id, batch.values[max_records:], batch.sequences[max_records:], batch.replies[max_records:]
            )
            batch = _Batch(
                batch.split_id, batch.values[:max_records], batch.sequences[:max_records], batch.replies[:max_records]
            )
        split_id = batch.split_id
        self._splits[split_id] = replace(self._splits[split_id], position=batch.sequences[-1])
        if split_id in self._explicit:
            self._to_ack.setdefault(split_id, []).extend(batch.replies)
        else:  # AckPolicy.ALL: the last message acknowledges everything before it
            self._to_ack[split_id] = [batch.replies[-1]]
        self._current_split = split_id
        return batch.values

    def _handle(self, item: Any) -> None:
        if isinstance(item, _Failure):
            raise item.error
        if isinstance(item, _Resolved):
            self._splits[item.split_id] = replace(
                self._splits[item.split_id], position=item.position, stop_sequence=item.stop_sequence
            )
            if item.explicit_acks:
                self._explicit.add(item.split_id)
        elif isinstance(item, _SplitEnd):
            self._finished.add(item.split_id)

    def current_split_id(self) -> str | None:
        return self._current_split

    def snapshot_state(self) -> list[NatsSplit]:
        return list(self._splits.values())

    def on_snapshot(self, checkpoint_id: int) -> None:
        if self._to_ack:
            self._acks[checkpoint_id], self._to_ack = self._to_ack, {}

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        done = sorted(cid for cid in self._acks if cid <= checkpoint_id)
        if not done or self._connection is None:
            return
        replies = [reply for cid in done for split_replies in self._acks.pop(cid).values() for reply in split_replies]
        client = self._connection.client

        async def acknowledge() -> None:
            for reply in replies:
                await client.publish(reply, ACK)

        self._connection.submit(acknowledge)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for future in self._fetchers.values():
            future.cancel()
        if self._connection is not None:
            self._connection.close()


class _SplitFetcher:
    """Steps 1-4 of the module docstring for one split, on the connection's loop."""

    def __init__(
        self, settings: NatsSourceSettings, connection: NatsConnection, split: NatsSplit, ready: deque, what: str
    ) -> None:
        self._settings = settings
        self._connection = connection
        self._split = split
        self._ready = ready
        self._what = what
        self._consumer = f"{settings.consumer_name}-{split.index}"
        self._last = split.position  # the last sequence handed to the queue
        self._last_consumer_seq = 0
        self._stop = split.stop_sequence
        self._subscription: Any = None
        self._reconnects = 0
        self._stop_reached = False
        self._explicit_acks = False

    async def run(self) -> None:
        try:
            await self._start()
            if self._bounded_done():
                self._ready.append(_SplitEnd(self._split.split_id))
                return
            await self._fetch_forever()
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # noqa: BLE001 - handed to the task thread, which fails the task
            self._ready.append(_Failure(error))

    async def _start(self) -> None:
        js = self._connection.jetstream
        settings, split = self._settings, self._split
        stream_info = await self._jetstream_call(js.stream_info(settings.stream), "look up the stream")
        retention = str(getattr(stream_info.config.retention, "value", stream_info.config.retention)).lower()
        self._explicit_acks = retention == "workqueue"  # a work queue refuses AckPolicy.ALL
        if retention == "interest":
            raise ResourceError(
                f"{self._what}: stream {settings.stream} has interest retention, which deletes messages when the "
                f"source recreates its consumer on a restore; use limits or workqueue retention"
            )
        if self._last < 0:
            self._last = await self._resolve_start(stream_info)
        if settings.bounded and self._stop is None:
            self._stop = stream_info.state.last_seq
        self._ready.append(_Resolved(split.split_id, self._last, self._stop, self._explicit_acks))
        await self._recreate_consumer()

    async def _resolve_start(self, stream_info: Any) -> int:
        """The sequence before the first one to read (-1: from the start or by time, resolved by the server)."""
        position = self._settings.starting_position
        if position.kind is StartingKind.COMMITTED:
            try:
                info = await self._connection.jetstream.consumer_info(self._settings.stream, self._consumer)
                return info.ack_floor.stream_seq
            except Exception as error:  # noqa: BLE001 - no such consumer: no earlier run
                if type(error).__name__ != "NotFoundError":
                    raise
                position = position.fallback
        if position.kind is StartingKind.LATEST:
            return stream_info.state.last_seq
        if position.kind is StartingKind.SEQUENCE:
            return position.value - 1
        return -1

    async def _recreate_consumer(self) -> None:
        import datetime

        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        js = self._connection.jetstream
        settings = self._settings
        policy = AckPolicy.EXPLICIT if self._explicit_acks else AckPolicy.ALL
        config = ConsumerConfig(
            durable_name=self._consumer,
            filter_subject=self._split.subject_filter or None,
            ack_policy=policy,
            max_ack_pending=-1,
            ack_wait=settings.ack_wait,
        )
        start = self._settings.starting_position
        if self._last >= 0:
            config.deliver_policy, config.opt_start_seq = DeliverPolicy.BY_START_SEQUENCE, self._last + 1
        elif start.kind is StartingKind.TIMESTAMP:
            config.deliver_policy = DeliverPolicy.BY_START_TIME
            config.opt_start_time = datetime.datetime.fromtimestamp(start.value / 1000, datetime.UTC)
        else:
            config.deliver_policy = DeliverPolicy.ALL
        if self._subscription is not None:
            try:
                await self._subscription.unsubscribe()
            except Exception:  # noqa: BLE001 - the old subscription may be gone with its connection
                pass
        try:
            await js.delete_consumer(settings.stream, self._consumer)
        except Exception as error:  # noqa: BLE001 - a consumer that does not exist yet is the usual case
            if type(error).__name__ != "NotFoundError":
                raise
        await self._jetstream_call(js.add_consumer(settings.stream, config), f"create consumer {self._consumer}")
        self._subscription = await js.pull_subscribe_bind(self._consumer, settings.stream)
        self._last_consumer_seq = 0
        self._reconnects = self._connection.client.stats["reconnects"]

    async def _jetstream_call(self, awaitable: Any, action: str) -> Any:
        try:
            return await awaitable
        except Exception as error:
            if type(error).__name__ == "NotFoundError":
                raise ResourceError(
                    f"{self._what} cannot {action}: stream {self._settings.stream} does not exist on NATS at "
                    f"{self._settings.connection.address}; create it first (e.g. `nats stream add`)"
                ) from error
            raise

    def _bounded_done(self) -> bool:
        return self._stop is not None and (self._last >= self._stop or self._stop_reached)

    async def _fetch_forever(self) -> None:
        import nats.errors

        settings = self._settings
        max_buffered = settings.max_buffered_batches
        while True:
            while len(self._ready) >= max_buffered:  # back pressure: the task has not taken what is here
                await asyncio.sleep(0.002)
            if self._connection.client.stats["reconnects"] != self._reconnects:
                await self._resync("the client reconnected")
            try:
                messages = await self._subscription.fetch(settings.fetch_batch, timeout=settings.fetch_timeout)
            except (TimeoutError, nats.errors.TimeoutError):
                messages = []  # nothing within the fetch timeout
            except (
                nats.errors.ConnectionClosedError,
                nats.errors.ConnectionReconnectingError,
                nats.errors.NoRespondersError,
                nats.errors.BadSubscriptionError,
                nats.errors.Error,
            ) as error:
                if self._connection.closing:
                    return  # the reader is closing: nothing to retry
                logger.warning(
                    "%s: fetching from split %s failed (%s); retrying", self._what, self._split.split_id, error
                )
                await asyncio.sleep(RETRY_DELAY_S)
                await self._resync(f"fetch failed: {error}")
                continue
            if messages:
                if not self._take(messages):
                    await self._resync("a consumer sequence gap (deliveries lost with a connection)")
                    continue
            elif self._stop is not None and await self._caught_up():
                self._stop_reached = True
            if self._bounded_done():
                self._ready.append(_SplitEnd(self._split.split_id))
                return

    async def _resync(self, why: str) -> None:
        """Recreate the consumer after the last sequence fetched (step 3); retried until the server answers."""
        logger.info("%s: recreating consumer %s after sequence %d: %s", self._what, self._consumer, self._last, why)
        while True:
            try:
                await self._recreate_consumer()
                return
            except Exception as error:  # noqa: BLE001 - the server may still be restarting
                logger.warning("%s: recreating consumer %s failed (%s); retrying", self._what, self._consumer, error)
                await asyncio.sleep(RETRY_DELAY_S)

    async def _caught_up(self) -> bool:
        """Bounded: nothing is left to deliver and every delivery reached us (a filtered consumer's delivered
        stream sequence runs ahead to the last message it skipped, so count consumer sequences)."""
        try:
            info = await self._subscription.consumer_info()
        except Exception:  # noqa: BLE001 - asked again after the next fetch
            return False
        return info.num_pending == 0 and info.delivered.consumer_seq <= self._last_consumer_seq

    def _take(self, messages: list) -> bool:
        """Queue the new messages of a fetch (step 3-4); False when the consumer sequence shows a gap (the
        messages before the gap are queued)."""
        sequences: list[int] = []
        replies: list[str] = []
        kept: list = []
        last, last_cseq, stop = self._last, self._last_consumer_seq, self._stop
        in_order = True
        for message in messages:
            reply = message.reply
            stream_seq, consumer_seq = _sequences(message)
            if consumer_seq != last_cseq + 1 and last_cseq:
                in_order = False
                break
            last_cseq = consumer_seq
            if stop is not None and stream_seq > stop:
                self._stop_reached = True  # delivered in order: everything up to the end was delivered before
                continue
            if stream_seq <= last:
                continue  # a redelivery of what was fetched already
            last = stream_seq
            sequences.append(stream_seq)
            replies.append(reply)
            kept.append(message)
        self._last_consumer_seq = last_cseq
        if kept:
            values = self._deserialize(kept, sequences)
            self._ready.append(_Batch(self._split.split_id, values, sequences, replies))
            self._last = last
        return in_order

    def _deserialize(self, messages: list, sequences: list[int]) -> list:
        settings = self._settings
        position = {id(message): sequence for message, sequence in zip(messages, sequences)}

        def failure(message: Any, error: Exception) -> Exception:
            return NatsDeserializationError(
                f"{self._what}: the payload of the message on subject {message.subject!r} at stream sequence "
                f"{position[id(message)]} of stream {settings.stream} cannot be deserialized by "
                f"{type(settings.deserializer).__name__}: {type(error).__name__}: {error}; fix or delete that "
                f"message, or use a deserializer that accepts it"
            )

        return deserialize_batch(settings.deserializer.deserialize, messages, _payload, failure)


def _payload(message: Any) -> bytes:
    return message.data


def _sequences(message: Any) -> tuple[int, int]:
    """(stream sequence, consumer sequence) from the JetStream reply subject, without building Msg.metadata:
    `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`, or the 12-token form
    with a domain and account hash in front and a random token at the end."""
    tokens = message.reply.split(".")
    if len(tokens) == 9:
        return int(tokens[5]), int(tokens[6])
    metadata = message.metadata.sequence
    return metadata.stream, metadata.consumer
