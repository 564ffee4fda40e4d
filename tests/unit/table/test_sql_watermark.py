"""SqlWatermarkGenerator: Flink's WatermarkAssignerOperator emits a watermark at once when a row moves it more
than the auto-watermark interval past the last one emitted, and the rest on the periodic tick."""

from __future__ import annotations

import datetime as dt

from fluvial.common.row import RowKind, _create_row
from fluvial.table.planner.rex import InputRef
from fluvial.table.runtime.windows import SqlWatermarkGenerator
from fluvial.table.types import DataTypes

EPOCH = dt.datetime(1970, 1, 1)


class Output:
    def __init__(self) -> None:
        self.emitted: list[int] = []

    def emit_watermark(self, watermark) -> None:
        self.emitted.append(watermark.timestamp)


def event(millis: int | None):
    stamp = None if millis is None else EPOCH + dt.timedelta(milliseconds=millis)
    return _create_row(["ts"], [stamp], RowKind.INSERT)


def test_a_jump_past_the_interval_is_emitted_at_once_small_steps_on_the_tick():
    generator = SqlWatermarkGenerator(InputRef(0, DataTypes.TIMESTAMP(3), "ts"), interval=200)
    out = Output()
    for millis in (1000, 1100, 1150, None, 1500, 1400):
        generator.on_event(event(millis), None, out)
    assert out.emitted == [1000, 1500]  # 1100 and 1150 are within 200 ms of 1000; NULL and 1400 change nothing
    generator.on_event(event(1600), None, out)
    generator.on_periodic_emit(out)
    generator.on_periodic_emit(out)  # nothing new: no repeat
    assert out.emitted == [1000, 1500, 1600]
