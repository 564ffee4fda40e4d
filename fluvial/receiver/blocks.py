"""The units a receiver's data travels in once a BlockGenerator has cut it: block ids, blocks, block infos.

A StreamBlockId is `(receiver_id, unique_id)`; the BlockGenerator makes the unique id from the time of the timer
tick that cut the block (tick − block interval, in ms), so a block's id also says which interval it covers. The
id's string form is Spark's block name, `input-<receiver>-<unique>`, which the block store and the write-ahead log
use as their key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NAME = re.compile(r"input-(-?\d+)-(-?\d+)")


@dataclass(frozen=True, slots=True, order=True)
class StreamBlockId:
    """The id of one block of one receiver. Ordered by (receiver, unique id): one receiver's ids increase."""

    receiver_id: int
    unique_id: int

    @property
    def name(self) -> str:
        return f"input-{self.receiver_id}-{self.unique_id}"

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def from_name(name: str) -> StreamBlockId:
        """The inverse of `name`, for keys read back from the block store or the write-ahead log."""
        match = _NAME.fullmatch(name)
        if match is None:
            raise ValueError(f"{name!r} is not a stream block name; expected 'input-<receiver id>-<unique id>'")
        return StreamBlockId(int(match.group(1)), int(match.group(2)))


@dataclass(slots=True)
class Block:
    """Records cut from a BlockGenerator's buffer at one timer tick, in the order they were added.

    The generator hands `records` over and never touches the list again, so the listener may keep it.
    """

    id: StreamBlockId
    records: list[Any]


@dataclass(slots=True)
class ReceivedBlockInfo:
    """What a receiver reports to the tracker for a stored block (Spark's AddBlock payload).

    `num_records` is None when the store could not count them; `store_result` is whatever the block handler
    returned (where the block lives: the block store, or the store and a write-ahead log segment).
    """

    stream_id: int
    num_records: int | None
    metadata: Any
    block_id: StreamBlockId
    store_result: Any
    position: Any = None  # the upstream's position after this block, as the receiver passed it to store()
