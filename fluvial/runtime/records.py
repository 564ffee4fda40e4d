"""What flows through channels: buffers of records, and in-band events that travel between buffers.

A RecordBatch is columnar: the values, and their event timestamps only when the stream has them (None
otherwise), so a stateless chain maps a plain list at C speed. StreamRecord is the one per-record view, used
where a user function sees a single record with its timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, final

from fluvial.checkpoint.stop_mode import StopMode
from fluvial.common.time import MAX_WATERMARK


class RecordBatch:
    """A buffer of records. Immutable once emitted: consumers may share the same lists. `values` is a list, or
    another read-only sequence where a source has one for free (NumberSequenceSource hands out `range`s):
    consumers iterate, index, slice and take `len` of it, and build new lists for what they emit."""

    __slots__ = ("values", "timestamps")

    def __init__(self, values: list[Any], timestamps: list[Any] | None = None) -> None:
        self.values = values
        self.timestamps = timestamps

    def __len__(self) -> int:
        return len(self.values)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its two fields: a buffer crossing processes is one frame, and the default for a slotted
        class (copyreg's state dict, set back attribute by attribute) costs about 4 µs a frame on both ends."""
        return (RecordBatch, (self.values, self.timestamps))

    def __repr__(self) -> str:
        return f"RecordBatch({len(self.values)} records{', timestamped' if self.timestamps else ''})"


@dataclass(slots=True)
class StreamRecord:
    value: Any
    timestamp: int | None = None


@final  # no subclasses: `type(item) is Watermark` tells a watermark from the records around it, for mypy too
@dataclass(frozen=True, slots=True)
class Watermark:
    timestamp: int

    @property
    def is_final(self) -> bool:
        return self.timestamp >= MAX_WATERMARK


@dataclass(frozen=True, slots=True)
class WatermarkStatus:
    idle: bool


@dataclass(frozen=True, slots=True)
class CheckpointBarrier:
    checkpoint_id: int
    timestamp: int
    savepoint_dir: str | None = None  # a savepoint: state goes to this directory, self-contained
    stop: StopMode | None = None  # stop-with-savepoint's synchronous savepoint (checkpoint.stop_mode)


class EndOfInput:
    """End of data (Flink's EndOfData): the producer has finished its input and its operators; no record follows
    on this channel. Checkpoint barriers still may — a producer that waits for its final checkpoint (FLIP-147)
    sends that checkpoint's barrier after it — until EndOfPartition closes the channel."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "END_OF_INPUT"


class EndOfPartition:
    """The last item a channel carries (Flink's EndOfPartitionEvent): its producer has ended for good."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "END_OF_PARTITION"


END_OF_INPUT = EndOfInput()
END_OF_PARTITION = EndOfPartition()


class ChannelBroken:
    """Delivered in place of the items a dead connection will never bring (a remote channel's producer died):
    the consuming task fails with `error` instead of waiting forever."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error
