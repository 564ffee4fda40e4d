"""MQTT through the receiver path (`fluvial.datastream.connectors.mqtt`; client paho-mqtt, which
`pip install 'fluvial[mqtt]'` brings): a Receiver that subscribes with a persistent session and acknowledges a
message to the broker only after `store()` has put it in the receiver's block store — in the write-ahead log
when `receiver.write-ahead-log.enable` is on.

    receiver = MqttReceiver("127.0.0.1", 1883, topics=["sensors/#"], client_id="sensor-job", qos=1)
    env.add_receiver(receiver, "sensors").map(...)

Guarantees (docs/connectors/mqtt.md): with the write-ahead log and checkpoints, a TaskManager killed at any
moment loses nothing (what was not in the log was not acknowledged, so the broker delivers it again to the
persistent session), and what the log holds is emitted once. QoS 2 is exactly-once from the broker into the
log: each block records the packet ids of the QoS 2 messages stored but not completed (mqtt_ledger.py), so a
redelivery (DUP=1, same packet id) after a crash is acknowledged without being stored again. QoS 1 is
at-least-once there: a message in the log whose PUBACK had not reached the broker when the process died
(usually the last batch) comes again and is stored again — after PUBACK the broker may reuse its packet id at
once, so a redelivery cannot be told from a new message. QoS 0 messages are acknowledged by nobody and lost
with a connection, as MQTT defines.

Protocol of the receiver's thread (`on_start`), numbered:
1. Connect with `clean_session=False` and the fixed `client_id` (the broker keeps the subscription and queues
   QoS 1/2 messages while the receiver is away), within `connect_timeout` seconds; the first connection that
   fails (unreachable broker, refused credentials) stops the receiver with an error naming the address, which
   fails the job.
2. Subscribe to every topic filter at `qos`. paho's network thread hands each message to a local queue.
3. Loop: take the queued messages (at most `max_batch_size`), deserialize them, `store(list, position=...)`
   — which returns only when the block is stored (and paced by `receiver.max-rate`), with the QoS 2 ledger's
   position — then acknowledge each, in order, and send the PUBCOMPs the block's position made safe.
   While the loop waits (a slow log, the rate limit), unacknowledged messages hold the broker's in-flight
   window (`max_inflight_messages`), so the broker stops sending and queues: back pressure reaches the broker.
4. A lost connection is re-established by paho; messages queued but not stored are dropped (the broker sends
   them again), and messages stored but not yet acknowledged are remembered so their redelivery (DUP, same
   packet id and content) is acknowledged without storing them twice.
QoS 2: paho sends PUBREC before the application sees the message, which would let a crash lose it; the
receiver's client defers PUBREC until the message is stored, and PUBCOMP until a stored block no longer lists
the message as pending (mqtt_ledger.py, step 3).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fluvial.common.errors import InvalidJobError, ResourceError
from fluvial.common.serialization import DeserializationSchema, SimpleStringSchema
from fluvial.datastream.connectors.mqtt_ledger import Qos2Ledger, digest
from fluvial.datastream.connectors.payloads import deserialize_batch
from fluvial.datastream.connectors.receiver import Receiver, ReceiverStoppedError

__all__ = ["MqttConnectError", "MqttDeserializationError", "MqttReceiver"]

logger = logging.getLogger(__name__)

WAIT_SLICE_S = 0.05
RELEASE_LINGER_S = 0.005  # PUBRELs with no message to carry them wait this long for more before an empty block


class MqttConnectError(ResourceError, ConnectionError):
    """The broker could not be reached, or refused the connection, within the connect timeout."""


class MqttDeserializationError(InvalidJobError):
    """A payload could not be deserialized; the message names the topic and the message."""


@dataclass(slots=True)
class _Arrived:
    topic: str
    payload: bytes
    mid: int
    qos: int
    dup: bool
    generation: int


class MqttReceiver(Receiver):
    """One MQTT client: several topic filters, one persistent session. Run several receivers (each with its
    own `client_id`) for several topic groups and union their streams."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 1883,
        topics: Sequence[str] = ("#",),
        *,
        client_id: str,
        qos: int = 1,
        username: str | None = None,
        password: str | None = None,
        deserializer: DeserializationSchema | None = None,
        keepalive: int = 30,
        connect_timeout: float = 10.0,
        max_batch_size: int = 1000,
        storage_level: Any = None,
    ) -> None:
        super().__init__(storage_level)
        if isinstance(topics, str):
            topics = (topics,)
        if not topics or any(not isinstance(topic, str) or not topic for topic in topics):
            raise InvalidJobError(f"MqttReceiver needs topic filters such as ['sensors/#'], got {topics!r}")
        if qos not in (0, 1, 2):
            raise InvalidJobError(f"MQTT QoS is 0, 1 or 2, got {qos!r}; use 1 or 2 to lose nothing")
        if not client_id or not isinstance(client_id, str):
            raise InvalidJobError(
                "MqttReceiver needs a client_id: the broker keeps the persistent session under it, "
                "so keep it when the job runs again"
            )
        if not connect_timeout > 0 or max_batch_size < 1:
            raise InvalidJobError("MqttReceiver needs connect_timeout > 0 s and max_batch_size >= 1")
        self.host, self.port, self.topics, self.qos = host, int(port), tuple(topics), qos
        self.client_id, self.username, self.password = client_id, username, password
        self.deserializer = deserializer or SimpleStringSchema()
        self.keepalive, self.connect_timeout, self.max_batch_size = keepalive, connect_timeout, max_batch_size
        self._reset_runtime()

    def _reset_runtime(self) -> None:
        self._client: Any = None
        self._queue: deque[_Arrived] = deque()
        self._arrived = threading.Event()
        self._stopping = threading.Event()
        self._generation = 0
        self._connected = threading.Event()
        self._connect_result: Any = None
        self._ever_connected = False
        self._stored_unacked: dict[int, tuple[str, bytes]] = {}  # QoS 1, stored on a connection now gone
        self._ledger = Qos2Ledger(f"{self.client_id}@{self.host}:{self.port}")
        self._pubrels: deque[tuple[int, int]] = deque()  # (packet id, connection generation) from paho's thread
        self._session_lost_at = 0  # the generation of the latest connection the broker had no session for
        self._ledger_from = 0  # the ledger holds nothing of connections before this generation
        self.stored_messages = 0

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        for name in ("_client", "_queue", "_arrived", "_stopping", "_connected", "_pubrels"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset_runtime()

    @property
    def address(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    def name(self) -> str:
        return f"MQTT {self.client_id}"

    # -- lifecycle (the receiver's thread) ------------------------------------------------------------------

    def on_start(self) -> None:
        self._reset_runtime()
        if self.qos == 2:
            pending = self._ledger.restore(self.last_stored_position())
            if pending:
                logger.info(
                    "MQTT receiver %s: %d QoS 2 messages are in the log but not completed with the broker; "
                    "their redelivery is acknowledged without storing them again",
                    self.client_id,
                    pending,
                )
        try:
            self._connect()
        except MqttConnectError as error:
            if self._ever_connected:
                raise  # the supervisor restarts the receiver by its restart strategy
            self.stop(str(error), error)
            return
        self._store_loop()

    def on_stop(self) -> None:
        self._stopping.set()
        self._arrived.set()
        client = self._client
        if client is not None:
            try:
                client.disconnect()
            finally:
                client.loop_stop()

    def _connect(self) -> None:
        import paho.mqtt.client as mqtt

        from fluvial.datastream.connectors.mqtt_client import StoreFirstClient

        client = StoreFirstClient(
            mqtt.CallbackAPIVersion.VERSION2, client_id=self.client_id, clean_session=False, manual_ack=True
        )
        if self.username is not None:
            client.username_pw_set(self.username, self.password)
        client.reconnect_delay_set(0.1, 2)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_pubrel = self._on_pubrel
        self._client = client
        try:
            client.connect_async(self.host, self.port, self.keepalive)
            client.loop_start()
        except Exception as error:  # noqa: BLE001 - named below
            raise self._connect_error(str(error)) from error
        if not self._connected.wait(self.connect_timeout) or self._connect_result is not None:
            reason = self._connect_result or "no answer (is a broker listening there?)"
            client.loop_stop()
            raise self._connect_error(reason)
        self._ever_connected = True

    def _connect_error(self, reason: str) -> MqttConnectError:
        return MqttConnectError(
            f"MQTT receiver '{self.client_id}' cannot connect to the broker at {self.address} within "
            f"{self.connect_timeout:g} s: {reason}; check that the broker runs there and that the credentials are "
            f"right"
        )

    # -- paho's network thread --------------------------------------------------------------------------------

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any = None) -> None:
        if reason.is_failure:
            self._connect_result = f"the broker refused the connection ({reason})"
            if not self._ever_connected:
                client.disconnect()
            self._connected.set()
            return
        self._generation += 1
        if not flags.session_present:
            self._session_lost_at = self._generation  # the store loop clears the QoS 2 ledger (step 4)
        self._connect_result = None
        client.subscribe([(topic, self.qos) for topic in self.topics])
        logger.info(
            "MQTT receiver %s connected to %s (session present: %s)",
            self.client_id,
            self.address,
            flags.session_present,
        )
        self._connected.set()

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any = None) -> None:
        self._queue.clear()  # step 4: the broker sends what we had not stored again
        if not self._stopping.is_set():
            logger.warning(
                "MQTT receiver %s lost its connection to %s (%s); reconnecting", self.client_id, self.address, reason
            )

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        self._queue.append(
            _Arrived(message.topic, message.payload, message.mid, message.qos, bool(message.dup), self._generation)
        )
        self._arrived.set()

    def _on_pubrel(self, mid: int) -> None:
        self._pubrels.append((mid, self._generation))
        self._arrived.set()

    # -- step 3 -------------------------------------------------------------------------------------------------

    def _store_loop(self) -> None:
        queue, arrived = self._queue, self._arrived
        ledger = self._ledger
        while not self._stopping.is_set():
            releasing = ledger.needs_flush() or bool(self._pubrels)
            idle = not arrived.wait(RELEASE_LINGER_S if releasing else WAIT_SLICE_S)
            arrived.clear()
            while queue and not self._stopping.is_set():
                batch = [queue.popleft() for _ in range(min(len(queue), self.max_batch_size))]
                if not self._store_and_ack(batch):
                    return
            if idle and releasing and not self._stopping.is_set() and not self._store_and_ack([]):
                return  # (an empty block carries the releases no message came to carry: ledger step 3)

    def _store_and_ack(self, batch: list[_Arrived]) -> bool:
        ledger = self._ledger
        if self._session_lost_at > self._ledger_from:
            self._ledger_from = self._session_lost_at
            ledger.reset()
        while self._pubrels:
            ledger.release(*self._pubrels.popleft())
        fresh = [message for message in batch if not self._redelivered(message)]
        released = dict(ledger.released)
        if fresh or released:
            try:
                values = self._deserialize(fresh)
            except MqttDeserializationError as error:
                self.stop(str(error), error)
                return False
            try:
                self.store(values, position=ledger.position() if self.qos == 2 else None)
            except ReceiverStoppedError:
                return False  # never acknowledge what was not stored
            self.stored_messages += len(values)
        generation = self._generation
        client = self._client
        for message in batch:
            if message.qos == 0:
                continue
            if message.generation == generation:
                client.ack(message.mid, message.qos)
                if message.qos == 1:
                    self._stored_unacked.pop(message.mid, None)
            elif message.qos == 1:  # the connection it came on is gone: its redelivery is acknowledged when it comes
                self._stored_unacked[message.mid] = (message.topic, message.payload)
            # (QoS 2 stays in the ledger until its flow completes, across connections and restarts)
        for mid in ledger.completed(released, generation):
            client.complete(mid)
        return True

    def _redelivered(self, message: _Arrived) -> bool:
        """A message already stored: acknowledge it, store nothing. QoS 2 by the ledger (also across restarts);
        QoS 1 only within this run, for a message stored but never acknowledged (its packet id is not free)."""
        if message.qos == 2 and message.generation >= self._ledger_from:
            message_digest = digest(message.topic, message.payload)
            if self._ledger.is_redelivery(message.mid, message.dup, message_digest):
                return True
            self._ledger.stored(message.mid, message_digest)  # (stored below, or the receiver stops)
            return False
        if not message.dup:
            return False
        stored = self._stored_unacked.get(message.mid)
        return stored is not None and stored == (message.topic, message.payload)

    def _deserialize(self, messages: list[_Arrived]) -> list:
        def failure(message: _Arrived, error: Exception) -> Exception:
            return MqttDeserializationError(
                f"MQTT receiver '{self.client_id}': the payload of a message on topic {message.topic!r} (packet id "
                f"{message.mid}, after {self.stored_messages} stored messages) cannot be deserialized by "
                f"{type(self.deserializer).__name__}: {type(error).__name__}: {error}; it stays unacknowledged at "
                f"the broker: remove it (e.g. publish to another topic) or use a deserializer that accepts it"
            )

        return deserialize_batch(self.deserializer.deserialize, messages, _payload, failure)


def _payload(message: _Arrived) -> bytes:
    return message.payload
