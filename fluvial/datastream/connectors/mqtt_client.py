"""paho's client with QoS 2 acknowledged the way a store-then-acknowledge receiver needs.

paho answers an incoming QoS 2 PUBLISH with PUBREC at once and shows the message to the application only when
PUBREL arrives; after PUBREC the broker never sends the PUBLISH again, so a process that dies before storing
the message loses it (paho's own comment in `_handle_pubrel`, eclipse/paho.mqtt.python#284). StoreFirstClient,
with `manual_ack=True`:
1. hands a QoS 2 message to `on_message` when its PUBLISH arrives and sends no PUBREC;
2. `ack(mid, 2)` sends PUBREC (the message is stored now);
3. answers PUBREL with PUBCOMP at once, or, when `on_pubrel` is set, hands the packet id to it and sends
   PUBCOMP only when `complete(mid)` is called (the receiver first stores that the flow is over: the broker
   reuses a packet id only after PUBCOMP, see mqtt_ledger.py).
A crash before step 2 leaves the broker to send the PUBLISH again (DUP), as for QoS 1. QoS 0 and 1 are paho's.
It overrides three of paho's packet handlers, so `pyproject.toml` keeps paho-mqtt below its next major version.
"""

from __future__ import annotations

import struct
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import MQTTErrorCode


class StoreFirstClient(mqtt.Client):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferring_pubrec = False
        self._deferred_mid: int | None = None
        self.on_pubrel: Any = None  # called on paho's network thread with the packet id of each PUBREL

    def _handle_publish(self) -> MQTTErrorCode:
        qos = (self._in_packet["command"] & 0x06) >> 1
        if qos != 2 or not self._manual_ack:
            return super()._handle_publish()
        self._deferring_pubrec, self._deferred_mid = True, None
        try:
            rc = super()._handle_publish()  # parses, keeps the message in _in_messages, "sends" PUBREC (held)
        finally:
            self._deferring_pubrec = False
        mid = self._deferred_mid
        if mid is not None:
            with self._in_message_mutex:
                message = self._in_messages.pop(mid, None)
            if message is not None:
                self._handle_on_message(message)  # step 1
        return rc

    def _send_pubrec(self, mid: int) -> MQTTErrorCode:
        if self._deferring_pubrec:
            self._deferred_mid = mid
            return MQTTErrorCode.MQTT_ERR_SUCCESS
        return super()._send_pubrec(mid)

    def ack(self, mid: int, qos: int) -> MQTTErrorCode:
        if qos == 2 and self._manual_ack:
            return super()._send_pubrec(mid)  # step 2
        return super().ack(mid, qos)

    def _handle_pubrel(self) -> MQTTErrorCode:
        rc = super()._handle_pubrel()
        if self._manual_ack and rc == MQTTErrorCode.MQTT_ERR_SUCCESS:
            mid = struct.unpack("!H", self._in_packet["packet"][:2])[0]
            if self.on_pubrel is not None:
                self.on_pubrel(mid)
                return rc
            return self._send_pubcomp(mid)  # step 3
        return rc

    def complete(self, mid: int) -> MQTTErrorCode:
        """PUBCOMP for a PUBREL handed to `on_pubrel` (step 3)."""
        return self._send_pubcomp(mid)
