"""Timestamps and watermarks at a source subtask (DESIGN 2.4): one WatermarkGenerator per source split, the
subtask's watermark the minimum over its active splits, emitted downstream only when it advances.

Placement is exact: a watermark a generator emits while handling record i (per-event generators) goes out
after records 0..i of the buffer and before record i+1, so "late" means the same thing here as in Flink.
Generators that only emit periodically take a fast path: the buffer's maximum timestamp is folded in once.
Readers that read one split at a time say which via `current_split_id()`; when it changes, the previous split
is finished and no longer holds the watermark back. Readers whose splits interleave (Kafka's partitions) say so
(`interleaved`): each split then keeps its generator, and only its idleness releases the watermark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fluvial.common.time import MAX_WATERMARK, MIN_WATERMARK
from fluvial.common.watermark_strategy import WatermarkGeneratorContext, WatermarkOutput, checked_timestamp
from fluvial.runtime.records import RecordBatch, Watermark, WatermarkStatus


class SplitWatermarkOutput(WatermarkOutput):
    """What one split's generator has said: its highest watermark and whether it is idle."""

    __slots__ = ("watermark", "idle")

    def __init__(self) -> None:
        self.watermark = MIN_WATERMARK
        self.idle = False

    def emit_watermark(self, watermark: Any) -> None:
        timestamp = watermark.get_timestamp() if hasattr(watermark, "get_timestamp") else int(watermark)
        if timestamp > self.watermark:
            self.watermark = timestamp
        self.idle = False

    def mark_idle(self) -> None:
        self.idle = True

    def mark_active(self) -> None:
        self.idle = False


class SourceWatermarks:
    def __init__(
        self,
        strategy: Any,
        emit_watermark: Callable[[Watermark], None],
        emit_status: Callable[[WatermarkStatus], None],
        metric_group: Any = None,
        interleaved: bool = False,
    ) -> None:
        """`metric_group`: what a generator's context offers (`context.get_metric_group()`): the operator's.
        `interleaved`: the reader's splits take turns, so a split is never finished by another's records."""
        self._interleaved = interleaved
        self._strategy = strategy
        self._context = WatermarkGeneratorContext(metric_group=metric_group) if metric_group is not None else None
        self._assign = strategy.create_timestamp_assigner()
        self._emit_watermark = emit_watermark
        self._emit_status = emit_status
        self._splits: dict[Any, tuple[Any, SplitWatermarkOutput]] = {}
        self._current_split: Any = None
        self._emitted = MIN_WATERMARK
        self._idle = False

    def _split(self, split_id: Any) -> tuple[Any, SplitWatermarkOutput]:
        entry = self._splits.get(split_id)
        if entry is None:
            if self._current_split != split_id and (not self._interleaved or self._current_split is None):
                # sequential reader: that split is finished (or it was the placeholder of on_periodic_emit)
                self._splits.pop(self._current_split, None)
            entry = self._splits[split_id] = (
                self._strategy.create_watermark_generator(self._context),
                SplitWatermarkOutput(),
            )
        self._current_split = split_id
        return entry

    def timestamps_of(self, values: list[Any], previous: list[Any] | None = None) -> list[Any] | None:
        """The assigner's timestamps, given each record's previous timestamp (None at a source); without an
        assigner, records keep what they had."""
        assign = self._assign
        if assign is None:
            return previous
        if previous is None:
            stamps = [assign(value, None) for value in values]
        else:
            stamps = [assign(value, ts) for value, ts in zip(values, previous)]
        if not set(map(type, stamps)) <= {int}:  # one C-level pass; the slow path converts or explains
            stamps = [checked_timestamp(value, ts) for value, ts in zip(values, stamps)]
        return stamps

    def process(
        self,
        split_id: Any,
        values: list[Any],
        collect: Callable[[RecordBatch], None],
        previous_timestamps: list[Any] | None = None,
    ) -> None:
        timestamps = self.timestamps_of(values, previous_timestamps)
        generator, output = self._split(split_id)
        batch_max = getattr(generator, "on_batch_max", None)
        if batch_max is not None:
            if timestamps:
                batch_max(max(timestamps), output)
            self._refresh_status(output)
            collect(RecordBatch(values, timestamps))
            return
        stamps = timestamps if timestamps is not None else [None] * len(values)
        start = 0
        on_event = generator.on_event
        for index, (value, timestamp) in enumerate(zip(values, stamps)):
            before = output.watermark
            on_event(value, timestamp, output)
            if output.watermark != before and self._combined() > self._emitted:
                collect(
                    RecordBatch(
                        values[start : index + 1], None if timestamps is None else timestamps[start : index + 1]
                    )
                )
                start = index + 1
                self._refresh_status(output)  # ACTIVE before the watermark: idle channels ignore watermarks
                self._advance()
        if start < len(values):
            collect(RecordBatch(values[start:], None if timestamps is None else timestamps[start:]))
        self._refresh_status(output)

    def on_periodic_emit(self) -> None:
        if not self._splits and getattr(self._strategy, "idle_timeout_ms", None) is not None:
            # no record yet: still build the generator, so a source that never emits goes idle (as in Flink)
            self._split(self._current_split)
        for generator, output in list(self._splits.values()):
            generator.on_periodic_emit(output)
        self._update_idleness()  # ACTIVE goes before the watermark: idle channels ignore watermarks
        self._advance()

    def finish(self) -> None:
        """End of input: the final watermark, so every event-time timer downstream fires (as in Flink)."""
        if self._idle:
            self._idle = False
            self._emit_status(WatermarkStatus(idle=False))
        self._emitted = MAX_WATERMARK
        self._emit_watermark(Watermark(MAX_WATERMARK))

    def _combined(self) -> int:
        active = [output.watermark for _, output in self._splits.values() if not output.idle]
        return min(active) if active else MIN_WATERMARK

    def _advance(self) -> None:
        combined = self._combined()
        if combined > self._emitted:
            self._emitted = combined
            self._emit_watermark(Watermark(combined))

    def _refresh_status(self, output: SplitWatermarkOutput) -> None:
        if self._idle and not output.idle:
            self._idle = False
            self._emit_status(WatermarkStatus(idle=False))

    def _update_idleness(self) -> None:
        all_idle = bool(self._splits) and all(output.idle for _, output in self._splits.values())
        if all_idle != self._idle:
            self._idle = all_idle
            self._emit_status(WatermarkStatus(idle=all_idle))
