"""RecordWriter: the producing end of one JobEdge for one subtask — partitions buffers over its channels and
broadcasts events to all of them (watermarks and end of input go to every channel whatever the partitioner)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

from fluvial.common.type_checks import key_checker
from fluvial.datastream.transformations import PartitionerKind, PartitionerSpec
from fluvial.runtime.channel_selectors import build_selector
from fluvial.runtime.channels import Channel
from fluvial.runtime.deployment import OutputSpec
from fluvial.runtime.operators.base import described, key_by_name, label_failure
from fluvial.runtime.records import RecordBatch, Watermark


def _push_debloated(channel: Channel, batch: RecordBatch) -> None:
    """A buffer larger than the consumer's debloated size, in buffers of that size."""
    size = channel.buffer_size
    values, timestamps = batch.values, batch.timestamps
    for start in range(0, len(values), size):
        stop = start + size
        channel.push(RecordBatch(values[start:stop], None if timestamps is None else timestamps[start:stop]))


class RecordWriter:
    def __init__(self, spec: OutputSpec, channels: list[Channel], producer_index: int) -> None:
        self.spec = spec
        self.channels = channels
        self._single = channels[0] if len(channels) == 1 else None
        self._partitioning = partitioning_name(spec.partitioner)
        self._check_key = (
            key_checker(spec.partitioner.key_type, self._partitioning)
            if spec.partitioner.kind is PartitionerKind.HASH
            else None
        )
        self._selector = build_selector(
            spec.partitioner, len(channels), spec.consumer_max_parallelism, producer_index, self._check_key
        )
        self._pair_selector: Any = None
        if self._single is not None and spec.partitioner.kind is PartitionerKind.CUSTOM:
            self._single = None  # a custom partitioner must still see (and validate) every record
        # one channel and a typed key_by: nothing to split, each distinct key still checked, here unless the
        # consumer checks each key where it first meets it (then this writer computes no key)
        self._check_single = (
            self._selector.split
            if self._single is not None and self._check_key is not None and not spec.consumer_checks_keys
            else None
        )
        self.records_out = 0  # records written (the task's numRecordsOut), counted per buffer
        # how many channels one buffer is cut into: partitioners that spread records over the channels give each
        # channel about 1/fan_out of a buffer (forward, broadcast and global hand a channel the whole buffer)
        self.fan_out = len(channels) if spec.partitioner.kind in _SPREADING else 1

    def emit(self, batch: RecordBatch) -> None:
        count = len(batch.values)
        self.records_out += count
        single = self._single
        if single is not None:
            if self._check_single is not None:
                try:
                    self._check_single(batch.values)
                except BaseException as error:
                    label_failure(error, self._partitioning)
                    raise
            if count > single.buffer_size:
                _push_debloated(single, batch)
            else:
                single.push(batch)
            return
        timestamps = batch.timestamps
        try:  # a key selector's failure is the key_by's, not the upstream operator's (innermost label wins)
            if timestamps is None:
                parts = self._selector.split(batch.values)
            else:
                columns = self._selector.split_timestamped(batch.values, timestamps) or self._split_pairs(
                    batch.values, timestamps
                )
        except BaseException as error:
            label_failure(error, self._partitioning)
            raise
        if timestamps is None:
            for channel, part in zip(self.channels, parts):
                if part:
                    if len(part) > channel.buffer_size:
                        _push_debloated(channel, RecordBatch(part))
                    else:
                        channel.push(RecordBatch(part))
            return
        for channel, (values, stamps) in zip(self.channels, columns):
            if values:
                cut = RecordBatch(cast("list[Any]", values), stamps)  # a slice of a source's range stays one
                if len(values) > channel.buffer_size:
                    _push_debloated(channel, cut)
                else:
                    channel.push(cut)

    def _split_pairs(self, values: Sequence[Any], timestamps: list[Any]) -> list[tuple[Sequence[Any], list[Any]]]:
        """A selector that must see each record whole (shuffle, custom) splits (value, timestamp) pairs."""
        parts = self._timestamped_selector().split(list(zip(values, timestamps)))
        return [([p[0] for p in part], [p[1] for p in part]) for part in parts]

    def buffer_size(self) -> int:
        """The smallest buffer size its channels' consumers asked for (buffer debloating)."""
        return min(channel.buffer_size for channel in self.channels)

    def _timestamped_selector(self) -> Any:
        """The same rule applied to (value, timestamp) pairs: key selectors look at the value."""
        if self._pair_selector is None:
            spec = self.spec.partitioner
            if spec.key_selector is not None:
                key = getattr(spec.key_selector, "get_key", spec.key_selector)
                spec = dataclasses.replace(spec, key_selector=lambda pair: key(pair[0]))
            self._pair_selector = build_selector(
                spec, len(self.channels), self.spec.consumer_max_parallelism, check_key=self._check_key
            )
        return self._pair_selector

    def broadcast_event(self, event: Any) -> None:
        for channel in self.channels:
            channel.push_event(event)

    def broadcast_watermark(self, watermark: Watermark) -> None:
        self.broadcast_event(watermark)

    def writable(self) -> bool:
        for channel in self.channels:
            if not channel.writable():
                return False
        return True


_SPREADING = frozenset(
    (
        PartitionerKind.HASH,
        PartitionerKind.REBALANCE,
        PartitionerKind.RESCALE,
        PartitionerKind.SHUFFLE,
        PartitionerKind.CUSTOM,
    )
)


def partitioning_name(spec: PartitionerSpec) -> str:
    """How a failure of the edge's own user code is attributed: `key_by(<selector>)` or
    `partition_custom(<partitioner>)`, as the job was written."""
    if spec.kind is PartitionerKind.CUSTOM:
        return f"partition_custom({described(spec.custom_partitioner)})"
    if spec.key_selector is not None:
        return key_by_name(spec.key_selector)
    return spec.kind.name.lower()
