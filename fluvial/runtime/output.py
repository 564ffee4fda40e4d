"""Where an operator's results go: chained operators (a method call) and record writers (channels).

`collect` is bound once to the fastest callable for the fan-out at hand, so an operator emitting a buffer
pays one call, not a loop, in the common single-target case — plus one counting call per buffer when the
operator's `records_out` counter is given (its numRecordsOut, main and side outputs alike, as Flink's
CountingOutput counts). `current_watermark` is the last watermark it emitted (currentOutputWatermark).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fluvial.common.time import MIN_WATERMARK
from fluvial.datastream.output_tag import OutputTag
from fluvial.runtime.records import RecordBatch, Watermark, WatermarkStatus

BatchSink = Callable[[RecordBatch], None]


def _fan_out(targets: list[BatchSink]) -> BatchSink:
    if not targets:
        return lambda batch: None
    if len(targets) == 1:
        return targets[0]

    def collect_all(batch: RecordBatch) -> None:
        for target in targets:
            target(batch)

    return collect_all


def _counting(target: BatchSink, counter: Any) -> BatchSink:
    def collect_counted(batch: RecordBatch) -> None:
        counter.count += len(batch.values)
        target(batch)

    return collect_counted


class Output:
    """An operator's outputs: the main targets, targets per side-output tag, and watermark receivers."""

    def __init__(
        self,
        main: list[BatchSink],
        side: dict[OutputTag, list[BatchSink]],
        watermark_targets: list[Callable[[Watermark], None]],
        status_targets: list[Callable[[WatermarkStatus], None]] | None = None,
        records_out: Any = None,
    ) -> None:
        """`records_out`: a Counter (`.count`) of the records emitted; None counts nothing."""
        self._status_targets = status_targets or []
        self.collect: BatchSink = _fan_out(main)
        self._side = {tag: _fan_out(targets) for tag, targets in side.items()}
        if records_out is not None:
            self.collect = _counting(self.collect, records_out)
            self._side = {tag: _counting(target, records_out) for tag, target in self._side.items()}
        self._watermark_targets = watermark_targets
        self.current_watermark = MIN_WATERMARK

    def collect_side(self, tag: OutputTag, batch: RecordBatch) -> None:
        """Records for a tag nobody consumes are dropped, as in Flink."""
        target = self._side.get(tag)
        if target is not None:
            target(batch)

    def has_side(self, tag: OutputTag) -> bool:
        return tag in self._side

    def emit_watermark(self, watermark: Watermark) -> None:
        self.current_watermark = watermark.timestamp
        for target in self._watermark_targets:
            target(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        """Idleness goes to the record writers only: chained operators have a single input, whose status
        changes nothing for them."""
        for target in self._status_targets:
            target(status)


def split_side_outputs(
    results: list[Any], stamps: list[Any] | None = None
) -> tuple[RecordBatch, dict[OutputTag, RecordBatch]]:
    """PyFlink's convention: a yielded `(output_tag, value)` pair goes to that side output. Returns the main
    batch and one batch per tag, each keeping its records' timestamps (`stamps`, aligned with `results`)."""
    main = RecordBatch([], [] if stamps is not None else None)
    side: dict[OutputTag, RecordBatch] = {}
    for index, item in enumerate(results):
        if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
            batch = side.get(item[0])
            if batch is None:
                batch = side[item[0]] = RecordBatch([], [] if stamps is not None else None)
            item = item[1]
        else:
            batch = main
        batch.values.append(item)
        if stamps is not None:
            # every batch got a timestamps list above when there are stamps; narrowing it here would cost a
            # check per record
            batch.timestamps.append(stamps[index])  # type: ignore[union-attr]
    return main, side
