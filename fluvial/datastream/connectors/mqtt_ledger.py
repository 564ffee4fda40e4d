"""Which QoS 2 messages the MQTT receiver has stored but whose flow with the broker is not complete: the ledger
that makes the broker -> write-ahead log step exactly-once for QoS 2 (docs/connectors/mqtt.md).

MQTT 3.1.1 (4.3.3, 4.4): within a persistent session the broker sends an un-PUBREC'd QoS 2 PUBLISH again after
a reconnect with DUP=1 and the same packet id, sends only PUBREL once it has our PUBREC, and reuses a packet id
only after our PUBCOMP. So, numbered:
1. Every QoS 2 message the receiver stores enters `pending` (packet id -> digest of topic and payload), and
   `position()` — stored with each block through `store(list, position=...)`, so the write-ahead log holds it
   with the block — lists the pending ids.
2. After a restart the receiver reads the newest position back (`last_stored_position()`); a PUBLISH with DUP=1
   whose packet id is pending (and whose digest matches) is a message already in the log: PUBREC it, store
   nothing.
3. A PUBREL for id X is `release`d; the next block's position no longer lists X, and only after that block is
   stored is PUBCOMP sent (`completed`). The broker can reuse X only after PUBCOMP, so while a stored position
   lists X, no message other than the stored one can carry X: a DUP=1 PUBLISH with a pending id is never a
   new message, and nothing is dropped. When no message comes to carry the release, the receiver stores an
   empty block for it (`needs_flush`).
4. A PUBLISH with DUP=0 and a pending id means the broker ended the old flow (it lost its state): the id leaves
   `pending`. A session the broker does not have any more (CONNACK session present = 0) clears the ledger.
The digest is a second check (a broker that lost state could reuse an id early); it never makes the receiver
store a message twice, it only keeps it from dropping a different message under a reused id.
"""

from __future__ import annotations

import zlib
from typing import Any

__all__ = ["Qos2Ledger", "digest"]


def digest(topic: str, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(topic.encode()))


class Qos2Ledger:
    """Used by the receiver's thread only (paho's network thread hands PUBRELs over through a queue)."""

    def __init__(self, session: str) -> None:
        self.session = session  # client id and broker: a position of another session is not ours
        self.pending: dict[int, int] = {}  # packet id -> digest, stored and not yet completed (PUBCOMP sent)
        self.released: dict[int, int] = {}  # packet id -> connection generation its PUBREL came on

    def restore(self, position: Any) -> int:
        """Step 2: the pending ids the newest stored block listed; how many."""
        if isinstance(position, dict) and position.get("session") == self.session:
            self.pending = dict(position.get("pending") or {})
        return len(self.pending)

    def reset(self) -> None:
        """The broker has no session for us any more: nothing it sends is a redelivery of ours."""
        self.pending.clear()
        self.released.clear()

    def is_redelivery(self, mid: int, dup: bool, message_digest: int) -> bool:
        """Step 2 and 4, for a QoS 2 PUBLISH that just arrived."""
        if dup:
            return self.pending.get(mid) == message_digest
        if mid in self.pending:  # a new flow on this id: the old one is over at the broker
            del self.pending[mid]
            self.released.pop(mid, None)
        return False

    def stored(self, mid: int, message_digest: int) -> None:
        self.pending[mid] = message_digest

    def release(self, mid: int, generation: int) -> None:
        self.released[mid] = generation

    def needs_flush(self) -> bool:
        return bool(self.released)

    def position(self) -> dict:
        """Step 1 and 3: what a block stored now records — the pending ids, without the released ones."""
        released = self.released
        return {"session": self.session, "pending": {mid: d for mid, d in self.pending.items() if mid not in released}}

    def completed(self, released: dict[int, int], generation: int) -> list[int]:
        """Step 3, after a block whose position left out `released` is stored: the ids to PUBCOMP now (those
        whose PUBREL came on the current connection; the broker sends PUBREL again for the others)."""
        done = []
        for mid, on_generation in released.items():
            self.pending.pop(mid, None)
            if self.released.get(mid) == on_generation:
                del self.released[mid]
            if on_generation == generation:
                done.append(mid)
        return done
